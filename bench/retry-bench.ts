/**
 * Retry, DLQ and FIFO benchmark (not a test): `npm run bench:retry`.
 *
 * A. 100,000 messages (1 KiB) of which 10 % fail once: total time until all are consumed, and the
 *    broker's peak RSS.
 * B. 1,000,000 messages waiting for retry (their consumer vanished; the policy says 1 h): the
 *    broker's RSS while they wait (target < 300 MB: waiting retries live on disk).
 * C. FIFO: 100,000 messages in 1,000 message groups, consumed by 2 consumers of an orderly group,
 *    against the same messages for a non-orderly group (target ≥ 50 %).
 */
import { rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchClient, admin, startBrokerChild, stopChild, type Any } from './bench-client.js';

const ROOT = join(fileURLToPath(new URL('..', import.meta.url)), '.bench-data', 'retry');
const quick = process.argv.includes('--quick');
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const MiB = 1024 * 1024;
const rows: [string, string][] = [];
const report = (k: string, v: string) => {
  rows.push([k, v]);
  console.log(`${k.padEnd(60)} ${v}`);
};

async function produce(
  c: BenchClient,
  topic: string,
  n: number,
  size: number,
  group?: (i: number) => string,
): Promise<void> {
  const body = Buffer.alloc(size, 0x61);
  for (let i = 0; i < n;) {
    const k = Math.min(256, n - i);
    const start = i;
    await c.send(
      topic,
      Array.from({ length: k }, () => body),
      group ? (j) => group(start + j) : undefined,
    );
    i += k;
  }
}

async function sampleRss(httpPort: number, into: { peak: number }): Promise<() => void> {
  let on = true;
  void (async () => {
    while (on) {
      const info = await admin(httpPort, '/api/broker').catch(() => null);
      if (info) into.peak = Math.max(into.peak, info.process.rssBytes);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return () => (on = false);
}

async function partA(): Promise<void> {
  const total = quick ? 20_000 : 100_000;
  const dir = join(ROOT, 'a');
  const b = await startBrokerChild(dir);
  const peak = { peak: 0 };
  const stop = await sampleRss(b.httpPort, peak);
  await admin(b.httpPort, '/api/topics', { topic: 'RetryA' });
  await admin(b.httpPort, '/api/groups', {
    group: 'GA',
    groupRetryPolicy: { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [500] } },
  });
  const p = new BenchClient(b.grpcPort);
  await produce(p, 'RetryA', total, 1024);
  const t0 = performance.now();
  let done = 0;
  let nacked = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      const c = new BenchClient(b.grpcPort);
      while (done < total) {
        const msgs = await c.receive('GA', 'RetryA', { push: true, pollMs: 1000 });
        const ok: Any[] = [];
        for (const m of msgs) {
          // 10 % fail on their first delivery (decided by the last hex digit of the id).
          const fail =
            m.system_properties.delivery_attempt === 1 &&
            parseInt(m.system_properties.message_id.slice(-1), 16) < 1.6;
          if (fail) {
            nacked++;
            await c.nack('GA', 'RetryA', m);
          } else ok.push(m);
        }
        await c.ack('GA', 'RetryA', ok);
        done += ok.length;
      }
      c.close();
    }),
  );
  const s = (performance.now() - t0) / 1000;
  stop();
  report(
    `A. ${fmt(total)} messages, ${fmt(nacked)} fail once (retry after 500 ms)`,
    `${s.toFixed(1)} s (${fmt(total / s)} msgs/s), broker peak RSS ${fmt(peak.peak / MiB)} MiB`,
  );
  p.close();
  await stopChild(b.child);
}

async function partB(): Promise<void> {
  const total = quick ? 100_000 : 1_000_000;
  const dir = join(ROOT, 'b');
  const b = await startBrokerChild(dir, {
    consume: { autoRenewInvisibleMs: 2000, maxInflightPerGroup: 2_000_000 },
  });
  await admin(b.httpPort, '/api/topics', { topic: 'RetryB' });
  await admin(b.httpPort, '/api/groups', {
    group: 'GB',
    groupRetryPolicy: { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [3_600_000] } },
  });
  const p = new BenchClient(b.grpcPort);
  const t0 = performance.now();
  await produce(p, 'RetryB', total, 128);
  // A push consumer with no session takes everything and never acks: after 2 s unrenewed, every
  // delivery fails and waits an hour for its retry.
  let taken = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      const c = new BenchClient(b.grpcPort, `vanishing-${Math.random()}`);
      while (taken < total) {
        const msgs = await c.receive('GB', 'RetryB', { push: true, pollMs: 200 });
        if (msgs.length === 0) break;
        taken += msgs.length;
      }
      c.close();
    }),
  );
  let waiting = 0;
  for (let i = 0; i < 600 && waiting < total; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    waiting = (await admin(b.httpPort, '/api/groups/GB/progress')).waitingRetry;
  }
  const info = await admin(b.httpPort, '/api/broker');
  report(
    `B. messages waiting for retry`,
    `${fmt(waiting)} of ${fmt(total)} after ${((performance.now() - t0) / 1000).toFixed(0)} s; broker RSS ${fmt(info.process.rssBytes / MiB)} MiB, heap ${fmt(info.process.heapUsedBytes / MiB)} MiB`,
  );
  p.close();
  await stopChild(b.child);
}

async function consumeAll(
  port: number,
  group: string,
  topic: string,
  total: number,
  consumers: number,
): Promise<number> {
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: consumers }, async () => {
      const c = new BenchClient(port);
      let idle = 0;
      while (done < total && idle < 20) {
        const msgs = await c.receive(group, topic, { invisibleMs: 60_000, pollMs: 100 });
        if (msgs.length === 0) {
          idle++;
          continue;
        }
        idle = 0;
        await c.ack(group, topic, msgs);
        done += msgs.length;
      }
      c.close();
    }),
  );
  if (done < total) throw new Error(`${group} consumed only ${done} of ${total}`);
  return total / ((performance.now() - t0) / 1000);
}

async function partC(): Promise<void> {
  const total = quick ? 20_000 : 100_000;
  const dir = join(ROOT, 'c');
  const b = await startBrokerChild(dir);
  await admin(b.httpPort, '/api/topics', { topic: 'FifoC', attributes: { 'message.type': 'FIFO' } });
  await admin(b.httpPort, '/api/groups', { group: 'GOrderly', consumeMessageOrderly: true });
  await admin(b.httpPort, '/api/groups', { group: 'GConcurrent' });
  const p = new BenchClient(b.grpcPort);
  await produce(p, 'FifoC', total, 1024, (i) => `order-${i % 1000}`);
  const concurrent = await consumeAll(b.grpcPort, 'GConcurrent', 'FifoC', total, 2);
  const orderly = await consumeAll(b.grpcPort, 'GOrderly', 'FifoC', total, 2);
  report('C. non-orderly group, 2 consumers (receive 32, batch ack)', `${fmt(concurrent)} msgs/s`);
  report(
    'C. orderly (FIFO) group, 1,000 message groups, 2 consumers',
    `${fmt(orderly)} msgs/s (${((orderly / concurrent) * 100).toFixed(0)} % of non-orderly)`,
  );
  p.close();
  await stopChild(b.child);
}

rmSync(ROOT, { recursive: true, force: true });
mkdirSync(ROOT, { recursive: true });
console.log(
  `Vela retry/DLQ/FIFO benchmark — node ${process.version}${quick ? ' (quick)' : ''}, sync flush\n`,
);
await partA();
await partC();
await partB();
rmSync(ROOT, { recursive: true, force: true });
console.log('\n| measurement | result |\n| --- | --- |');
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
