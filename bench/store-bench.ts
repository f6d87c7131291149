/**
 * Storage benchmark (not a test): `npm run bench:store`.
 *
 * Prints, for 1 KiB records: raw sequential write speed of the disk; append throughput with async
 * flush; with sync flush and 1, 16 and 256 concurrent appenders; sequential read throughput by queue
 * offset (cold, after a reopen) and of the newest records (a consumer keeping up: the read cache);
 * recovery time of a 1 GiB log after kill -9; RSS while the log grows from 1 to 5 GiB.
 * Needs about 7 GiB free under .bench-data/ (removed afterwards).
 */
import { createWriteStream, rmSync, mkdirSync, openSync, fsyncSync, closeSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageStore, type MessageInput } from '../src/store/index.js';

const ROOT = join(fileURLToPath(new URL('..', import.meta.url)), '.bench-data');
const CHILD = fileURLToPath(new URL('./store-child.ts', import.meta.url));
const BODY = Buffer.alloc(1024, 0x61);
const GiB = 1024 ** 3;
const quick = process.argv.includes('--quick');
const rows: [string, string][] = [];

function report(name: string, value: string): void {
  rows.push([name, value]);
  console.log(`${name.padEnd(58)} ${value}`);
}

function freshDir(name: string): string {
  const dir = join(ROOT, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

let seq = 0;
function message(): MessageInput {
  const n = seq++;
  return {
    topic: 'BenchTopic',
    queueId: n & 7,
    messageId: `0A0000010000${n.toString(16).padStart(20, '0')}`,
    body: BODY,
    tag: 'TagA',
    keys: [`order-${n}`],
  };
}

/**
 * Process CPU time (every thread: the file system's thread pool too) per record since `since`.
 * Unlike a rate, it hardly moves when other work shares the machine.
 */
function cpuPerRecord(since: NodeJS.CpuUsage, records: number): string {
  const u = process.cpuUsage(since);
  return `${((u.user + u.system) / records).toFixed(2)} µs CPU/rec`;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const mbps = (bytes: number, s: number) => `${fmt(bytes / s / 1e6)} MB/s`;

async function rawDiskWrite(): Promise<number> {
  const dir = freshDir('raw');
  const path = join(dir, 'raw.bin');
  const total = quick ? GiB / 4 : GiB;
  const chunk = Buffer.alloc(1 << 20, 0x61);
  const t0 = performance.now();
  const ws = createWriteStream(path, { highWaterMark: 8 << 20 });
  for (let written = 0; written < total; written += chunk.length) {
    if (!ws.write(chunk)) await new Promise<void>((r) => ws.once('drain', () => r()));
  }
  await new Promise<void>((r) => ws.end(r));
  const fd = openSync(path, 'r');
  fsyncSync(fd);
  closeSync(fd);
  const s = (performance.now() - t0) / 1000;
  rmSync(dir, { recursive: true, force: true });
  report('raw sequential write (1 MiB writes + fsync)', mbps(total, s));
  return total / s;
}

/** `appenders` concurrent loops, each appending `batch` records per call, `total` records in all. */
async function appendRun(
  store: MessageStore,
  total: number,
  appenders: number,
  batch: number,
): Promise<{ rate: number; p50: number; p99: number }> {
  let left = total;
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: appenders }, async () => {
      while (left > 0) {
        const n = Math.min(batch, left);
        left -= n;
        const msgs = Array.from({ length: n }, message);
        const t = performance.now();
        await store.append(msgs);
        lat.push(performance.now() - t);
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  return {
    rate: total / s,
    p50: lat[Math.floor(lat.length * 0.5)]!,
    p99: lat[Math.floor(lat.length * 0.99)]!,
  };
}

async function appendBenchmarks(): Promise<string> {
  const total = quick ? 200_000 : 1_000_000;
  const dir = freshDir('async');
  let store = await MessageStore.open({ dataDir: dir, flush: 'async' });
  let r = await appendRun(store, total, 4, 128);
  report('async append, 4 appenders × batches of 128', `${fmt(r.rate)} rec/s (${mbps(r.rate * 1024, 1)})`);
  r = await appendRun(store, total / 2, 256, 1);
  report('async append, 256 appenders × 1 record', `${fmt(r.rate)} rec/s`);
  await store.close();

  for (const appenders of [1, 16, 256]) {
    const d = freshDir(`sync-${appenders}`);
    store = await MessageStore.open({ dataDir: d, flush: 'sync' });
    const n = appenders === 1 ? (quick ? 5_000 : 20_000) : appenders === 16 ? total / 4 : total / 2;
    r = await appendRun(store, n, appenders, 1);
    report(
      `sync append (group commit), ${appenders} appender(s) × 1 record`,
      `${fmt(r.rate)} rec/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`,
    );
    await store.close();
    rmSync(d, { recursive: true, force: true });
  }
  const d = freshDir('sync-batch');
  store = await MessageStore.open({ dataDir: d, flush: 'sync' });
  r = await appendRun(store, total, 16, 64);
  report('sync append, 16 appenders × batches of 64', `${fmt(r.rate)} rec/s`);
  await store.close();
  rmSync(d, { recursive: true, force: true });
  return dir;
}

async function readBenchmarks(dir: string): Promise<void> {
  const store = await MessageStore.open({ dataDir: dir });
  for (const [maxCount, concurrency] of [
    [256, 1],
    [256, 8],
  ] as const) {
    const queues = [0, 1, 2, 3, 4, 5, 6, 7];
    let records = 0;
    let bytes = 0;
    globalThis.gc?.(); // the append phase's garbage is not the reads'
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let q = queues.shift(); q !== undefined; q = queues.shift()) {
          const got = await readWholeQueue(store, q, maxCount);
          records += got.records;
          bytes += got.bytes;
        }
      }),
    );
    const s = (performance.now() - t0) / 1000;
    report(
      `sequential read by offset, ${concurrency} reader(s), ${maxCount}/read`,
      `${fmt(records / s)} rec/s, ${mbps(bytes, s)} of bodies, ${cpuPerRecord(cpu0, records)}`,
    );
  }
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

/** Read queue `q` of the bench topic from offset 0 to its end, `maxCount` records a read. */
async function readWholeQueue(
  store: MessageStore,
  q: number,
  maxCount: number,
): Promise<{ records: number; bytes: number }> {
  let records = 0;
  let bytes = 0;
  let offset = 0;
  for (;;) {
    const r = await store.read('BenchTopic', q, offset, { maxCount, maxBytes: maxCount * 1200 });
    if (r.messages.length === 0) break;
    records += r.messages.length;
    for (const m of r.messages) bytes += m.body.length;
    offset = r.nextOffset;
  }
  return { records, bytes };
}

/**
 * A consumer that keeps up reads what was just written: re-read the newest ~13 MB (within the
 * default 16 MiB log read cache) without reopening the store, with the caches on and off.
 */
async function headReadBenchmark(): Promise<void> {
  const total = 12_000;
  const passes = quick ? 20 : 50;
  for (const [label, caches] of [
    ['read caches on (default)', {}],
    ['read caches off', { logReadCacheBytes: 0, logChunkCacheBytes: 0, indexReadCacheEntries: 0 }],
  ] as const) {
    const dir = freshDir('head');
    const store = await MessageStore.open({ dataDir: dir, flush: 'async', ...caches });
    await appendRun(store, total, 4, 128);
    let records = 0;
    let bytes = 0;
    globalThis.gc?.(); // the append phase's garbage is not the reads'
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let p = 0; p < passes; p++) {
      for (let q = 0; q < 8; q++) {
        const got = await readWholeQueue(store, q, 256);
        records += got.records;
        bytes += got.bytes;
      }
    }
    const s = (performance.now() - t0) / 1000;
    report(
      `read of the newest 12,000 records, 1 reader, 256/read, ${label}`,
      `${fmt(records / s)} rec/s, ${mbps(bytes, s)} of bodies, ${cpuPerRecord(cpu0, records)}`,
    );
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Start the child, wait for `DONE`, kill -9 it; returns the progress lines. */
function fillAndKill(dir: string, bytes: number, checkpointMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, dir, String(bytes), String(checkpointMs)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines: string[] = [];
    createInterface({ input: child.stdout }).on('line', (l) => {
      lines.push(l);
      if (l.startsWith('DONE')) child.kill('SIGKILL');
    });
    child.on('exit', (_code, signal) =>
      signal === 'SIGKILL' ? resolve(lines) : reject(new Error('child failed')),
    );
  });
}

