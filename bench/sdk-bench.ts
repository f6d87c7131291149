/**
 * SDK benchmark (not a test): `node --import tsx bench/sdk-bench.ts [--quick]`.
 *
 * 1 KiB messages through the SDK against a broker in a child process (sync flush, auto-created
 * topics and groups): Producer throughput with 1, 64 and 1,024 concurrent `send()` calls (automatic
 * batching on; 64 also with batching off, for comparison), the latency of one-at-a-time sends
 * (p50/p99), 1,024 concurrent sends that all pass one AbortSignal (as an application's shutdown
 * signal would be), and PushConsumer throughput (listener returns SUCCESS at once; acks batched).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConsumeResult, Producer, PushConsumer, type ProducerOptions } from '../src/index.js';

const ROOT = join(fileURLToPath(new URL('..', import.meta.url)), '.bench-data', 'sdk');
const CHILD =
  process.env.VELA_BENCH_BROKER_CHILD ?? fileURLToPath(new URL('./broker-child.ts', import.meta.url));
const BODY = Buffer.alloc(1024, 0x61);
const quick = process.argv.includes('--quick');
const scale = quick ? 0.2 : 1;
const rows: [string, string][] = [];

function report(name: string, value: string): void {
  rows.push([name, value]);
  console.log(`${name.padEnd(56)} ${value}`);
}
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

const cpuWaiters: ((us: number) => void)[] = [];

function startBrokerChild(dataDir: string): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'broker', dataDir], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('READY ')) resolve({ child, port: Number(l.split(' ')[1]) });
      if (l.startsWith('CPU ')) cpuWaiters.shift()?.(Number(l.split(' ')[1]));
    });
    child.on('exit', (code) => reject(new Error(`broker child exited ${code}`)));
  });
}

/** The broker's CPU time so far (µs). */
function brokerCpu(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    cpuWaiters.push(resolve);
    child.stdin!.write('CPU\n');
  });
}

/** CPU per message of the broker and of this process (the SDK) over `run`. */
async function withCpu<T>(child: ChildProcess, messages: number, run: () => Promise<T>) {
  const b0 = await brokerCpu(child);
  const c0 = process.cpuUsage();
  const r = await run();
  const c = process.cpuUsage(c0);
  const b1 = await brokerCpu(child);
  return {
    r,
    note: `; CPU/msg SDK ${((c.user + c.system) / messages).toFixed(1)} µs, broker ${((b1 - b0) / messages).toFixed(1)} µs`,
  };
}

/** `total` sends by `concurrency` loops, each awaiting its send; per-send latencies. */
async function produce(
  endpoints: string,
  topic: string,
  total: number,
  concurrency: number,
  options: Partial<ProducerOptions> = {},
  /** Passed to every send. */
  signal?: AbortSignal,
): Promise<{ rate: number; p50: number; p99: number }> {
  const producer = new Producer({ endpoints, topics: [topic], ...options });
  await producer.start();
  // Warm up the connection and the JIT.
  await Promise.all(Array.from({ length: 200 }, () => producer.send({ topic, body: BODY })));
  let left = total;
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left > 0) {
        left--;
        const t = performance.now();
        await producer.send({ topic, body: BODY, tag: 'bench' }, signal ? { signal } : {});
        lat.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await producer.close();
  lat.sort((a, b) => a - b);
  return { rate: total / seconds, p50: pct(lat, 0.5), p99: pct(lat, 0.99) };
}

async function consume(endpoints: string, topic: string, group: string, total: number): Promise<number> {
  let got = 0;
  let t0 = 0;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const consumer = new PushConsumer({
    endpoints,
    group,
    subscriptions: { [topic]: '*' },
    concurrency: 64,
    listener: () => {
      if (got === 0) t0 = performance.now();
      if (++got === total) resolveDone();
      return ConsumeResult.SUCCESS;
    },
  });
  await consumer.start();
  await done;
  const seconds = (performance.now() - t0) / 1000;
  await consumer.close();
  return total / seconds;
}

rmSync(ROOT, { recursive: true, force: true });
mkdirSync(ROOT, { recursive: true });
console.log(
  `Vela SDK benchmark — node ${process.version}${quick ? ' (quick)' : ''}, 1 KiB messages, sync flush\n`,
);
const broker = await startBrokerChild(ROOT);
const endpoints = `127.0.0.1:${broker.port}`;
try {
  const n1 = Math.round(3000 * scale);
  let m = await withCpu(broker.child, n1, () => produce(endpoints, 'SdkBench1', n1, 1));
  report(
    'send, 1 at a time',
    `${fmt(m.r.rate)} msgs/s, p50 ${m.r.p50.toFixed(2)} ms, p99 ${m.r.p99.toFixed(2)} ms${m.note}`,
  );
  const n64 = Math.round(50_000 * scale);
  m = await withCpu(broker.child, n64, () => produce(endpoints, 'SdkBench64', n64, 64));
  report(
    'send, 64 concurrent (batching)',
    `${fmt(m.r.rate)} msgs/s, p50 ${m.r.p50.toFixed(2)} ms, p99 ${m.r.p99.toFixed(2)} ms${m.note}`,
  );
  const n64off = Math.round(20_000 * scale);
  m = await withCpu(broker.child, n64off, () =>
    produce(endpoints, 'SdkBench64Off', n64off, 64, { batching: false }),
  );
  report(
    'send, 64 concurrent (batching off)',
    `${fmt(m.r.rate)} msgs/s, p50 ${m.r.p50.toFixed(2)} ms, p99 ${m.r.p99.toFixed(2)} ms${m.note}`,
  );
  const consumeTotal = Math.round(200_000 * scale);
  m = await withCpu(broker.child, consumeTotal, () => produce(endpoints, 'SdkBench1024', consumeTotal, 1024));
  report(
    'send, 1,024 concurrent (batching)',
    `${fmt(m.r.rate)} msgs/s, p50 ${m.r.p50.toFixed(2)} ms, p99 ${m.r.p99.toFixed(2)} ms${m.note}`,
  );
  const nSignal = Math.round(100_000 * scale);
  const shutdown = new AbortController();
  m = await withCpu(broker.child, nSignal, () =>
    produce(endpoints, 'SdkBenchSignal', nSignal, 1024, {}, shutdown.signal),
  );
  report(
    'send, 1,024 concurrent, one AbortSignal for all',
    `${fmt(m.r.rate)} msgs/s, p50 ${m.r.p50.toFixed(2)} ms, p99 ${m.r.p99.toFixed(2)} ms${m.note}`,
  );
  // The 1,024 run's messages (and its 200 warm-up ones) are what the push consumer reads.
  const c = await withCpu(broker.child, consumeTotal + 200, () =>
    consume(endpoints, 'SdkBench1024', 'SdkBenchGroup', consumeTotal + 200),
  );
  report('push consumer, concurrency 64, ack per message (batched)', `${fmt(c.r)} msgs/s${c.note}`);
} finally {
  broker.child.kill('SIGTERM');
  await new Promise((res) => broker.child.once('exit', res));
  rmSync(ROOT, { recursive: true, force: true });
}
console.log('\n| measurement | result |\n| --- | --- |');
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
