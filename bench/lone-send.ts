/**
 * One send at a time (W1b's shape), measured closely: `node --import tsx bench/lone-send.ts
 * [--root DIR] [--rounds N] [--sends N] [--flush sync|async] [--cpu-prof DIR]`.
 *
 * The broker of checkout `--root` (default: this one) runs in a child process (`bench/broker-child.ts`,
 * sync flush unless told otherwise), and this process sends 1 KiB messages through that checkout's
 * SDK `Producer`, each awaited before the next. Each round prints the rate, p50 / p90 / p99 of the
 * send's round trip, and the CPU time per send of both processes (the steadier figure on a shared
 * machine). With two checkouts, alternate runs of each for a before/after comparison. The broker's
 * pid is printed first, for `strace -f -p` or `perf` while it runs. `--cpu-prof DIR` writes V8 CPU
 * profiles (100 µs sampling) of the broker to DIR/broker and prints each round's window on the
 * monotonic clock, for `bench/compare/profile-summary.ts FILE --window BEGIN,END`; run this process
 * itself with `node --cpu-prof --cpu-prof-interval 100 …` to profile the SDK side as well.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

const root = resolve(arg('--root', fileURLToPath(new URL('..', import.meta.url))));
const rounds = Number(arg('--rounds', '3'));
const sends = Number(arg('--sends', '2000'));
const flush = arg('--flush', 'sync');
const profDir = arg('--cpu-prof', '');
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const BODY = Buffer.alloc(1024, 0x61);

interface Sdk {
  Producer: new (o: { endpoints: string; topics: string[] }) => {
    start(): Promise<void>;
    send(m: { topic: string; body: Buffer }): Promise<unknown>;
    close(): Promise<void>;
  };
}

const cpuWaiters: ((us: number) => void)[] = [];

function startBroker(dataDir: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [
      ...(profDir
        ? ['--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', join(profDir, 'broker')]
        : []),
      '--import',
      'tsx',
      join(root, 'bench/broker-child.ts'),
      'broker',
      dataDir,
      JSON.stringify({ flush }),
    ],
    { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  return new Promise((ok, fail) => {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('READY ')) ok({ child, port: Number(l.split(' ')[1]) });
      if (l.startsWith('CPU ')) cpuWaiters.shift()?.(Number(l.split(' ')[1]));
    });
    child.once('exit', (code) => fail(new Error(`broker child exited ${code}`)));
  });
}

function brokerCpu(child: ChildProcess): Promise<number> {
  return new Promise((ok) => {
    cpuWaiters.push(ok);
    child.stdin!.write('CPU\n');
  });
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

const sdk = (await import(pathToFileURL(join(root, 'src/index.ts')).href)) as Sdk;
const dir = mkdtempSync(join(tmpdir(), 'vela-lone-send-'));
const broker = await startBroker(join(dir, 'data'));
console.log(`root ${root}, broker pid ${broker.child.pid}, flush ${flush}`);
const topic = 'LoneSend';
const producer = new sdk.Producer({ endpoints: `127.0.0.1:${broker.port}`, topics: [topic] });
try {
  await producer.start();
  for (let i = 0; i < 500; i++) await producer.send({ topic, body: BODY }); // warm-up: JIT, connection
  for (let r = 1; r <= rounds; r++) {
    const lat: number[] = [];
    const b0 = await brokerCpu(broker.child);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const w0 = monotonicUs();
    for (let i = 0; i < sends; i++) {
      const t = performance.now();
      await producer.send({ topic, body: BODY });
      lat.push(performance.now() - t);
    }
    const seconds = (performance.now() - t0) / 1000;
    const w1 = monotonicUs();
    const c = process.cpuUsage(c0);
    const b1 = await brokerCpu(broker.child);
    lat.sort((a, b) => a - b);
    console.log(
      `round ${r}: ${Math.round(sends / seconds)} sends/s, p50 ${pct(lat, 0.5).toFixed(3)} ms, ` +
        `p90 ${pct(lat, 0.9).toFixed(3)} ms, p99 ${pct(lat, 0.99).toFixed(3)} ms; CPU per send: ` +
        `broker ${((b1 - b0) / sends).toFixed(1)} µs, client ${((c.user + c.system) / sends).toFixed(1)} µs` +
        (profDir ? `; window ${w0},${w1}` : ''),
    );
  }
} finally {
  await producer.close();
  broker.child.kill('SIGTERM');
  await new Promise((r) => broker.child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
