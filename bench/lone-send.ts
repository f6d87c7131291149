/**
 * One send at a time (W1b's shape), measured closely: `node --import tsx bench/lone-send.ts
 * [--root DIR] [--vs DIR] [--rounds N] [--sends N] [--flush sync|async] [--cpu-prof DIR]`.
 *
 * The broker of checkout `--root` (default: this one) runs in a child process (`bench/broker-child.ts`,
 * sync flush unless told otherwise), and this process sends 1 KiB messages through that checkout's
 * SDK `Producer`, each awaited before the next. Each round prints the rate, p50 / p90 / p99 of the
 * send's round trip, and the CPU time per send of both processes (the steadier figure on a shared
 * machine).
 *
 * `--vs DIR` compares two checkouts in the same run: a broker and an SDK of each, and the sends
 * alternate between them in blocks of 100, so that whatever else the machine is doing weighs on both
 * alike (sequential runs of each on a shared machine differ by more than most changes do).
 *
 * The broker's pid is printed first, for `strace -f -p` or `perf` while it runs. `--cpu-prof DIR`
 * writes V8 CPU profiles (100 µs sampling) of the broker to DIR/broker and prints each round's window
 * on the monotonic clock, for `bench/compare/profile-summary.ts FILE --window BEGIN,END`; run this
 * process itself with `node --cpu-prof --cpu-prof-interval 100 …` to profile the SDK side as well.
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

const roots = [resolve(arg('--root', fileURLToPath(new URL('..', import.meta.url))))];
if (process.argv.includes('--vs')) roots.push(resolve(arg('--vs', '')));
const rounds = Number(arg('--rounds', '3'));
const sends = Number(arg('--sends', '2000'));
const flush = arg('--flush', 'sync');
const profDir = arg('--cpu-prof', '');
const BLOCK = 100;
const BODY = Buffer.alloc(1024, 0x61);
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

interface SdkProducer {
  start(): Promise<void>;
  send(m: { topic: string; body: Buffer }): Promise<unknown>;
  close(): Promise<void>;
}
interface Sdk {
  Producer: new (o: { endpoints: string; topics: string[] }) => SdkProducer;
}

interface Side {
  root: string;
  child: ChildProcess;
  cpuWaiters: ((us: number) => void)[];
  producer: SdkProducer;
}

function startBroker(root: string, dataDir: string, label: string): Promise<Omit<Side, 'producer'>> {
  const child = spawn(
    process.execPath,
    [
      ...(profDir
        ? ['--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', join(profDir, `broker${label}`)]
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
  const cpuWaiters: ((us: number) => void)[] = [];
  return new Promise((ok, fail) => {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('READY ')) ok({ root, child, cpuWaiters, port: Number(l.split(' ')[1]) } as never);
      if (l.startsWith('CPU ')) cpuWaiters.shift()?.(Number(l.split(' ')[1]));
    });
    child.once('exit', (code) => fail(new Error(`broker child exited ${code}`)));
  });
}

function brokerCpu(side: Omit<Side, 'producer'>): Promise<number> {
  return new Promise((ok) => {
    side.cpuWaiters.push(ok);
    side.child.stdin!.write('CPU\n');
  });
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const topic = 'LoneSend';
const dir = mkdtempSync(join(tmpdir(), 'vela-lone-send-'));
const sides: Side[] = [];
try {
  for (const [i, root] of roots.entries()) {
    const b = (await startBroker(root, join(dir, `data${i}`), roots.length > 1 ? `-${i}` : '')) as Omit<
      Side,
      'producer'
    > & { port: number };
    const sdk = (await import(pathToFileURL(join(root, 'src/index.ts')).href)) as Sdk;
    const producer = new sdk.Producer({ endpoints: `127.0.0.1:${b.port}`, topics: [topic] });
    sides.push({ ...b, producer });
    console.log(`${String.fromCharCode(65 + i)}: ${root}, broker pid ${b.child.pid}, flush ${flush}`);
  }
  for (const s of sides) {
    await s.producer.start();
    for (let i = 0; i < 500; i++) await s.producer.send({ topic, body: BODY }); // warm-up: JIT, connection
  }
  for (let r = 1; r <= rounds; r++) {
    const stats = sides.map(() => ({ lat: [] as number[], ms: 0, clientUs: 0, brokerUs: 0 }));
    const w0 = monotonicUs();
    for (let done = 0; done < sends; done += BLOCK) {
      for (const [i, s] of sides.entries()) {
        const st = stats[i]!;
        const b0 = await brokerCpu(s);
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        for (let k = 0; k < BLOCK; k++) {
          const t = performance.now();
          await s.producer.send({ topic, body: BODY });
          st.lat.push(performance.now() - t);
        }
        st.ms += performance.now() - t0;
        const c = process.cpuUsage(c0);
        st.clientUs += c.user + c.system;
        st.brokerUs += (await brokerCpu(s)) - b0;
      }
    }
    const w1 = monotonicUs();
    for (const [i, st] of stats.entries()) {
      const n = st.lat.length;
      st.lat.sort((a, b) => a - b);
      console.log(
        `round ${r}${sides.length > 1 ? ` ${String.fromCharCode(65 + i)}` : ''}: ` +
          `${Math.round(n / (st.ms / 1000))} sends/s, p50 ${pct(st.lat, 0.5).toFixed(3)} ms, ` +
          `p90 ${pct(st.lat, 0.9).toFixed(3)} ms, p99 ${pct(st.lat, 0.99).toFixed(3)} ms; CPU per send: ` +
          `broker ${(st.brokerUs / n).toFixed(1)} µs, client ${(st.clientUs / n).toFixed(1)} µs` +
          (profDir ? `; window ${w0},${w1}` : ''),
      );
    }
  }
} finally {
  for (const s of sides) {
    await s.producer.close();
    s.child.kill('SIGTERM');
    await new Promise((r) => s.child.once('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
}
