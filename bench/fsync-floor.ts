/**
 * The fsync floor of a disk: what one durable 1 KiB append costs, the least a sync-flush send can
 * wait. `node --import tsx bench/fsync-floor.ts [DIR] [--writes N]` (DIR: where the broker's data
 * would live; default the system's temp directory).
 *
 * Four ways, each N appends to a new file: an `O_DSYNC` write (what the store does) and a write +
 * `fdatasync`, each as a blocking call on this thread and through Node's thread pool (as the store
 * calls them, so the hand-off to a pool thread and back is included); and a fifth, `O_DSYNC` writes
 * through the pool into a file extended to its final size first (`ftruncate`), so that no write
 * changes the file's size (what the store pays: it sizes its segments ahead, segment-files.ts). Prints p50 / p90 / p99 of one
 * append, and the process CPU time per append for the blocking `O_DSYNC` write (the kernel's part of
 * a durable write, which a broker pays on one of the two cores too).
 *
 * `--pair`: instead, two files written at once through the pool, as the broker writes its message log
 * (5.5 KiB appends: a few messages per group commit) and its state journal (300-byte appends), each
 * `O_DSYNC` into a file sized ahead, N appends each; prints p50 / p90 / p99 / p99.9 / max and how many
 * took over 4 ms — the disk's own tail, to set beside the broker's.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const argv = process.argv.slice(2);
const writesAt = argv.indexOf('--writes');
const N = writesAt >= 0 ? Number(argv[writesAt + 1]) : 2000;
const base = argv.find((a, i) => !a.startsWith('--') && argv[i - 1] !== '--writes') ?? tmpdir();
const dir = fs.mkdtempSync(join(base, 'vela-fsync-floor-'));
const buf = Buffer.alloc(1024, 7);
const { O_WRONLY, O_CREAT, O_DSYNC } = fs.constants;

function summary(name: string, lat: number[], extra = ''): void {
  lat.sort((a, b) => a - b);
  const at = (p: number) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))]!.toFixed(3);
  console.log(`${name.padEnd(50)} p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms${extra}`);
}

function blocking(name: string, flags: number, datasync: boolean): void {
  const fd = fs.openSync(join(dir, name), flags, 0o600);
  const lat: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    fs.writeSync(fd, buf, 0, buf.length, i * buf.length);
    if (datasync) fs.fdatasyncSync(fd);
    lat.push(performance.now() - t);
  }
  const cpu = process.cpuUsage(cpu0);
  fs.closeSync(fd);
  summary(
    `${name} (blocking)`,
    lat,
    `; CPU ${((cpu.user + cpu.system) / N).toFixed(0)} µs per append (system ${(cpu.system / N).toFixed(0)})`,
  );
}

async function pooled(name: string, flags: number, datasync: boolean, extendFirst = false): Promise<void> {
  const fd = fs.openSync(join(dir, `${name}-pool`), flags, 0o600);
  // A file already as long as the appends will make it (sparse: ftruncate, no blocks written), so
  // no append changes its size.
  if (extendFirst) fs.ftruncateSync(fd, N * buf.length);
  const write = (pos: number) =>
    new Promise<void>((ok, fail) => fs.write(fd, buf, 0, buf.length, pos, (err) => (err ? fail(err) : ok())));
  const sync = () => new Promise<void>((ok, fail) => fs.fdatasync(fd, (err) => (err ? fail(err) : ok())));
  const lat: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await write(i * buf.length);
    if (datasync) await sync();
    lat.push(performance.now() - t);
  }
  fs.closeSync(fd);
  summary(`${name} (thread pool)`, lat);
}

async function pair(): Promise<void> {
  const files = [
    { name: 'log', len: 5 * 1100 },
    { name: 'journal', len: 300 },
  ].map(({ name, len }) => {
    const fd = fs.openSync(join(dir, `pair-${name}`), O_WRONLY | O_CREAT | O_DSYNC, 0o600);
    fs.ftruncateSync(fd, N * len);
    return { name, fd, buf: Buffer.alloc(len, 7), lat: [] as number[] };
  });
  await Promise.all(
    files.map(async (f) => {
      for (let i = 0; i < N; i++) {
        const t = performance.now();
        await new Promise<void>((ok, fail) =>
          fs.write(f.fd, f.buf, 0, f.buf.length, i * f.buf.length, (err) => (err ? fail(err) : ok())),
        );
        f.lat.push(performance.now() - t);
      }
    }),
  );
  for (const f of files) {
    fs.closeSync(f.fd);
    const slow = f.lat.filter((x) => x > 4).length;
    const max = Math.max(...f.lat).toFixed(1);
    f.lat.sort((a, b) => a - b);
    const p999 = f.lat[Math.floor(f.lat.length * 0.999)]!.toFixed(3);
    summary(
      `${f.name}: ${f.buf.length}-byte appends, both files at once`,
      f.lat,
      `, p99.9 ${p999} ms, max ${max} ms, ${slow} over 4 ms`,
    );
  }
}

try {
  if (argv.includes('--pair')) {
    console.log(`${N} appends to each of two files in ${dir}`);
    await pair();
  } else {
    console.log(`${N} appends of 1 KiB in ${dir}`);
    blocking('O_DSYNC write', O_WRONLY | O_CREAT | O_DSYNC, false);
    blocking('write + fdatasync', O_WRONLY | O_CREAT, true);
    await pooled('O_DSYNC write', O_WRONLY | O_CREAT | O_DSYNC, false);
    await pooled('write + fdatasync', O_WRONLY | O_CREAT, true);
    await pooled('O_DSYNC write, file extended first', O_WRONLY | O_CREAT | O_DSYNC, false, true);
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
