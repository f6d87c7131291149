/**
 * A queue read served from the log's memory (the records a consumer asks for right after they were
 * written): `node --import tsx bench/recent-read.ts [--queues N] [--batch N] [--body BYTES] [--vs DIR]`.
 * Appends 8,192 messages spread over N queues (the log interleaves them), then reads every queue
 * from its start in batches, again and again, and prints the time per message read. `--vs DIR`
 * alternates rounds with another checkout's compiled store, so both are measured in one process at
 * the same moment; then both sides run compiled (`dist/store/index.js`: build each checkout with
 * `npx tsc -p tsconfig.build.json` first), as tsx's module wrapping would tilt the comparison.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as StoreModule from '../src/store/index.js';

type Store = typeof StoreModule;

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const QUEUES = option('--queues', 8);
const BATCH = option('--batch', 32);
const BODY = option('--body', 1024);
const MESSAGES = 8192;
const ROUNDS = 15;
const vsAt = process.argv.indexOf('--vs');
const vsDir = vsAt > 0 ? process.argv[vsAt + 1] : undefined;

interface Side {
  name: string;
  store: Awaited<ReturnType<Store['MessageStore']['open']>>;
  dir: string;
  nsPerMessage: number[];
}

async function open(name: string, lib: Store): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), 'vela-recent-read-'));
  // A read cache that holds everything appended: every read is served from memory.
  const store = await lib.MessageStore.open({ dataDir: dir, flush: 'async', logReadCacheBytes: 64 << 20 });
  const body = Buffer.alloc(BODY, 7);
  for (let i = 0; i < MESSAGES; i += 256) {
    const batch = [];
    for (let k = i; k < i + 256; k++)
      batch.push({ topic: 'T', queueId: k % QUEUES, body, messageId: `m${k}` });
    await store.append(batch);
  }
  return { name, store, dir, nsPerMessage: [] };
}

async function round(side: Side): Promise<void> {
  let read = 0;
  const t = process.hrtime.bigint();
  for (let q = 0; q < QUEUES; q++) {
    for (let offset = 0; ;) {
      const r = await side.store.read('T', q, offset, { maxCount: BATCH });
      if (r.status !== 'FOUND') break;
      read += r.messages.length;
      offset = r.nextOffset;
    }
  }
  const ns = Number(process.hrtime.bigint() - t);
  if (read !== MESSAGES) throw new Error(`${side.name}: read ${read} of ${MESSAGES}`);
  side.nsPerMessage.push(ns / read);
}

const compiled = (dir: string) => import(join(dir, 'dist/store/index.js')) as Promise<Store>;
const here = vsDir
  ? await compiled(fileURLToPath(new URL('..', import.meta.url)))
  : ((await import('../src/store/index.js')) as Store);
const sides = [await open('this checkout', here)];
if (vsDir) sides.push(await open(vsDir, await compiled(vsDir)));
try {
  for (const s of sides) await round(s); // warm-up
  for (const s of sides) s.nsPerMessage.length = 0;
  for (let r = 0; r < ROUNDS; r++) for (const s of sides) await round(s);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  console.log(
    `${MESSAGES} messages of ${BODY} bytes over ${QUEUES} queues, read back in batches of ${BATCH} from memory; median of ${ROUNDS} rounds`,
  );
  for (const s of sides) {
    console.log(`${s.name.padEnd(24)} ${median(s.nsPerMessage).toFixed(0).padStart(6)} ns per message read`);
  }
} finally {
  for (const s of sides) {
    await s.store.close();
    rmSync(s.dir, { recursive: true, force: true });
  }
}
