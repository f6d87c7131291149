/**
 * Timer benchmark (not a test): `npm run bench:timer` (`-- --quick` for a tenth of the sizes).
 *
 * A. 1,000,000 delay messages (256 B) scheduled over the next hour through the gRPC endpoint of a
 *    broker in a child process (sync flush): send rate, and the broker's RSS (target < 300 MB: the
 *    schedule lives on disk; only the slabs about to fall due are in memory).
 * B. Recovery: the broker is killed (SIGKILL) with them scheduled and started again: time until it
 *    serves, and the timer's own share of it (re-indexing and reading the slab summaries).
 * C. Lateness at 5,000 messages due per second for 20 s (with the hour's schedule still waiting
 *    behind them): for each message, when it was stored in its topic (its store timestamp) and when a
 *    consumer long-polling the topic's queue (PullMessage at its tail) got it, relative to its
 *    delivery time: p50 / p99 / max.
 * D. The same lateness in-process (a broker opened in this process, no gRPC, no consumer): 50,000
 *    due at 5,000/s, and how late the event loop ran meanwhile.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Broker, storeOf } from '../src/broker/broker.js';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchClient, admin, startBrokerChild, stopChild } from './bench-client.js';
import { fromMillis, toMillis } from '../src/protocol/codec.js';

const ROOT = join(fileURLToPath(new URL('..', import.meta.url)), '.bench-data', 'timer');
const quick = process.argv.includes('--quick');
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const MiB = 1024 * 1024;
const report = (k: string, v: string) => console.log(`${k.padEnd(64)} ${v}`);
const BODY = Buffer.alloc(256, 0x61);
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

let seq = 0;
async function sendDelayed(c: BenchClient, topic: string, dues: number[]): Promise<void> {
  const r = await c.call('SendMessage', {
    messages: dues.map((due) => ({
      topic: { name: topic },
      body: BODY,
      system_properties: {
        message_id: `TIMER${(seq++).toString(16).padStart(28, '0')}`,
        message_type: 3,
        born_timestamp: fromMillis(Date.now()),
        born_host: 'bench',
        delivery_timestamp: fromMillis(due),
      },
    })),
  });
  if (r.status.code !== 20000) throw new Error(`send failed: ${JSON.stringify(r.status)}`);
}

/** Send `n` delay messages with the due times `dueOf(i)`, batches of 256, `inflight` at once. */
async function schedule(
  c: BenchClient,
  topic: string,
  n: number,
  dueOf: (i: number) => number,
  inflight = 8,
) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const from = next;
      next = Math.min(n, next + 256);
      await sendDelayed(
        c,
        topic,
        Array.from({ length: next - from }, (_, j) => dueOf(from + j)),
      );
    }
  };
  await Promise.all(Array.from({ length: inflight }, worker));
}

async function rss(httpPort: number): Promise<number> {
  return (await admin(httpPort, '/api/broker')).process.rssBytes as number;
}

/** The broker child running now: killed if the benchmark fails half-way. */
let current: ChildProcess | undefined;

