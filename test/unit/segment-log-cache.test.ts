/** The log's read cache: recently written bytes served from memory once durable, within a bound. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SegmentLog } from '../../src/store/segment-log.js';
import { MessageStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';

const SLAB = 1 << 20;
const frame = (i: number) => Buffer.alloc(100_000, i & 0xff);

/** What `copyRecent` serves of [p, p + n) from memory, or null. */
function recent(log: SegmentLog, p: number, n: number): Buffer | null {
  const out = Buffer.alloc(n);
  return log.copyRecent(p, n, out, 0) ? out : null;
}

async function withLog(readCacheBytes: number, fn: (log: SegmentLog) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const log = await SegmentLog.open({
    dir: dir.path,
    segmentSize: 64 * SLAB,
    flush: 'async',
    flushIntervalMs: 3_600_000,
    logger: silentLogger(),
    readCacheBytes,
  });
  try {
    await fn(log);
  } finally {
    await log.close();
    dir.cleanup();
  }
}

test('bytes are served from memory only once durable, and equal what the files hold', async () => {
  await withLog(2 * SLAB, async (log) => {
    const p0 = log.appendFrame(frame(0));
    assert.equal(recent(log, p0, 100_000), null, 'not durable yet: nothing to serve');
    await log.whenDurable();
    assert.deepEqual(recent(log, p0, 100_000), frame(0));
    assert.deepEqual(recent(log, p0 + 10, 50), frame(0).subarray(10, 60));
    const p1 = log.appendFrame(frame(1));
    assert.equal(recent(log, p0, 200_000), null, 'not all of it durable: nothing served');
    assert.deepEqual(recent(log, p0, 100_000), frame(0));
    await log.whenDurable();
    assert.deepEqual(recent(log, p0, 200_000), Buffer.concat([frame(0), frame(1)]));
    assert.deepEqual(recent(log, p1, 100_000), await log.read(p1, 100_000));
  });
});

test('a copy lands at the offset asked for, and a refused one leaves the target as it was', async () => {
  await withLog(2 * SLAB, async (log) => {
    const p0 = log.appendFrame(frame(3));
    await log.whenDurable();
    const into = Buffer.alloc(30, 0xee);
    assert.equal(log.copyRecent(p0 + 5, 10, into, 12), true);
    assert.deepEqual(
      into,
      Buffer.concat([Buffer.alloc(12, 0xee), Buffer.alloc(10, 3), Buffer.alloc(8, 0xee)]),
    );
    assert.equal(log.holdsRecent(p0), true);
    log.appendFrame(frame(4));
    const before = Buffer.from(into);
    assert.equal(log.copyRecent(p0 + 99_990, 20, into, 0), false, 'runs into bytes not yet durable');
    assert.deepEqual(into, before);
  });
});

test('the cache keeps at most its bound of closed slabs; older bytes come from the files', async () => {
  await withLog(2 * SLAB, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 60; i++) positions.push(log.appendFrame(frame(i))); // 10 frames a slab: 6 slabs
    await log.whenDurable();
    assert.ok(log.readCacheSize > 0 && log.readCacheSize <= 2 * SLAB, `${log.readCacheSize} bytes cached`);
    assert.equal(recent(log, positions[0]!, 100_000), null, 'evicted: the caller reads the files');
    assert.deepEqual(await log.read(positions[0]!, 100_000), frame(0));
    // The newest frames, including ones spanning two slabs, are all in memory and match the files.
    for (const i of [39, 40, 49, 50, 59]) {
      const p = positions[i]!;
      const n = i === 59 ? 100_000 : 200_000; // the last frame ends the durable bytes
      const mem = recent(log, p, n);
      assert.ok(mem, `frame ${i} from memory`);
      assert.deepEqual(mem, await log.read(p, n), `frame ${i}`);
    }
  });
});

test('with a bound of 0 nothing past the slab being filled is kept', async () => {
  await withLog(0, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 25; i++) positions.push(log.appendFrame(frame(i)));
    await log.whenDurable();
    assert.equal(log.readCacheSize, 0);
    assert.equal(recent(log, positions[0]!, 100_000), null);
    assert.deepEqual(recent(log, positions[24]!, 100_000), frame(24), 'the active slab still serves');
  });
});

test('truncation (recovery) forgets the cache', async () => {
  await withLog(4 * SLAB, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 30; i++) positions.push(log.appendFrame(frame(i)));
    await log.whenDurable();
    assert.ok(recent(log, positions[5]!, 100_000));
    await log.truncate(positions[10]!);
    assert.equal(log.readCacheSize, 0);
    assert.equal(recent(log, positions[5]!, 100_000), null);
    assert.equal(recent(log, positions[20]!, 100_000), null, 'cut away');
    const p = log.appendFrame(frame(200));
    assert.equal(p, positions[10]);
    await log.whenDurable();
    assert.deepEqual(recent(log, p, 100_000), frame(200));
  });
});

test("a queue's read from memory copies its own records, not the other queues' in between", async () => {
  const dir = tempDir();
  const store = await MessageStore.open({ dataDir: dir.path, flush: 'sync' });
  try {
    // Eight queues interleaved in the log, 1 KiB bodies: queue 3's 32 records span ~256 KiB.
    const batch = [];
    for (let i = 0; i < 256; i++) {
      batch.push({ topic: 'T', queueId: i % 8, body: Buffer.alloc(1024, i & 0xff), messageId: `m${i}` });
    }
    await store.append(batch);
    const r = await store.read('T', 3, 0, { maxCount: 32 });
    assert.equal(r.status, 'FOUND');
    assert.deepEqual(
      r.messages.map((m) => m.messageId),
      Array.from({ length: 32 }, (_, k) => `m${8 * k + 3}`),
    );
    const own = r.messages.reduce((n, m) => n + m.size, 0);
    for (const m of r.messages) {
      assert.deepEqual(m.body, Buffer.alloc(1024, (m.queueOffset * 8 + 3) & 0xff));
      // What a message keeps alive is its read's buffer: the 32 records, not the span they lie in.
      assert.ok(m.body.buffer.byteLength <= own, `${m.body.buffer.byteLength} bytes held (records: ${own})`);
    }
  } finally {
    await store.close();
    dir.cleanup();
  }
});
