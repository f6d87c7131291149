/**
 * Broker benchmark (not a test): `npm run bench:broker`.
 *
 * 1 KiB messages through the gRPC endpoint of a broker running in a child process (sync flush):
 * unary sends with 1 and 64 in flight (and the same against a bare grpc-js server that only answers
 * OK, the ceiling for unary calls); batched sends; consume + ack (receive 32, ack them in one call).
 * `--acl`: the broker runs with access control on, and every request is signed by a normal user
 * whose ACL has a dozen entries (authentication and authorization on each call).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { messagingServiceDefinition, fromMillis } from '../src/protocol/codec.js';
import { Admin } from '../src/client/index.js';
import { signRequest } from '../src/common/signature.js';

const ROOT = join(fileURLToPath(new URL('..', import.meta.url)), '.bench-data', 'broker');
const CHILD = fileURLToPath(new URL('./broker-child.ts', import.meta.url));
const BODY = Buffer.alloc(1024, 0x61);
const quick = process.argv.includes('--quick');
const acl = process.argv.includes('--acl');
const SUPER = { accessKey: 'bench-root', secretKey: 'bench-root-secret' };
const rows: [string, string][] = [];
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

function report(name: string, value: string): void {
  rows.push([name, value]);
  console.log(`${name.padEnd(52)} ${value}`);
}
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

const cpuWaiters: ((us: number) => void)[] = [];

function startChild(args: string[]): Promise<{ child: ChildProcess; port: number; httpPort: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('READY ')) {
        const [, port, httpPort] = l.split(' ');
        resolve({ child, port: Number(port), httpPort: Number(httpPort ?? 0) });
      }
      if (l.startsWith('CPU ')) cpuWaiters.shift()?.(Number(l.split(' ')[1]));
    });
    child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
  });
}

/** The child's CPU time so far (µs). */
function childCpu(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    cpuWaiters.push(resolve);
    child.stdin!.write('CPU\n');
  });
}

/** Broker and bench-client CPU per message over `run`. */
async function withCpu<T>(child: ChildProcess, messages: (r: T) => number, run: () => Promise<T>) {
  const b0 = await childCpu(child);
  const c0 = process.cpuUsage();
  const r = await run();
  const c = process.cpuUsage(c0);
  const b1 = await childCpu(child);
  const n = messages(r);
  return { r, broker: (b1 - b0) / n, client: (c.user + c.system) / n };
}
const cpuNote = (x: { broker: number; client: number }) =>
  `; CPU/msg broker ${x.broker.toFixed(1)} µs, client ${x.client.toFixed(1)} µs`;

function client(port: number): Any {
  const Ctor = grpc.makeGenericClientConstructor(messagingServiceDefinition(), 'MessagingService');
  return new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 << 20,
  });
}

const md = new grpc.Metadata();
md.set('x-mq-client-id', 'bench@1');
let seq = 0;
const message = (topic: string) => ({
  topic: { name: topic },
  body: BODY,
  system_properties: {
    message_id: `BENCH${(seq++).toString(16).padStart(28, '0')}`,
    tag: 'TagA',
    message_type: 1,
    born_timestamp: fromMillis(Date.now()),
    born_host: 'bench',
  },
});

function call(c: Any, method: string, req: Any): Promise<Any> {
  return new Promise((resolve, reject) =>
    c[method](req, md, (err: Error | null, res: Any) => (err ? reject(err) : resolve(res))),
  );
}

async function sends(
  c: Any,
  topic: string,
  total: number,
  inflight: number,
  batch: number,
): Promise<{ rate: number; p50: number; p99: number }> {
  let left = total;
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (left > 0) {
        const n = Math.min(batch, left);
        left -= n;
        const t = performance.now();
        const r = await call(c, 'SendMessage', { messages: Array.from({ length: n }, () => message(topic)) });
        if (r.status.code !== 20000) throw new Error(`send failed: ${JSON.stringify(r.status)}`);
        lat.push(performance.now() - t);
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  return { rate: total / s, p50: pct(lat, 0.5), p99: pct(lat, 0.99) };
}

function receive(c: Any, group: string, topic: string): Promise<Any[]> {
  return new Promise((resolve, reject) => {
    const frames: Any[] = [];
    const s = c.ReceiveMessage(
      {
        group: { name: group },
        message_queue: { topic: { name: topic }, id: 0 },
        filter_expression: { type: 1, expression: '*' },
        batch_size: 32,
        invisible_duration: fromMillis(60_000),
        auto_renew: false,
        long_polling_timeout: fromMillis(0),
      },
      md,
    );
    s.on('data', (f: Any) => f.message && frames.push(f.message));
    s.on('error', reject);
    s.on('end', () => resolve(frames));
  });
}

async function consume(
  c: Any,
  group: string,
  topic: string,
  total: number,
  consumers: number,
): Promise<number> {
  let got = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: consumers }, async () => {
      while (got < total) {
        const msgs = await receive(c, group, topic);
        if (msgs.length === 0) break;
        got += msgs.length;
        const r = await call(c, 'AckMessage', {
          group: { name: group },
          topic: { name: topic },
          entries: msgs.map((m: Any) => ({
            message_id: m.system_properties.message_id,
            receipt_handle: m.system_properties.receipt_handle,
          })),
        });
        if (r.status.code !== 20000) throw new Error(`ack failed: ${JSON.stringify(r.status)}`);
      }
    }),
  );
  return got / ((performance.now() - t0) / 1000);
}

