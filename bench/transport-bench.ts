/**
 * Transport benchmark (not a test): `node --import tsx bench/transport-bench.ts [--quick]`.
 *
 * The gRPC transport alone — no protobuf, no broker — as in shared/reference/performance-calibration.md:
 * a server in a child process answers (a) unary calls (300-byte request, 40-byte answer) and (b)
 * server-streaming calls with 32 messages of 1.1 KB each, and a client in this process keeps 32
 * unary / 8 streaming calls in flight for a few seconds. Servers: `@grpc/grpc-js` (32 `call.write`s)
 * and Vela's transport (src/protocol/transport on src/common/http2, one write per answer). Clients: grpc-js
 * (what the official Node client uses) and Vela's SDK channel (src/client/h2-channel.ts). Each row
 * gives the rate and the CPU time per call or message of each side.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { GrpcServer } from '../src/protocol/transport/h2-server.js';
import { H2Channel } from '../src/client/h2-channel.js';
import { silentLogger } from '../src/common/logger.js';

const SELF = fileURLToPath(import.meta.url);
const UNARY = '/apache.rocketmq.v2.MessagingService/AckMessage';
const STREAM = '/apache.rocketmq.v2.MessagingService/ReceiveMessage';
const ANSWER = Buffer.alloc(40, 1);
const ITEM = Buffer.alloc(1100, 7);
const REQUEST = Buffer.alloc(300, 2);
const quick = process.argv.includes('--quick');
const SECONDS = quick ? 2 : 5;

const id = (x: Buffer) => x;
const definition = {
  ack: {
    path: UNARY,
    requestStream: false,
    responseStream: false,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  },
  receive: {
    path: STREAM,
    requestStream: false,
    responseStream: true,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  },
};

async function serve(kind: string): Promise<void> {
  let port: number;
  if (kind === 'grpc-js') {
    const server = new grpc.Server();
    server.addService(definition, {
      ack: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, ANSWER),
      receive: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        for (let i = 0; i < 32; i++) call.write(ITEM);
        call.end();
      },
    });
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
  } else {
    const server = new GrpcServer({
      host: '127.0.0.1',
      limits: {
        maxMessageBytes: 5 << 20,
        maxConcurrentStreams: 1000,
        maxConnectionInboundBytes: 64 << 20,
        maxInboundBytes: 512 << 20,
        maxConnectionOutboundBytes: 64 << 20,
      },
      keepalive: { intervalMs: 0, timeoutMs: 1 },
      logger: silentLogger(),
    });
    const items = Array.from({ length: 32 }, () => ITEM);
    server.register(UNARY, { kind: 'unary', onRequest: (call) => call.sendUnary(ANSWER) });
    server.register(STREAM, { kind: 'server-stream', onRequest: (call) => call.sendAll(items) });
    port = await server.listen(0);
  }
  process.stdout.write(`READY ${port}\n`);
  process.on('SIGTERM', () => process.exit(0)); // exits cleanly (so --cpu-prof writes its profile)
  process.stdin.on('data', (d) => {
    if (d.toString().includes('CPU')) {
      const u = process.cpuUsage();
      process.stdout.write(`CPU ${u.user + u.system}\n`);
    }
  });
}

interface Child {
  child: ChildProcess;
  port: number;
  cpu(): Promise<number>;
}

function startServer(kind: string): Promise<Child> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SELF, 'serve', kind], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const waiters: ((us: number) => void)[] = [];
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('READY ')) {
        resolve({
          child,
          port: Number(l.split(' ')[1]),
          cpu: () =>
            new Promise((r) => {
              waiters.push(r);
              child.stdin!.write('CPU\n');
            }),
        });
      }
      if (l.startsWith('CPU ')) waiters.shift()?.(Number(l.split(' ')[1]));
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
}

interface Client {
  unary(): Promise<void>;
  stream(): Promise<number>;
  close(): void;
}

function grpcJsClient(port: number): Client {
  const Ctor = grpc.makeGenericClientConstructor(definition, 'Bench');
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const c = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as any;
  return {
    unary: () =>
      new Promise((resolve, reject) =>
        c.ack(REQUEST, (err: Error | null) => (err ? reject(err) : resolve())),
      ),
    stream: () =>
      new Promise((resolve, reject) => {
        let n = 0;
        const s = c.receive(REQUEST);
        s.on('data', () => n++);
        s.on('end', () => resolve(n));
        s.on('error', reject);
      }),
    close: () => c.close(),
  };
}

function velaClient(port: number): Client {
  const ch = new H2Channel({ addresses: [{ host: '127.0.0.1', port }], maxReceiveMessageBytes: 4 << 20 });
  return {
    unary: () => ch.unary(UNARY, {}, REQUEST, 10_000).then(() => undefined),
    stream: () => ch.serverStream(STREAM, {}, REQUEST, 10_000).then((m) => m.length),
    close: () => ch.close(),
  };
}

async function measure(
  server: Child,
  client: Client,
  inflight: number,
  op: () => Promise<number>,
): Promise<{ rate: number; server: number; client: number }> {
  for (let i = 0; i < 200; i++) await op(); // warm-up
  const s0 = await server.cpu();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const until = t0 + SECONDS * 1000;
  let units = 0;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (performance.now() < until) {
        const n = await op();
        units += n;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const s1 = await server.cpu();
  return { rate: units / secs, server: (s1 - s0) / units, client: (c.user + c.system) / units };
}

async function main(): Promise<void> {
  console.log(`gRPC transport benchmark — node ${process.version}${quick ? ' (quick)' : ''}\n`);
  const rows: string[] = [];
  for (const serverKind of ['grpc-js', 'vela']) {
    const server = await startServer(serverKind);
    for (const [clientKind, make] of [
      ['grpc-js', grpcJsClient],
      ['vela', velaClient],
    ] as const) {
      const client = make(server.port);
      const u = await measure(server, client, 32, () => client.unary().then(() => 1));
      const s = await measure(server, client, 8, () => client.stream());
      client.close();
      const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
      rows.push(
        `| ${serverKind} | ${clientKind} | ${fmt(u.rate)} calls/s, ${u.server.toFixed(1)} / ${u.client.toFixed(1)} µs | ` +
          `${fmt(s.rate)} msgs/s, ${s.server.toFixed(1)} / ${s.client.toFixed(1)} µs |`,
      );
      console.log(rows.at(-1));
    }
    server.child.kill();
  }
  console.log(
    '\n| server | client | unary, 32 in flight (server / client CPU per call) | stream of 32 × 1.1 KB, 8 in flight (server / client CPU per message) |',
  );
  console.log('| --- | --- | --- | --- |');
  for (const r of rows) console.log(r);
}

if (process.argv[2] === 'serve') await serve(process.argv[3]!);
else await main();