async function recoveryBenchmark(): Promise<void> {
  const size = quick ? GiB / 4 : GiB;
  for (const [label, ckpt] of [
    ['checkpoint every 1 s (default)', 1000],
    ['no checkpoint since start (full scan)', 2_000_000_000],
  ] as const) {
    const dir = freshDir('recovery');
    await fillAndKill(dir, size, ckpt);
    const t0 = performance.now();
    const store = await MessageStore.open({ dataDir: dir });
    const ms = performance.now() - t0;
    const rep = store.recoveryReport;
    report(
      `recovery of ${size / GiB} GiB after kill -9, ${label}`,
      `${fmt(ms)} ms (re-read ${fmt(rep.scannedBytes / 1e6)} MB, ${fmt(rep.recoveredRecords)} records)`,
    );
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function memoryBenchmark(): Promise<void> {
  const size = quick ? GiB : 5 * GiB;
  const dir = freshDir('memory');
  const lines = await fillAndKill(dir, size, 1000);
  const points = lines
    .map((l) => l.split(' '))
    .map(([, log, rss]) => `${(Number(log) / GiB).toFixed(1)} GiB → ${fmt(Number(rss) / 2 ** 20)} MiB`);
  report('RSS of the appending process as the log grows', points.join(', '));
  rmSync(dir, { recursive: true, force: true });
}

mkdirSync(ROOT, { recursive: true });
console.log(`Vela storage benchmark — node ${process.version}${quick ? ' (quick)' : ''}\n`);
let raw = 0;
if (process.argv.includes('--reads')) {
  // Reads only (iterating on the read path): the data of the async append run, then the reads.
  const dir = freshDir('async');
  const store = await MessageStore.open({ dataDir: dir, flush: 'async' });
  await appendRun(store, quick ? 200_000 : 1_000_000, 4, 128);
  await store.close();
  await readBenchmarks(dir);
  await headReadBenchmark();
} else {
  raw = await rawDiskWrite();
  const dir = await appendBenchmarks();
  await readBenchmarks(dir);
  await headReadBenchmark();
  await recoveryBenchmark();
  await memoryBenchmark();
}
rmSync(ROOT, { recursive: true, force: true });
console.log(
  `\n${raw ? `raw disk write speed: ${mbps(raw, 1)}\n\n` : ''}| measurement | result |\n| --- | --- |`,
);
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
