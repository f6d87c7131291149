/**
 * The pure parts of `npm run bench:compare` (bench/compare): percentiles, ratios, the command line,
 * /proc parsing, the table, and the W3 pause breakdown. Nothing here is timed (one test holds the
 * event loop for 30 ms to see the pause log record it).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmtMs, fmtRatio, percentile, perMessage, ratio, summarize } from '../../bench/compare/stats.js';
import {
  brokerNodeFlags,
  parseArgs,
  parseTargets,
  workloadSizes,
  workloadsFor,
} from '../../bench/compare/options.js';
import { formatRssTrend, rssTrend } from '../../bench/compare/rss-trend.js';
import { recordResult, type CountedRounds } from '../../bench/compare/round-results.js';
import {
  BROKER_CONFIG_ENV,
  childBrokerSettings,
  compareSettings,
  parseCompareConfig,
} from '../../bench/compare/servers/child-settings.js';
import { descendants, parseMachineBusy, parseStat, treeUsage } from '../../bench/compare/proc-stat.js';
import {
  keptUp,
  medianRound,
  pausesText,
  renderPaired,
  renderPeerRounds,
  renderSpread,
  renderTable,
  renderWarmUp,
} from '../../bench/compare/table.js';
import {
  appendPauses,
  PauseLog,
  pauseBreakdown,
  readPauses,
  type Pause,
} from '../../bench/compare/pauses.js';
import {
  areaOf,
  busyRuns,
  compareSelfCosts,
  formatBusyRuns,
  formatSelfCosts,
  summarizeProfile,
  type CpuProfile,
} from '../../bench/compare/profile-summary.js';
import { summarizeIcLog } from '../../bench/compare/ic-summary.js';
import {
  formatHeapSummary,
  summarizeHeapProfile,
  type HeapProfile,
} from '../../bench/compare/heap-summary.js';
import type { CompareReport, WorkloadResult } from '../../bench/compare/types.js';

describe('bench:compare statistics', () => {
  test('nearest-rank percentiles', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1); // 1 … 100
    assert.equal(percentile(sorted, 50), 50);
    assert.equal(percentile(sorted, 99), 99);
    assert.equal(percentile(sorted, 100), 100);
    assert.equal(percentile(sorted, 0), 1);
    assert.equal(percentile([7], 99), 7);
    assert.equal(percentile([1, 2, 3], 50), 2);
    assert.equal(percentile([1, 2, 3, 4], 50), 2);
    assert.equal(percentile([], 50), undefined);
    assert.throws(() => percentile(sorted, 101), RangeError);
  });

  test('summarize sorts a copy numerically and reports p50 / p99 / max / mean', () => {
    const values = [10, 2, 1000, 3, 1];
    const s = summarize(values)!;
    assert.deepEqual(values, [10, 2, 1000, 3, 1], 'input untouched');
    assert.equal(s.count, 5);
    assert.equal(s.p50, 3); // numeric order, not string order ("1000" < "2")
    assert.equal(s.p99, 1000);
    assert.equal(s.max, 1000);
    assert.equal(s.mean, 203.2);
    assert.equal(summarize([]), undefined);
  });

  test('ratios are Vela ÷ peer and undefined without a usable peer figure', () => {
    assert.equal(ratio(7300, 63_800)?.toFixed(3), '0.114');
    assert.equal(ratio(30_000, 15_000), 2);
    assert.equal(ratio(1, 0), undefined);
    assert.equal(ratio(undefined, 5), undefined);
    assert.equal(ratio(5, undefined), undefined);
    assert.equal(ratio(Number.NaN, 5), undefined);
    assert.equal(perMessage(1_000_000, 10_000), 100);
    assert.equal(perMessage(5, 0), undefined);
  });

  test('formatting', () => {
    assert.equal(fmtRatio(0.114), '0.11×');
    assert.equal(fmtRatio(1.52), '1.5×');
    assert.equal(fmtRatio(23.6), '24×');
    assert.equal(fmtMs(0.214), '0.21');
    assert.equal(fmtMs(12.34), '12.3');
    assert.equal(fmtMs(1712.4), '1,712');
  });
});

describe('bench:compare command line', () => {
  test('defaults: every target and workload, full sizes', () => {
    const o = parseArgs([]);
    assert.deepEqual(o.targets, ['vela-sdk', 'vela-official', 'vela-remoting', 'rabbitmq', 'nats', 'redis']);
    assert.deepEqual(o.workloads, ['w1a', 'w1b', 'w2', 'w2pull', 'w3a', 'w3b']);
    assert.equal(o.quick, false);
    assert.equal(o.json, false);
    assert.equal(o.install, true);
    assert.equal(o.sizes.w1a.inflight, 1024);
    assert.equal(o.sizes.w1b.inflight, 1);
    assert.equal(o.sizes.w3a.rate, 5000);
    assert.equal(o.sizes.w3b.rate, 20_000);
    assert.deepEqual(o.nodeFlags, [], 'every process as users start it');
    assert.deepEqual(o.brokerFlags, [], 'the broker as users start it');
  });

  test("--broker-flags: Node/V8 flags for this checkout's broker only; only --flags", () => {
    const o = parseArgs([
      '--broker-flags',
      '--no-concurrent-marking  --single-threaded-gc',
      '--baseline',
      '/x',
    ]);
    assert.deepEqual(o.brokerFlags, ['--no-concurrent-marking', '--single-threaded-gc']);
    const both = parseArgs(['--node-flags', '--a', '--broker-flags', '--b', '--baseline', '/x']);
    assert.deepEqual(brokerNodeFlags(both, false), ['--a', '--b'], "this checkout's broker: both");
    assert.deepEqual(brokerNodeFlags(both, true), ['--a'], 'the baseline broker: --node-flags only');
    assert.deepEqual(o.nodeFlags, [], 'the clients keep their defaults');
    assert.deepEqual(parseArgs(['--broker-flags=--a=1']).brokerFlags, ['--a=1']);
    assert.throws(
      () => parseArgs(['--broker-flags', 'single-threaded-gc']),
      /--broker-flags: .* is not a --flag/,
    );
    assert.throws(() => parseArgs(['--broker-flags']), /--broker-flags needs a value/);
  });

  test('--node-flags: the same Node/V8 flags for the broker and every Node client; only --flags', () => {
    assert.deepEqual(
      parseArgs(['--node-flags', ' --initial-heap-size=256  --max-semi-space-size=8 ']).nodeFlags,
      ['--initial-heap-size=256', '--max-semi-space-size=8'],
    );
    assert.deepEqual(parseArgs(['--node-flags', '--initial-heap-size=256']).nodeFlags, [
      '--initial-heap-size=256',
    ]);
    assert.deepEqual(parseArgs(['--node-flags=--a=1 --b']).nodeFlags, ['--a=1', '--b']);
    assert.throws(() => parseArgs(['--node-flags', 'initial-heap-size=256']), /is not a --flag/);
  });

  test('--only, --skip and --workloads filter; "vela" means the Vela rows; order stays canonical', () => {
    assert.deepEqual(parseArgs(['--only', 'rabbitmq,vela']).targets, [
      'vela-sdk',
      'vela-official',
      'vela-remoting',
      'rabbitmq',
    ]);
    assert.deepEqual(parseArgs(['--only=nats']).targets, ['nats']);
    assert.deepEqual(parseArgs(['--skip', 'vela-official,vela-remoting,redis']).targets, [
      'vela-sdk',
      'rabbitmq',
      'nats',
    ]);
    assert.deepEqual(parseArgs(['--workloads', 'w3,w1a']).workloads, ['w1a', 'w3a', 'w3b']);
    assert.throws(() => parseTargets('kafka'), /unknown target "kafka"/);
    assert.throws(() => parseArgs(['--only', 'redis', '--skip', 'redis']), /no target left/);
    assert.throws(() => parseArgs(['--only']), /--only needs a value/);
    assert.throws(() => parseArgs(['--fast']), /unknown option "--fast"/);
    assert.throws(() => parseArgs(['--w3-seconds', '-1']), /bad value/);
    const files = parseArgs([
      '--json-file',
      'r.json',
      '--render=old.json',
      '--cpu-prof',
      'prof',
      '--ic-log',
      'ic',
      '--wait-idle',
      '30',
    ]);
    assert.equal(files.jsonFile, 'r.json');
    assert.equal(files.render, 'old.json');
    assert.equal(files.cpuProfDir, 'prof');
    assert.equal(files.icLogDir, 'ic');
    assert.equal(files.waitIdleSeconds, 30);
  });

  test('--quick is smaller; the W3 window sets W3 counts; only Vela SDK runs the pull consumer', () => {
    const full = workloadSizes(false);
    const quick = parseArgs(['--quick', '--json', '--no-install']);
    assert.ok(quick.quick && quick.json && !quick.install);
    for (const w of ['w1a', 'w1b', 'w2', 'w3a'] as const) {
      assert.ok(quick.sizes[w].count < full[w].count, w);
      assert.ok(quick.sizes[w].timeLimitMs < full[w].timeLimitMs, w);
    }
    const soak = workloadSizes(false, 600);
    assert.equal(soak.w3a.timeLimitMs, 600_000);
    assert.equal(soak.w3a.count, 3_000_000);
    const slower = parseArgs(['--w3-seconds', '600', '--w3-rate', '2000', '--rss-every', '10']);
    assert.equal(slower.sizes.w3a.rate, 2000);
    assert.equal(slower.sizes.w3a.count, 1_200_000);
    assert.equal(slower.sizes.w3b.rate, 20_000);
    assert.equal(slower.rssEverySeconds, 10);
    assert.equal(parseArgs([]).rssEverySeconds, 5);
    assert.throws(() => parseArgs(['--w3-rate', '0']), /bad value/);
    assert.throws(() => parseArgs(['--rss-every', 'x']), /bad value/);
    assert.deepEqual(workloadsFor('vela-sdk', ['w2', 'w2pull']), ['w2', 'w2pull']);
    assert.deepEqual(workloadsFor('rabbitmq', ['w2', 'w2pull']), ['w2']);
    assert.deepEqual(workloadsFor('vela-official', ['w2pull']), []);
    assert.deepEqual(workloadsFor('vela-remoting', ['w1a', 'w1b', 'w2', 'w2pull', 'w3a', 'w3b']), [
      'w1a',
      'w1b',
      'w2',
    ]);
  });

  test("VELA_COMPARE_CONFIG overrides the broker child's own settings, not where it listens", () => {
    // Sync flush unless asked: every Vela figure is measured with an fsync before each answer.
    assert.equal(childBrokerSettings('/data', {}).flush, 'sync');
    // The A/B of the flush policy: the setting must reach the broker (it was overridden to sync).
    const async = childBrokerSettings('/data', parseCompareConfig('{"flush":"async","shutdownGraceMs":50}'));
    assert.equal(async.flush, 'async');
    assert.equal(async.shutdownGraceMs, 50);
    const moved = childBrokerSettings(
      '/data',
      parseCompareConfig(
        '{"dataDir":"/elsewhere","host":"0.0.0.0","grpcPort":8081,"httpPort":1,"remotingPort":2}',
      ),
    );
    assert.deepEqual(
      [moved.dataDir, moved.host, moved.grpcPort, moved.httpPort, moved.remotingPort],
      ['/data', '127.0.0.1', 0, 0, 0],
    );
    assert.deepEqual(parseCompareConfig(undefined), {});
    assert.deepEqual(parseCompareConfig(''), {});
    assert.throws(() => parseCompareConfig('[1]'), /must be a JSON object/);
    assert.throws(() => parseCompareConfig('"sync"'), /must be a JSON object/);
  });

  test("--broker-config: this checkout's broker's settings, over VELA_COMPARE_CONFIG's", () => {
    assert.equal(parseArgs([]).brokerConfig, undefined);
    assert.equal(parseArgs(['--broker-config', '{"flush":"async"}']).brokerConfig, '{"flush":"async"}');
    assert.throws(() => parseArgs(['--broker-config', '[1]']), /--broker-config must be a JSON object/);
    assert.throws(() => parseArgs(['--broker-config', '{flush']), /--broker-config is not JSON/);
    assert.throws(
      () => compareSettings({ [BROKER_CONFIG_ENV]: '1' }),
      /VELA_COMPARE_BROKER_CONFIG must be a JSON object/,
    );
    // The child merges its own settings over the shared ones; a top-level key replaces theirs whole.
    const env = {
      VELA_COMPARE_CONFIG: '{"flush":"async","store":{"inlineWriteBytes":0},"consume":{"maxPushBatch":32}}',
      [BROKER_CONFIG_ENV]: '{"flush":"sync","consume":{"maxPushBatch":64}}',
    };
    assert.deepEqual(compareSettings(env), {
      flush: 'sync',
      store: { inlineWriteBytes: 0 },
      consume: { maxPushBatch: 64 },
    });
    assert.deepEqual(compareSettings({ VELA_COMPARE_CONFIG: '{"flush":"async"}' }), { flush: 'async' });
    assert.deepEqual(compareSettings({}), {});
  });
});

describe('bench:compare /proc parsing', () => {
  // A command name with spaces and parentheses, as /proc shows them.
  const line = (pid: number, ppid: number, utime: number, stime: number, rss: number, state = 'S') =>
    `${pid} (we (ird) name) ${state} ${ppid} ${pid} ${pid} 0 -1 4194560 100 0 0 0 ${utime} ${stime} 3 4 20 0 1 0 ` +
    `${5000 + pid} 123456 ${rss} 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0`;

  test('fields after a command name with spaces and parentheses', () => {
    const p = parseStat(line(42, 7, 150, 50, 2560));
    assert.equal(p.pid, 42);
    assert.equal(p.comm, 'we (ird) name');
    assert.equal(p.state, 'S');
    assert.equal(p.ppid, 7);
    assert.equal(p.utime, 150);
    assert.equal(p.stime, 50);
    assert.equal(p.cutime, 3);
    assert.equal(p.cstime, 4);
    assert.equal(p.starttime, 5042);
    assert.equal(p.rss, 2560);
    assert.throws(() => parseStat('garbage'), /not a \/proc stat line/);
  });

  test('a tree is the roots and their descendants; usage sums CPU and RSS', () => {
    const all = [
      parseStat(line(10, 1, 100, 0, 10)), // root
      parseStat(line(11, 10, 200, 100, 20)), // child
      parseStat(line(12, 11, 0, 0, 30)), // grandchild
      parseStat(line(20, 1, 999, 999, 999)), // unrelated
    ];
    assert.deepEqual(
      descendants(all, [10])
        .map((p) => p.pid)
        .sort(),
      [10, 11, 12],
    );
    assert.deepEqual(descendants(all, [99]), []);
    // ticks: (100+0+3+4) + (200+100+3+4) + (0+0+3+4) = 421 at 100 Hz → 4.21 s
    const u = treeUsage(descendants(all, [10]), 100, 4096);
    assert.equal(u.cpuUs, 4_210_000);
    assert.equal(u.rssBytes, 60 * 4096);
  });

  test('machine busy time from /proc/stat excludes idle and iowait', () => {
    const stat = 'cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n';
    assert.deepEqual(parseMachineBusy(stat), { busy: 161, total: 1181 });
    assert.throws(() => parseMachineBusy('intr 1 2 3'), /aggregate cpu line/);
  });
});

describe('bench:compare table', () => {
  const base = {
    failed: 0,
    timeLimited: false,
    serverRssPeak: 0,
    serverRssEnd: 0,
    otherCores: 0,
    monotonicUs: { begin: 0, end: 1 },
  };
  const result = (
    r: Partial<WorkloadResult> & Pick<WorkloadResult, 'target' | 'workload'>,
  ): WorkloadResult => ({
    ...base,
    ok: 100_000,
    seconds: 1,
    rate: 0,
    clientCpuUs: 1_000_000,
    serverCpuUs: 2_000_000,
    ...r,
  });
  const report = (results: WorkloadResult[]): CompareReport => ({
    command: 'npm run bench:compare',
    machine: {
      date: '2026-11-23 12:00 UTC',
      cores: 2,
      cpuModel: 'Test CPU',
      memoryGiB: 24,
      kernel: '6.1',
      node: 'v20.20.2',
      loadAverageAtStart: '0.10 0.10 0.10',
    },
    versions: { RabbitMQ: '3.10.8' },
    targets: ['vela-sdk', 'vela-official', 'rabbitmq'],
    workloads: ['w1a', 'w2', 'w2pull', 'w3a'],
    results,
    errors: [{ target: 'vela-official', workload: 'w2', error: 'server did not start' }],
    serverRssPeak: { 'vela-sdk': 200 * 1024 * 1024, rabbitmq: 100 * 1024 * 1024 },
    seconds: 300,
  });

  test('figures, Vela ÷ peer ratios (SDK / official), peers compared on W2 for W2-pull, notes', () => {
    const md = renderTable(
      report([
        result({ target: 'vela-sdk', workload: 'w1a', rate: 30_000 }),
        result({
          target: 'vela-official',
          workload: 'w1a',
          rate: 2500,
          failed: 1024,
          firstError: 'DEADLINE_EXCEEDED',
        }),
        result({ target: 'rabbitmq', workload: 'w1a', rate: 15_000 }),
        result({ target: 'vela-sdk', workload: 'w2', rate: 7300 }),
        result({ target: 'rabbitmq', workload: 'w2', rate: 63_800 }),
        result({ target: 'vela-sdk', workload: 'w2pull', rate: 127_600 }),
        result({
          target: 'vela-sdk',
          workload: 'w3a',
          rate: 4400,
          targetRate: 5000,
          sendRate: 5000,
          missing: 10,
          latency: { count: 1, p50: 1700, p99: 2900, max: 3000, mean: 1800 },
          clientGc: { count: 12, totalMs: 40, maxMs: 9.5 },
        }),
        result({
          target: 'rabbitmq',
          workload: 'w3a',
          rate: 5000,
          targetRate: 5000,
          sendRate: 5000,
          missing: 0,
          latency: { count: 1, p50: 1.9, p99: 5, max: 215, mean: 2 },
          clientGc: { count: 4, totalMs: 10, maxMs: 3 },
        }),
      ]),
    );
    const row = (label: string) => md.split('\n').find((l) => l.startsWith(`| ${label}`)) ?? '';
    assert.match(md, /on 2 cores \(Test CPU\)/);
    assert.match(md, /Command: `npm run bench:compare`/);
    assert.match(row('W1a produce'), /\| 30,000 \| 2,500 \[1\] \| 15,000 \| 2\.0× \/ 0\.17× \|$/);
    assert.match(
      md,
      /\[1\] Vela \+ rocketmq-client-nodejs, w1a: 1,024 of 101,024 failed \(first error: DEADLINE_EXCEEDED\)/,
    );
    // CPU per message: 2 s / 100,000 = 20 µs broker, 10 µs client.
    assert.match(row('W1a broker CPU'), /\| 20\.0 \| 20\.0 \[1\] \| 20\.0 \| 1\.0× \/ 1\.0× \|$/);
    assert.match(row('W2 consume'), /\| 7,300 \| error \[2\] \| 63,800 \| 0\.11× \/ – \|$/);
    assert.match(md, /\[2\] Vela \+ rocketmq-client-nodejs, w2: server did not start/);
    // The pull consumer is compared with the peer's W2; the peer's figure is shown in parentheses.
    assert.match(row('W2-pull (Vela'), /\| 127,600 \| – \| \(63,800\) \| 2\.0× \/ – \|$/);
    // A W3 that fell behind: latencies are lower bounds, with a note.
    assert.match(row('W3 at 5,000 msgs/s: p99'), /\| ≥ 2,900 \[3\] \| – \| 5\.00 \| ≥ 580× \/ – \|$/);
    assert.match(
      md,
      /did not keep up with 5,000 msgs\/s: sent 5,000\/s, consumed 4,400\/s, 10 sent messages/,
    );
    assert.match(row('broker peak RSS'), /\| 200 \| – \| 100 \| 2\.0× \/ – \|$/);
    // The client's own collections in the window (1 s here): what a W3 tail is often made of.
    assert.match(
      row('W3 at 5,000 msgs/s: client GC pauses'),
      /\| 40\.0 \[3\] \| – \| 10\.0 \| 4\.0× \/ – \|$/,
    );
    assert.match(
      row('W3 at 5,000 msgs/s: longest client GC pause'),
      /\| 9\.50 \[3\] \| – \| 3\.00 \| 3\.2× \/ – \|$/,
    );
  });

  test('--repeat: the median round by rate (by p99 for W3, the worse middle one), the spread under the table', () => {
    const rounds = [41_000, 29_000, 35_000].map((rate, i) => ({
      ...result({ target: 'vela-sdk', workload: 'w2', rate }),
      round: i + 1,
    }));
    assert.equal(medianRound(rounds).rate, 35_000);
    assert.equal(medianRound(rounds.slice(0, 2)).rate, 29_000, 'two rounds: the slower one');
    const w3 = [30, 90, 50, 10].map((p99, i) => ({
      ...result({
        target: 'vela-sdk',
        workload: 'w3a',
        rate: 5000,
        latency: { count: 1, p50: 1, p99, max: p99, mean: 1 },
      }),
      round: i + 1,
    }));
    assert.equal(medianRound(w3).latency!.p99, 50, 'of 90 / 50 / 30 / 10 ms, the worse middle one');
    assert.throws(() => medianRound([]), RangeError);

    const r = report([medianRound(rounds), medianRound(w3)]);
    r.rounds = [...rounds, ...w3];
    r.errors.push({ target: 'vela-sdk', workload: 'w2', error: 'client crashed' });
    const md = renderTable(r);
    assert.match(md, /the median of 4 rounds/);
    assert.match(md, /- Vela \+ Vela SDK, w2: 29,000 \/ 35,000 \/ 41,000 msgs\/s; 1 more round failed/);
    assert.match(md, /- Vela \+ Vela SDK, w3a: 90\.0 ms \/ 50\.0 ms \/ 30\.0 ms \/ 10\.0 ms p99/);
    assert.deepEqual(renderSpread(report([])), [], 'one round: nothing to add');
    assert.equal(parseArgs(['--repeat', '3']).repeat, 3);
    assert.equal(parseArgs([]).repeat, 1);
    assert.throws(() => parseArgs(['--repeat', '0']), /--repeat: bad value/);
  });

  test("--baseline: each figure divided by the baseline broker's in the same round, per round and the median", () => {
    const mk = (round: number, rate: number, serverCpuUs: number, p99?: number) => ({
      ...result({
        target: 'vela-sdk',
        workload: p99 === undefined ? 'w2' : 'w3a',
        rate,
        ok: 100_000,
        serverCpuUs,
        clientCpuUs: 1_000_000,
        ...(p99 !== undefined ? { latency: { count: 1, p50: p99 / 10, p99, max: p99, mean: 1 } } : {}),
      }),
      round,
    });
    const mine = [
      mk(1, 44_000, 1_800_000),
      mk(2, 36_000, 2_000_000),
      mk(1, 5000, 14_000_000, 30),
      mk(2, 5000, 15_000_000, 60),
    ];
    const r = report(mine);
    r.rounds = mine;
    assert.deepEqual(renderPaired(r), [], 'no baseline: nothing to add');
    r.baseline = {
      dir: '/work/wt/base',
      revision: '0.1.0 (0cda512)',
      // Round 2 of W2 ran on a slower machine for both: the ratio stays near the first round's.
      rounds: [
        mk(1, 40_000, 2_000_000),
        mk(2, 32_000, 2_200_000),
        mk(1, 5000, 15_000_000, 40),
        mk(2, 5000, 15_000_000, 50),
      ],
    };
    const lines = renderPaired(r);
    assert.match(lines[0]!, /\/work\/wt\/base, 0\.1\.0 \(0cda512\)/);
    assert.equal(
      lines[1],
      '- Vela + Vela SDK, w2: msgs/s 1.11 (1.10 / 1.13); broker µs/msg 0.90 (0.90 / 0.91); client µs/msg 1.00 (1.00 / 1.00)',
    );
    assert.equal(
      lines[2],
      '- Vela + Vela SDK, w3a: p50 0.97 (0.75 / 1.20); p99 0.97 (0.75 / 1.20); broker µs/msg 0.97 (0.93 / 1.00); client µs/msg 1.00 (1.00 / 1.00)',
    );
    assert.match(renderTable(r), /This checkout's broker ÷ the baseline's/);
    assert.equal(parseArgs(['--only', 'vela-sdk', '--baseline', '/tmp/b']).baselineDir, '/tmp/b');
    // One broker process per target unless each round is to sample new ones.
    assert.equal(parseArgs([]).freshBrokers, false);
    assert.equal(parseArgs(['--fresh-brokers', '--repeat', '4']).freshBrokers, true);
    // Vela as users run it (dist/) unless asked for the sources; the table says which.
    assert.equal(parseArgs([]).from, 'dist');
    assert.equal(parseArgs(['--from', 'src']).from, 'src');
    assert.throws(() => parseArgs(['--from', 'lib']), /--from: "lib" is neither dist nor src/);
    r.velaFrom = 'src';
    assert.match(renderTable(r), /Vela ran from its TypeScript sources \(tsx\), not the compiled dist\//);
    r.velaFrom = 'dist';
    assert.match(renderTable(r), /Vela ran from the compiled dist\//);
    assert.throws(() => parseArgs(['--only', 'rabbitmq', '--baseline', '/tmp/b']), /select a Vela target/);
  });

  test("--interleave: each Vela figure divided by each peer's in the same round, the median and each round's", () => {
    const mk = (target: 'vela-sdk' | 'rabbitmq', round: number, rate: number, p99?: number) => ({
      ...result({
        target,
        workload: p99 === undefined ? 'w2' : 'w3a',
        rate,
        ...(p99 !== undefined ? { latency: { count: 1, p50: p99 / 10, p99, max: p99, mean: 1 } } : {}),
      }),
      round,
    });
    // Round 2 ran in a slow spell for both; round 3's peer failed (no pair).
    const rounds = [
      mk('vela-sdk', 1, 150_000),
      mk('vela-sdk', 2, 120_000),
      mk('vela-sdk', 3, 160_000),
      mk('vela-sdk', 1, 5000, 4),
      mk('vela-sdk', 2, 5000, 3),
      mk('rabbitmq', 1, 100_000),
      mk('rabbitmq', 2, 75_000),
      mk('rabbitmq', 1, 5000, 8),
      mk('rabbitmq', 2, 5000, 12),
    ];
    const r = report([]);
    r.rounds = rounds;
    assert.deepEqual(renderPeerRounds(r), [], 'rounds that did not interleave are not paired across targets');
    r.interleaved = true;
    const lines = renderPeerRounds(r);
    assert.match(lines[0]!, /round by round/);
    assert.deepEqual(lines.slice(1), [
      '- w2 msgs/s, Vela + Vela SDK ÷ RabbitMQ quorum + amqplib: 1.55 (1.50 / 1.60)',
      '- w3a p99, Vela + Vela SDK ÷ RabbitMQ quorum + amqplib: 0.38 (0.50 / 0.25)',
    ]);
    assert.match(renderTable(r), /Vela ÷ each peer round by round/);
    assert.equal(parseArgs([]).interleave, false);
    assert.equal(parseArgs(['--interleave', '--repeat', '3']).interleave, true);
    // Interleaved, the idle servers may still be busy with their last round: wait for them.
    assert.equal(parseArgs(['--interleave']).waitIdleSeconds, 60);
    assert.equal(parseArgs(['--interleave', '--wait-idle', '0']).waitIdleSeconds, 0);
    assert.equal(parseArgs([]).waitIdleSeconds, 0);
  });

  test('--warm-up-round: round 0 is shown under the table and counted in no figure', () => {
    const counted = [
      { ...result({ target: 'vela-sdk', workload: 'w2', rate: 150_000 }), round: 1 },
      { ...result({ target: 'vela-sdk', workload: 'w2', rate: 160_000 }), round: 2 },
      { ...result({ target: 'rabbitmq', workload: 'w2', rate: 100_000 }), round: 1 },
      { ...result({ target: 'rabbitmq', workload: 'w2', rate: 100_000 }), round: 2 },
    ];
    const r = report([
      result({ target: 'vela-sdk', workload: 'w2', rate: 150_000 }),
      result({ target: 'rabbitmq', workload: 'w2', rate: 100_000 }),
    ]);
    r.rounds = counted;
    r.interleaved = true;
    assert.deepEqual(renderWarmUp(r), [], 'no warm-up round, no lines');
    r.warmUp = [
      result({ target: 'vela-sdk', workload: 'w2', rate: 40_000, serverCpuUs: 700_000 }),
      result({
        target: 'rabbitmq',
        workload: 'w3a',
        rate: 5000,
        latency: { count: 1, p50: 1, p99: 9.5, max: 10, mean: 1 },
      }),
    ];
    assert.deepEqual(renderWarmUp(r), [
      'The warm-up round (round 0, on the same servers before round 1; in no figure above):',
      '- Vela + Vela SDK, w2: 40,000 msgs/s; CPU/msg server 7.0 µs',
      '- RabbitMQ quorum + amqplib, w3a: p99 9.50 ms at 5,000 msgs/s; CPU/msg server 20.0 µs',
    ]);
    const table = renderTable(r);
    assert.match(table, /The warm-up round \(round 0/);
    // The slow warm-up round is in neither the spread nor the per-round ratios.
    assert.match(table, /- Vela \+ Vela SDK, w2: 150,000 \/ 160,000 msgs\/s/);
    assert.match(
      table,
      /w2 msgs\/s, Vela \+ Vela SDK ÷ RabbitMQ quorum \+ amqplib: 1\.55 \(1\.50 \/ 1\.60\)/,
    );
    // Filing: round 0 goes to the warm-up list only (the baseline's nowhere), later rounds are counted.
    const filed: CountedRounds = new Map();
    const rep = report([]);
    rep.baseline = { dir: '/tmp/b', revision: 'x', rounds: [] };
    const w2 = (rate: number) => result({ target: 'vela-sdk', workload: 'w2', rate });
    assert.equal(recordResult(filed, rep, w2(40_000), 0, false), 'warm-up');
    assert.equal(recordResult(filed, rep, w2(41_000), 0, true), 'warm-up');
    assert.equal(recordResult(filed, rep, w2(150_000), 1, false), 'counted');
    assert.equal(recordResult(filed, rep, w2(151_000), 1, true), 'baseline');
    assert.deepEqual(
      rep.warmUp?.map((x) => x.rate),
      [40_000],
    );
    assert.deepEqual(
      filed.get('w2')?.map((x) => [x.round, x.rate]),
      [[1, 150_000]],
    );
    assert.deepEqual(
      rep.baseline.rounds.map((x) => [x.round, x.rate]),
      [[1, 151_000]],
    );
    assert.equal(parseArgs([]).warmUpRound, false);
    assert.equal(parseArgs(['--warm-up-round', '--repeat', '3', '--interleave']).warmUpRound, true);
    assert.throws(
      () => parseArgs(['--warm-up-round', '--fresh-brokers', '--repeat', '2']),
      /--warm-up-round warms the servers that --fresh-brokers replaces/,
    );
  });

  test('keptUp: everything arrived and ≥ 95 % of the asked rate was sent and consumed', () => {
    const w3 = (rate: number, sendRate: number, missing: number) =>
      result({ target: 'nats', workload: 'w3b', rate, sendRate, missing, targetRate: 20_000 });
    assert.equal(keptUp(w3(19_900, 20_000, 0)), true);
    assert.equal(keptUp(w3(18_000, 20_000, 0)), false);
    assert.equal(keptUp(w3(19_900, 15_000, 0)), false);
    assert.equal(keptUp(w3(19_900, 20_000, 1)), false);
    assert.equal(keptUp(result({ target: 'nats', workload: 'w1a' })), true);
  });
});

describe('bench:compare profile summary', () => {
  const frame = (id: number, functionName: string, url: string) => ({
    id,
    callFrame: { functionName, url, lineNumber: 9 },
  });
  // Samples every 1,000 µs from t = 10,000: idle, GC, grpc-js, GC, Vela's broker, idle.
  const profile: CpuProfile = {
    startTime: 10_000,
    nodes: [
      frame(1, '(idle)', ''),
      frame(2, '(garbage collector)', ''),
      frame(3, 'write', 'file:///x/node_modules/@grpc/grpc-js/build/src/server.js'),
      frame(4, 'ack', 'file:///x/src/broker/consume/consume-service.ts'),
    ],
    samples: [1, 2, 3, 2, 4, 1],
    timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000],
  };

  test('self time by area and function, as shares of the busy time', () => {
    const s = summarizeProfile(profile);
    assert.equal(s.busyMs, 4);
    assert.equal(s.idleMs, 2);
    assert.deepEqual(
      s.areas.map((a) => [a.name, a.percent]),
      [
        ['GC', 50],
        ['@grpc/grpc-js', 25],
        ['vela src/broker', 25],
      ],
    );
    assert.equal(s.functions[0]!.name, '(garbage collector)');
    assert.ok(s.functions.some((f) => f.name === 'ack src/broker/consume/consume-service.ts:10'));
  });

  test('a window keeps only the samples taken within it', () => {
    // Samples land at 11,000 … 16,000; keep 13,000–15,000: grpc-js, GC, broker.
    const s = summarizeProfile(profile, 10, { begin: 13_000, end: 15_000 });
    assert.equal(s.busyMs, 3);
    assert.equal(s.idleMs, 0);
  });

  test('busy runs: stretches between idle samples, by length, the longest with their stacks', () => {
    // root → [idle, tick → (ack, read)]; samples every 1 ms: tick>ack ×3, idle, tick>read, idle, ack ×2.
    const tree: CpuProfile = {
      startTime: 0,
      nodes: [
        { ...frame(1, '(root)', ''), children: [2, 3] },
        frame(2, '(idle)', ''),
        { ...frame(3, 'processTicks', 'node:internal/process/task_queues'), children: [4, 5] },
        frame(4, 'ack', 'file:///x/src/broker/consume/ack.ts'),
        frame(5, 'read', 'file:///x/src/store/message-store.ts'),
      ],
      samples: [4, 4, 4, 2, 5, 2, 4, 4],
      timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
    };
    const b = busyRuns(tree, undefined, 2);
    assert.deepEqual(
      b.buckets.filter((x) => x.runs > 0).map((x) => [x.underMs, x.runs, x.ms]),
      [
        [2, 1, 1], // the lone read
        [5, 2, 5], // three acks, then two
      ],
    );
    assert.equal(b.longest[0]!.ms, 3);
    assert.equal(b.longest[0]!.atMs, 1, 'began with the first sample, 1 ms in');
    assert.deepEqual(b.longest[0]!.stacks, [
      {
        stack: 'processTicks node:internal/process/task_queues:10 > ack src/broker/consume/ack.ts:10',
        ms: 3,
      },
    ]);
    assert.equal(b.longest[1]!.ms, 2);
    assert.match(formatBusyRuns(b), /2–5 ms +2 runs +5 ms/);
  });

  test('self costs per unit of work in two profiles, largest differences first', () => {
    // The first: 4 busy ms over 2 units (GC 1, grpc-js 0.5, broker 0.5 µs… per unit in ms here).
    const other: CpuProfile = {
      startTime: 0,
      nodes: [
        frame(2, '(garbage collector)', ''),
        frame(3, 'write', 'file:///x/node_modules/@grpc/grpc-js/build/src/server.js'),
      ],
      samples: [2, 3, 3, 3],
      timeDeltas: [1000, 1000, 1000, 1000],
    };
    const c = compareSelfCosts({ profile, units: 2 }, { profile: other, units: 4 });
    assert.equal(c.totalA, 2000, '4,000 busy µs over 2 units');
    assert.equal(c.totalB, 1000);
    const rows = Object.fromEntries(c.rows.map((r) => [r.name, [r.a, r.b]]));
    assert.deepEqual(rows['(garbage collector)'], [1000, 250]);
    assert.deepEqual(rows['ack src/broker/consume/consume-service.ts:10'], [500, 0]);
    assert.deepEqual(rows['write node_modules/@grpc/grpc-js/build/src/server.js:10'], [500, 750]);
    assert.equal(c.rows[0]!.name, '(garbage collector)', 'the largest extra cost first');
    assert.equal(c.rows.at(-1)!.name, 'write node_modules/@grpc/grpc-js/build/src/server.js:10');
    assert.match(formatSelfCosts(c, 5), /first 2000\.00, other 1000\.00/);
  });

  test('areas', () => {
    assert.equal(areaOf('node:internal/http2/core', 'x'), 'node:http2');
    assert.equal(areaOf('file:///a/node_modules/protobufjs/src/writer.js', 'x'), 'protobufjs');
    assert.equal(areaOf('file:///a/src/store/message-store.ts', 'x'), 'vela src/store');
    assert.equal(
      areaOf('file:///a/dist/store/message-store.js', 'x'),
      'vela src/store',
      'dist/ mirrors src/',
    );
    assert.equal(areaOf('', '(program)'), 'V8 / native (program)');
    assert.equal(areaOf('', 'writeBuffers'), 'native: writeBuffers');
  });
});

describe('bench:compare heap sample summary', () => {
  const at = (functionName: string, url: string, selfSize: number, children: unknown[] = []) => ({
    callFrame: { functionName, url, lineNumber: 9 },
    selfSize,
    children,
  });
  // (root) → tick → [deliver (300) → add (500), read (200)]; (V8 API) 100.
  const profile = {
    head: at('(root)', '', 0, [
      at('tick', 'node:internal/process/task_queues', 0, [
        at('deliver', 'file:///x/src/broker/consume/pop.ts', 300, [
          at('add', 'file:///x/src/broker/delivery-history.ts', 500),
        ]),
        at('read', 'file:///x/node_modules/lib/src/read.js', 200),
      ]),
      at('(V8 API)', '', 100),
    ]),
  } as HeapProfile;

  test('sampled bytes by allocating function and by its callers', () => {
    const s = summarizeHeapProfile(profile);
    assert.equal(s.totalBytes, 1100);
    assert.deepEqual(
      s.sites.map((x) => [x.name, x.bytes]),
      [
        ['add src/broker/delivery-history.ts:10', 500],
        ['deliver src/broker/consume/pop.ts:10', 300],
        ['read node_modules/lib/src/read.js:10', 200],
        ['(V8 API)', 100],
      ],
    );
    assert.equal(
      s.stacks[0]!.name,
      'tick node:internal/process/task_queues:10 > deliver src/broker/consume/pop.ts:10 > add src/broker/delivery-history.ts:10',
    );
    assert.ok(Math.abs(s.sites[0]!.percent - (100 * 500) / 1100) < 1e-9);
    assert.match(formatHeapSummary(summarizeHeapProfile(profile, 1)), /sampled 0\.0 MiB[\s\S]*45\.5 %/);
    assert.equal(parseArgs(['--heap-sample', 'h']).heapSampleDir, 'h');
  });
});

describe('bench:compare RSS trend', () => {
  const MIB = 1024 * 1024;
  test('flat, growing and settling series', () => {
    const flat = rssTrend([0, 1, 2, 3].map((i) => ({ atMs: i * 5000, bytes: 200 * MIB })))!;
    assert.equal(flat.slopeMiBPerMin, 0);
    assert.equal(flat.minBytes, 200 * MIB);
    // 1 MiB every 5 s = 12 MiB per minute.
    const growing = rssTrend([0, 1, 2, 3, 4].map((i) => ({ atMs: i * 5000, bytes: (100 + i) * MIB })))!;
    assert.ok(Math.abs(growing.slopeMiBPerMin! - 12) < 1e-9);
    assert.equal(growing.firstBytes, 100 * MIB);
    assert.equal(growing.lastBytes, 104 * MIB);
    assert.equal(growing.maxBytes, 104 * MIB);
    // Warm-up growth, then flat: the second half says flat.
    const settling = rssTrend(
      [100, 150, 180, 180, 180, 180, 180].map((m, i) => ({ atMs: i * 10_000, bytes: m * MIB })),
    )!;
    assert.ok(settling.slopeMiBPerMin! > 0);
    assert.equal(settling.secondHalfSlopeMiBPerMin, 0);
    assert.match(
      formatRssTrend(settling),
      /100–180 MiB \(first 100, last 180\), slope \+[0-9.]+ MiB\/min, second half \+0\.00/,
    );
    assert.match(formatRssTrend(settling), /^server RSS over 7 samples: /);
    assert.match(formatRssTrend(settling, 'server heap used'), /^server heap used over 7 samples: /);
    assert.equal(rssTrend([]), null);
    assert.equal(rssTrend([{ atMs: 0, bytes: MIB }])!.slopeMiBPerMin, null);
  });
});

describe('bench:compare inline-cache log summary', () => {
  test('counts misses per site, names the function by address, and skips the early part', async () => {
    const log = [
      'v8-version,11,3,244,8,-node.38,0',
      'code-creation,JS,10,100,0x1000,0x200,prepare file:///work/vela/src/broker/produce.ts:1:4000,0xabc,~',
      'code-creation,JS,10,110,0x2000,0x100,encode file:///work/vela/src/store/record-codec.ts:1:900,0xdef,*',
      // warm-up: one miss of `body` early in the log
      'LoadIC,0x1010,150,1,4917,0,1,0x11,body,,',
      'LoadIC,0x1010,900,1,4917,N,N,0x12,messageId,,',
      'LoadIC,0x1010,950,1,4917,N,N,0x13,messageId,,',
      'LoadIC,0x1010,990,1,4917,N,N,0x14,messageId,,',
      "StoreIC,0x2050,960,1,1000,N,N,0x15,queueId,,LookupForWrite said 'false'",
      'LoadIC,0x9999,970,3,3,1,P,0x16,unknown,,',
      'tick,0x1010,1000,0,0,0',
    ];
    const all = await summarizeIcLog(log);
    assert.deepEqual(all[0], {
      misses: 3,
      site: 'LoadIC messageId prepare src/broker/produce.ts:1:4000 @1:4917 N->N',
    });
    assert.ok(
      all.some((s) => s.site === 'StoreIC queueId encode src/store/record-codec.ts:1:900 @1:1000 N->N'),
    );
    assert.ok(all.some((s) => s.site.startsWith('LoadIC unknown ? ')));
    assert.ok(all.some((s) => s.site.startsWith('LoadIC body prepare')));
    const late = await summarizeIcLog(log, 0.5);
    assert.ok(!late.some((s) => s.site.startsWith('LoadIC body')), 'the first half is skipped');
    assert.equal(late[0]!.misses, 3);
  });
});

describe('bench:compare W3 pauses (--w3-pauses)', () => {
  const gc = (at: number, ms: number): Pause => ({ at, ms, kind: 'gc' });
  const stall = (at: number, ms: number): Pause => ({ at, ms, kind: 'stall' });

  test('slow messages counted by whose pauses overlapped their trip; fast ones not at all', () => {
    // (sent at, latency) pairs: two fast, then slow ones at 100, 200, 300 and 400.
    const trips = [0, 1, 10, 4.9, 100, 8, 200, 8, 300, 8, 400, 8];
    const client = [gc(103, 2), stall(305, 6)];
    const broker = [stall(190, 12), gc(290, 11.5)];
    const b = pauseBreakdown(trips, client, broker, { from: 0, to: 1000 });
    assert.equal(b.messages, 6);
    assert.equal(b.slow, 4);
    // 100–108: the client's GC at 103; 200–208: the broker's stall 190–202; 300–308: both; 400: neither.
    assert.deepEqual([b.clientOnly, b.brokerOnly, b.both, b.neither], [1, 1, 1, 1]);
    // Pause time in the window, overlaps once: the client 2 + 6 ms, the broker 12 + 11.5 ms.
    assert.deepEqual(b.client, { ms: 8, gcMs: 2 });
    assert.deepEqual(b.broker, { ms: 23.5, gcMs: 11.5 });
    // A pause that ended before the trip began, or began after it arrived, does not count.
    const edge = pauseBreakdown([50, 6], [gc(40, 9.9), gc(56.1, 1)], [], { from: 0, to: 100 });
    assert.deepEqual([edge.clientOnly, edge.neither], [0, 1]);
  });

  test('a long pause found among many short ones; time counted once where pauses overlap; window bounds', () => {
    const many = Array.from({ length: 200 }, (_, i) => stall(i * 10, 1));
    const b = pauseBreakdown([995, 20], [gc(500, 600), ...many], null, { from: 0, to: 1000 });
    assert.equal(b.clientOnly, 1, 'the 500–1,100 ms collection covers the trip at 995');
    assert.equal(b.broker, null, 'a server whose pauses are not recorded');
    // 500–1,000 from the collection (cut at the window's end), plus the stalls before 500: 50 × 1 ms.
    assert.equal(b.client.ms, 550);
    assert.equal(b.client.gcMs, 500);
  });

  test("the broker child's file: written as it goes, read back; no file means not recorded", () => {
    const dir = mkdtempSync(join(tmpdir(), 'vela-pauses-'));
    try {
      const file = join(dir, 'pauses.log');
      assert.equal(readPauses(file), null);
      appendPauses(file, [gc(1_700_000_000_000.125, 3.5)]);
      appendPauses(file, []);
      appendPauses(file, [stall(1_700_000_000_010, 12)]);
      assert.deepEqual(readPauses(file), [gc(1_700_000_000_000.125, 3.5), stall(1_700_000_000_010, 12)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the log catches an event loop held for 30 ms as a stall', async () => {
    const log = new PauseLog().start();
    await new Promise((r) => setTimeout(r, 5));
    const t = performance.now();
    while (performance.now() - t < 30) {
      // hold the loop
    }
    await new Promise((r) => setTimeout(r, 5));
    const stalls = log.stop().filter((p) => p.kind === 'stall');
    assert.ok(
      stalls.some((p) => p.ms >= 25),
      `stalls: ${stalls.map((p) => p.ms.toFixed(1)).join(', ')}`,
    );
    assert.deepEqual(log.stop(), [], 'stopped: nothing more is recorded');
  });

  test('--w3-pauses on the command line; the lines under the table', () => {
    assert.equal(parseArgs([]).w3Pauses, false);
    assert.equal(parseArgs(['--w3-pauses']).w3Pauses, true);
    const withBroker = pausesText(
      pauseBreakdown([0, 8, 10, 8, 20, 1], [gc(1, 1)], [stall(12, 5)], { from: 0, to: 100 }),
    );
    assert.equal(
      withBroker,
      '2 of 3 (67 %) slower than 5.00 ms: during a pause of the client only 50 %, the broker only 50 %, ' +
        'both 0 %, neither 0 %; pauses in the window: client 1 ms (GC 1), broker 5 ms (GC 0)',
    );
    assert.match(
      pausesText(pauseBreakdown([0, 8], [], null, { from: 0, to: 100 })),
      /during a client pause 0 %, not 100 % \(the server's pauses are not recorded\)/,
    );
  });
});