rmSync(ROOT, { recursive: true, force: true });
mkdirSync(ROOT, { recursive: true });
console.log(
  `Vela broker benchmark — node ${process.version}${quick ? ' (quick)' : ''}${acl ? ' (ACL)' : ''}, 1 KiB messages, sync flush\n`,
);
const scale = quick ? 0.2 : 1;

const echo = await startChild(['echo']);
const ec = client(echo.port);
await sends(ec, 'Warmup', 2000, 16, 1);
let r = await sends(ec, 'Echo', Math.round(5000 * scale), 1, 1);
const echo1 = r.rate;
report(
  'bare grpc-js echo, unary, 1 in flight',
  `${fmt(r.rate)} calls/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`,
);
r = await sends(ec, 'Echo', Math.round(50_000 * scale), 64, 1);
const echo64 = r.rate;
report(
  'bare grpc-js echo, unary, 64 in flight',
  `${fmt(r.rate)} calls/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`,
);
ec.close();
echo.child.kill();

const broker = await startChild([
  'broker',
  ROOT,
  ...(acl
    ? [JSON.stringify({ aclEnabled: true, aclInitUser: `${SUPER.accessKey}:${SUPER.secretKey}` })]
    : []),
]);
if (acl) {
  const admin = new Admin({ url: `http://127.0.0.1:${broker.httpPort}`, credentials: SUPER });
  await admin.createUser('bench', 'bench-secret');
  await admin.createAcl({
    subject: 'User:bench',
    resources: [...Array.from({ length: 10 }, (_, i) => `Topic:other-${i}`), 'Group:other'],
    actions: ['Pub', 'Sub'],
    decision: 'Allow',
  });
  await admin.createAcl({
    subject: 'User:bench',
    resources: ['Topic:Bench*', 'Topic:Warmup', 'Group:Bench*'],
    actions: ['Pub', 'Sub'],
    decision: 'Allow',
  });
  // One signature for the run (within the broker's 15-minute window): the broker's cost is measured.
  const signed = signRequest('bench', 'bench-secret');
  md.set('x-mq-date-time', signed.dateTime);
  md.set('authorization', signed.authorization);
  console.log('access control on: every request signed by a normal user with 13 ACL entries\n');
}
const bc = client(broker.port);
await sends(bc, 'Warmup', 2000, 16, 1);
const n1 = Math.round(5000 * scale);
let m = await withCpu(
  broker.child,
  () => n1,
  () => sends(bc, 'BenchUnary', n1, 1, 1),
);
report(
  'unary send, 1 in flight',
  `${fmt(m.r.rate)} msgs/s (${((m.r.rate / echo1) * 100).toFixed(0)} % of echo), p50 ${m.r.p50.toFixed(2)} ms, p99 ${m.r.p99.toFixed(2)} ms${cpuNote(m)}`,
);
const n64 = Math.round(50_000 * scale);
m = await withCpu(
  broker.child,
  () => n64,
  () => sends(bc, 'BenchUnary', n64, 64, 1),
);
report(
  'unary send, 64 in flight',
  `${fmt(m.r.rate)} msgs/s (${((m.r.rate / echo64) * 100).toFixed(0)} % of echo), p50 ${m.r.p50.toFixed(2)} ms, p99 ${m.r.p99.toFixed(2)} ms${cpuNote(m)}`,
);
const batchTotal = Math.round(300_000 * scale);
m = await withCpu(
  broker.child,
  () => batchTotal,
  () => sends(bc, 'BenchBatch', batchTotal, 8, 128),
);
report(
  'batched send (128 per SendMessage), 8 in flight',
  `${fmt(m.r.rate)} msgs/s, p50 ${m.r.p50.toFixed(2)} ms per batch${cpuNote(m)}`,
);
const c = await withCpu(
  broker.child,
  () => batchTotal,
  () => consume(bc, 'BenchGroup', 'BenchBatch', batchTotal, 4),
);
report('consume + ack (receive 32, batch ack), 4 loops', `${fmt(c.r)} msgs/s${cpuNote(c)}`);
bc.close();
broker.child.kill('SIGTERM');
await new Promise((res) => broker.child.once('exit', res));
rmSync(ROOT, { recursive: true, force: true });
console.log('\n| measurement | result |\n| --- | --- |');
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
