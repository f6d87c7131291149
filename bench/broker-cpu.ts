/**
 * Broker CPU per message (not a test): `node --import tsx bench/broker-cpu.ts [root] [messages]`.
 * Prints the send phase and the receive + ack phase separately. With VELA_CPU_PROF=<dir> the broker
 * runs with `--cpu-prof` and writes its profile there.
 *
 * Starts the broker of the checkout at `root` (default: this one) in a child process, sends
 * `messages` 1 KiB messages through the SDK (64 concurrent sends), consumes and acks them all (simple
 * consumer, batches of 32), and prints the CPU time the broker process used per message (user +
 * system, from /proc). CPU time, unlike throughput, hardly moves when other work shares the machine,
 * so two checkouts can be compared on a busy host: run both, alternately, a few times.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Admin, Producer, SimpleConsumer } from '../src/index.js';

const root = resolve(process.argv[2] ?? fileURLToPath(new URL('..', import.meta.url)));
const N = Number(process.argv[3] ?? 40_000);
const TICK = 100; // USER_HZ

function cpuMs(pid: number): number {
  const [user, sys] = cpuSplitMs(pid);
  return user + sys;
}

/** User and system CPU time of a process (ms). */
function cpuSplitMs(pid: number): [number, number] {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return [(Number(f[11]) * 1000) / TICK, (Number(f[12]) * 1000) / TICK];
}

const dir = mkdtempSync(join(tmpdir(), 'vela-cpu-'));
const child = spawn(
  process.execPath,
  [
    ...(process.env.VELA_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.VELA_CPU_PROF}`] : []),
    ...(process.env.VELA_BROKER_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
    '--import',
    'tsx',
    join(root, 'bench/broker-child.ts'),
    'broker',
    dir,
    process.env.VELA_BROKER_CONFIG ?? '{}',
  ],
  {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const [grpc, http] = await new Promise<[number, number]>((ok, fail) => {
  createInterface({ input: child.stdout! }).on('line', (l) => {
    const m = /^READY (\d+) (\d+)/.exec(l);
    if (m) ok([Number(m[1]), Number(m[2])]);
  });
  child.on('exit', (c) => fail(new Error(`broker exited ${c}`)));
});
try {
  const endpoints = `127.0.0.1:${grpc}`;
  await new Admin({ url: `http://127.0.0.1:${http}` }).createTopic('CpuT');
  const producer = new Producer({ endpoints, topics: ['CpuT'] });
  const consumer = new SimpleConsumer({
    endpoints,
    group: 'CpuG',
    subscriptions: { CpuT: '*' },
    awaitDurationMs: 500,
  });
  await producer.start();
  await consumer.start();
  await consumer.receive(1, 30_000); // the group exists before the measured part
  const body = Buffer.alloc(1024, 0x61);
  const split0 = cpuSplitMs(child.pid!);
  const before = cpuMs(child.pid!);
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < N) {
        next++;
        await producer.send({ topic: 'CpuT', body, keys: [`k${next}`] });
      }
    }),
  );
  const sent = cpuMs(child.pid!);
  let got = 0;
  while (got < N) {
    const batch = await consumer.receive(32, 30_000);
    got += batch.length;
    await Promise.all(batch.map((m) => consumer.ack(m)));
  }
  const end = cpuMs(child.pid!);
  const split1 = cpuSplitMs(child.pid!);
  const used = end - before;
  const us = (ms: number) => ((ms * 1000) / N).toFixed(1);
  console.log(
    `${root}: ${N} messages sent, received and acked; broker CPU ${used.toFixed(0)} ms = ${us(used)} µs per message ` +
      `(send ${us(sent - before)} µs, receive + ack ${us(end - sent)} µs; ` +
      `user ${us(split1[0] - split0[0])} µs, system ${us(split1[1] - split0[1])} µs)`,
  );
  if (process.env.VELA_CPU_THREADS) {
    const { readdirSync } = await import('node:fs');
    for (const t of readdirSync(`/proc/${child.pid}/task`)) {
      const comm = readFileSync(`/proc/${child.pid}/task/${t}/comm`, 'utf8').trim();
      const f = readFileSync(`/proc/${child.pid}/task/${t}/stat`, 'utf8').split(') ')[1]!.split(' ');
      console.log(
        `  thread ${t} ${comm}: user ${(Number(f[11]) * 10).toFixed(0)} ms, system ${(Number(f[12]) * 10).toFixed(0)} ms`,
      );
    }
  }
  await consumer.close();
  await producer.close();
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