async function main(): Promise<void> {
  rmSync(ROOT, { recursive: true, force: true });
  mkdirSync(ROOT, { recursive: true });
  const total = quick ? 100_000 : 1_000_000;

  // A. An hour's schedule.
  let b = await startBrokerChild(ROOT);
  current = b.child;
  await admin(b.httpPort, '/api/topics', { topic: 'Hour', attributes: { 'message.type': 'DELAY' } });
  await admin(b.httpPort, '/api/topics', {
    topic: 'Due',
    readQueueNums: 1,
    writeQueueNums: 1,
    attributes: { 'message.type': 'DELAY' },
  });
  await admin(b.httpPort, '/api/groups', { group: 'DueGroup' });
  let c = new BenchClient(b.grpcPort);
  const base = Date.now() + 5 * 60_000;
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await rss(b.httpPort).catch(() => 0));
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  const t0 = performance.now();
  await schedule(c, 'Hour', total, (i) => base + Math.floor((i / total) * 3_600_000));
  const secs = (performance.now() - t0) / 1000;
  sampling = false;
  await sampler;
  report(
    `A. scheduled ${fmt(total)} delay messages over 1 h`,
    `${fmt(total / secs)} msg/s (${secs.toFixed(1)} s)`,
  );
  const status = await admin(b.httpPort, '/api/timer');
  report('   scheduled (admin API)', fmt(status.scheduled));
  report('   broker RSS, peak while scheduling', `${(peak / MiB).toFixed(0)} MiB`);
  await new Promise((r) => setTimeout(r, 5000));
  report('   broker RSS, 5 s later', `${(((await rss(b.httpPort)) as number) / MiB).toFixed(0)} MiB`);
  const progress = (await admin(b.httpPort, '/api/broker')).timer.index;
  report(
    '   schedule index checkpointed / written (timer-topic offsets)',
    `${fmt(progress.checkpointed)} / ${fmt(progress.indexed)}`,
  );

  // B. Recovery after kill -9.
  c.close();
  b.child.kill('SIGKILL');
  await new Promise((r) => b.child.once('exit', r));
  const r0 = performance.now();
  b = await startBrokerChild(ROOT);
  current = b.child;
  const restartMs = performance.now() - r0;
  const info = await admin(b.httpPort, '/api/broker');
  report(
    `B. restart after kill -9 with ${fmt(info.scheduledMessages)} scheduled`,
    `${fmt(restartMs)} ms to serve`,
  );
  report('   of which the timer (re-index + slab summaries)', `${fmt(info.timer.recovery.durationMs)} ms`);
  report('   re-indexed from the log', fmt(info.timer.recovery.reindexed));
  report('   broker RSS after recovery', `${(info.process.rssBytes / MiB).toFixed(0)} MiB`);
  c = new BenchClient(b.grpcPort);

  // C. Lateness at 5,000 due per second.
  const rate = 5000;
  const seconds = quick ? 5 : 20;
  const n = rate * seconds;
  const start = Date.now() + 60_000;
  await schedule(c, 'Due', n, (i) => start + Math.floor((i * 1000) / rate));
  if (Date.now() > start - 1000) throw new Error('scheduling took too long for the lateness run');
  const stored: number[] = [];
  const received: number[] = [];
  const consumer = new BenchClient(b.grpcPort);
  let peakC = 0;
  sampling = true;
  const sampler2 = (async () => {
    while (sampling) {
      peakC = Math.max(peakC, await rss(b.httpPort).catch(() => 0));
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  // How late a plain 10 ms timer fires in this (client) process meanwhile: the machine's own jitter.
  const probe: number[] = [];
  let probing = true;
  const prober = (async () => {
    while (probing) {
      const t = performance.now();
      await new Promise((r) => setTimeout(r, 10));
      probe.push(Math.round(performance.now() - t - 10));
    }
  })();
  await new Promise((r) => setTimeout(r, Math.max(0, start - Date.now() - 500)));
  // One queue, pulled at its tail with long polling: the message is seen as soon as it is visible.
  let offset = 0;
  while (stored.length < n) {
    const r = await consumer.pullMessages('DueGroup', 'Due', 0, offset, { batch: 1024, pollMs: 2000 });
    offset = r.next;
    const ms = r.messages;
    const now = Date.now();
    for (const m of ms) {
      const due = toMillis(m.system_properties.delivery_timestamp)!;
      stored.push(toMillis(m.system_properties.store_timestamp)! - due);
      received.push(now - due);
    }
  }
  sampling = false;
  probing = false;
  await Promise.all([sampler2, prober]);
  stored.sort((x, y) => x - y);
  probe.sort((x, y) => x - y);
  received.sort((x, y) => x - y);
  const row = (a: number[]) =>
    `p50 ${pct(a, 0.5)} ms, p99 ${pct(a, 0.99)} ms, max ${a.at(-1)} ms, min ${a[0]} ms`;
  report(`C. ${fmt(n)} due at ${fmt(rate)}/s: stored in the topic after its time`, row(stored));
  report('   seen by a consumer pulling at the queue tail, after its time', row(received));
  report('   broker RSS, peak during the run', `${(peakC / MiB).toFixed(0)} MiB`);
  report('   (context) a 10 ms timer in the client process, late by', row(probe));
  report(
    '   (context) load average of the machine (1 / 5 / 15 min)',
    loadavg()
      .map((l) => l.toFixed(1))
      .join(' / '),
  );
  c.close();
  consumer.close();
  await stopChild(b.child);
  rmSync(ROOT, { recursive: true, force: true, maxRetries: 5 });
  await inProcess();
}

async function inProcess(): Promise<void> {
  const dir = join(ROOT, 'd');
  mkdirSync(dir, { recursive: true });
  const broker = await Broker.open({ dataDir: dir });
  try {
    await broker.topics.upsert('Due', {
      readQueueNums: 1,
      writeQueueNums: 1,
      attributes: { 'message.type': 'DELAY' },
    });
    const rate = 5000;
    const n = rate * (quick ? 5 : 10);
    const start = broker.clock.now() + 20_000;
    for (let i = 0; i < n; i += 256) {
      await broker.produce.send(
        Array.from({ length: Math.min(256, n - i) }, (_, j) => ({
          topic: 'Due',
          messageId: `D${i + j}`,
          body: BODY,
          deliveryTimestamp: start + Math.floor(((i + j) * 1000) / rate),
        })),
      );
    }
    const h = monitorEventLoopDelay({ resolution: 5 });
    h.enable();
    await new Promise((r) => setTimeout(r, start - broker.clock.now() + (n / rate) * 1000 + 1500));
    h.disable();
    const late: number[] = [];
    const store = storeOf(broker);
    for (let offset = 0; ;) {
      const r = await store.read('Due', 0, offset, { maxCount: 1000, maxBytes: 64 << 20 });
      for (const m of r.messages) late.push(m.storeTimestamp - m.deliveryTimestamp);
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
    late.sort((x, y) => x - y);
    report(
      `D. in-process, ${fmt(n)} due at ${fmt(rate)}/s: stored after its time`,
      `p50 ${pct(late, 0.5)} ms, p99 ${pct(late, 0.99)} ms, max ${late.at(-1)} ms (${fmt(late.length)} delivered)`,
    );
    report(
      '   event-loop delay meanwhile',
      `p99 ${(h.percentile(99) / 1e6).toFixed(0)} ms, max ${(h.max / 1e6).toFixed(0)} ms; load average ${loadavg()[0]!.toFixed(1)}`,
    );
  } finally {
    await broker.close();
    rmSync(ROOT, { recursive: true, force: true, maxRetries: 5 });
  }
}

const killChild = () => {
  if (current && current.exitCode === null && current.signalCode === null) current.kill('SIGKILL');
};
process.on('exit', killChild);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGPIPE'] as const) {
  process.on(sig, () => {
    killChild();
    process.exit(1);
  });
}
await main();
