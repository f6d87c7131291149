/**
 * `vela bench`: producer, consumer and e2e runs against a broker, briefly (a second or two each):
 * the JSON summary adds up (every message sent is received in e2e, percentiles ordered), `--rate` is
 * honoured, `--create` makes the topic and group, and the live line is printed every second.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestBroker, uniqueName, type TestBroker } from '../support/harness.js';
import type { BenchSummary } from '../../src/bench/run.js';
import { LatencyHistogram } from '../../src/bench/latency.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

let b: TestBroker;
before(async () => {
  b = await startTestBroker();
});
after(async () => {
  await b.close();
});

function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, 'bench', ...args, '-n', b.endpoints, '--admin', b.adminUrl],
      { encoding: 'utf8', timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = (err as { code?: unknown } | null)?.code;
        resolve({ code: typeof code === 'number' ? code : err ? 1 : 0, stdout, stderr });
      },
    );
  });
}

const ordered = (l: { p50: number; p99: number; p999: number; max: number }) =>
  l.p50 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max;

test('e2e: every message sent is received, with end-to-end latencies and a live line', async () => {
  const topic = uniqueName('BenchT');
  const group = uniqueName('BenchG');
  const r = await bench([
    'e2e',
    '--create',
    '-t',
    topic,
    '-g',
    group,
    '-d',
    '2',
    '-w',
    '8',
    '-s',
    '256',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout) as BenchSummary;
  assert.equal(s.mode, 'e2e');
  assert.ok(s.sent > 0);
  assert.equal(s.errors, 0, s.firstError);
  assert.equal(s.received, s.sent);
  assert.ok(s.send && ordered(s.send) && s.send.p50 > 0);
  assert.ok(s.e2e && ordered(s.e2e) && s.e2e.p50 > 0);
  assert.ok(s.timeline.length >= 2);
  assert.equal(s.timeline.at(-1)!.sent, s.sent, 'the timeline ends with the totals');
  assert.match(r.stderr, /\d+s \| send \d+ msg\/s p50 [\d.]+ p99 [\d.]+ max [\d.]+ ms \| recv \d+ msg\/s/);
  assert.ok(b.running.broker.topics.get(topic), '--create made the topic');
  assert.ok(b.running.broker.groups.get(group), '--create made the group');
});

test('producer --rate holds the rate; consumer drains what is there', async () => {
  const topic = uniqueName('BenchRate');
  const r = await bench([
    'producer',
    '--create',
    '-t',
    topic,
    '-d',
    '2',
    '-w',
    '4',
    '-r',
    '100',
    '-k',
    '--json',
    '--no-progress',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '', 'no live line with --no-progress');
  const s = JSON.parse(r.stdout) as BenchSummary;
  // At most the rate allows (a busy machine may send fewer, never more; a stalled second is caught
  // up by at most one more second's worth).
  assert.ok(s.sent >= 20 && s.sent <= 100 * s.durationS + 10, `${s.sent} sent at 100/s in ${s.durationS} s`);
  assert.ok(
    s.timeline.every((t) => t.sendTps <= 210),
    JSON.stringify(s.timeline.map((t) => t.sendTps)),
  );
  assert.equal(s.e2e, undefined);

  const group = uniqueName('BenchDrain');
  await b.running.broker.groups.upsert(group, {});
  const c = await bench([
    'consumer',
    '-t',
    topic,
    '-g',
    group,
    '-d',
    '5',
    '--consumer',
    'simple',
    '-w',
    '2',
    '--json',
  ]);
  assert.equal(c.code, 0, c.stderr);
  const cs = JSON.parse(c.stdout) as BenchSummary;
  assert.equal(cs.received, s.sent);
  assert.equal(cs.send, undefined);
  assert.ok(cs.e2e && cs.e2e.max > 0);

  // The human summary.
  const h = await bench(['producer', '-t', topic, '-d', '1', '-w', '2', '--no-progress']);
  assert.equal(h.code, 0, h.stderr);
  assert.match(
    h.stdout,
    /^send: +\d+ messages, \d+ msg\/s .* p50 [\d.]+ +p99 [\d.]+ +p99\.9 [\d.]+ +max [\d.]+$/m,
  );
});

test('bad flags are usage errors', async () => {
  const r = await bench(['producer', '-w', '0']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /concurrency/);
});

test('latency percentiles are within 1 % of the exact ones', () => {
  const h = new LatencyHistogram();
  const values = Array.from({ length: 10_000 }, (_, i) => 0.05 + i * 0.01); // 0.05 … 100 ms
  for (const v of values) h.record(v);
  for (const q of [0.5, 0.99, 0.999]) {
    const exact = values[Math.ceil(q * values.length) - 1]!;
    const got = h.percentile(q);
    assert.ok(got >= exact && got <= exact * 1.0101, `p${q * 100}: ${got} vs ${exact}`);
  }
  assert.equal(h.maxMs, values.at(-1));
  assert.equal(h.count, values.length);
});
