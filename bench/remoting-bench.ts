/**
 * Remoting benchmark (not a test): `npm run bench:remoting [-- --quick]`.
 *
 * The Java rocketmq-client (the Remoting test program, built once under .cache/) against a broker
 * running in a child process (sync flush): 1 KiB sync sends from 1 and 16 producer threads, then one
 * push consumer (4 consume threads, 32-message pulls) receiving everything. Throughput includes
 * the clients' own start (a second or so) only for the consumer, which starts when the sends end.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runJava, type ProgramEvent } from '../test/remoting/client-programs.js';

const ROOT = join(fileURLToPath(new URL('..', import.meta.url)), '.bench-data', 'remoting');
const CHILD = fileURLToPath(new URL('./broker-child.ts', import.meta.url));
const quick = process.argv.includes('--quick');
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

rmSync(ROOT, { recursive: true, force: true });
mkdirSync(join(ROOT, 'home'), { recursive: true });
const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'broker', join(ROOT, 'data')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const ready = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (l) => l.startsWith('READY') && resolve(l));
    child.once('exit', (code) => reject(new Error(`broker exited (${code})`)));
  });
  const remotingPort = Number(ready.split(' ')[3]);
  const ns = `127.0.0.1:${remotingPort}`;
  const n = quick ? 5_000 : 50_000;
  console.log(`Remoting, Java rocketmq-client 5.5.0, ${fmt(n)} × 1 KiB messages, sync flush`);
  for (const threads of [1, 16]) {
    const topic = `BenchRemoting${threads}_${Date.now()}`;
    const ev: ProgramEvent[] = await runJava(
      join(ROOT, 'home'),
      ['bench', ns, topic, `BenchGroup${threads}_${Date.now()}`, String(n), '1024', String(threads)],
      600_000,
    );
    const produced = ev.find((e) => e.event === 'produced')!;
    const consumed = ev.find((e) => e.event === 'consumed')!;
    console.log(
      `  send (sync, ${String(threads).padStart(2)} threads)          ${fmt(produced.perSecond as number)} msg/s`,
    );
    console.log(`  push consume (after the sends)       ${fmt(consumed.perSecond as number)} msg/s`);
  }
} finally {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  rmSync(ROOT, { recursive: true, force: true });
}
