/**
 * Small flushes (`inlineWriteBytes`) are written on the calling thread, larger ones through the thread
 * pool; after a write on the calling thread was slow, every write goes through the thread pool for a
 * while, so a slow disk cannot stall the event loop at every flush. Either way the bytes are durable
 * before anyone hears so, and a failed write is refused the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { INLINE_PAUSE_MS, INLINE_SLOW_MS, SegmentLog } from '../../src/store/segment-log.js';
import { nodeStoreFs, type StoreFs } from '../../src/store/store-fs.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';

interface Calls {
  sync: number;
  async: number;
}

function countingFs(opts: { slowSyncMs?: () => number; failSync?: () => boolean } = {}): {
  fs: StoreFs;
  calls: Calls;
} {
  const calls: Calls = { sync: 0, async: 0 };
  return {
    calls,
    fs: {
      ...nodeStoreFs,
      writev: (...args) => {
        calls.async++;
        return nodeStoreFs.writev(...args);
      },
      writevSync: (...args) => {
        calls.sync++;
        if (opts.failSync?.()) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
        const ms = opts.slowSyncMs?.() ?? 0;
        // A disk that takes this long: the calling thread is blocked, as by a slow write.
        if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
        return nodeStoreFs.writevSync(...args);
      },
    },
  };
}

/** Append a frame and wait until it is durable; returns its position. */
async function append(log: SegmentLog, frame: Buffer): Promise<number> {
  const position = log.appendFrame(frame);
  await log.whenDurable();
  return position;
}

async function openLog(dir: string, fs: StoreFs, inlineWriteBytes: number): Promise<SegmentLog> {
  const log = await SegmentLog.open({
    dir,
    segmentSize: 1 << 20,
    flush: 'sync',
    flushIntervalMs: 1000,
    logger: silentLogger(),
    fs,
    inlineWriteBytes,
  });
  await log.scan(0, () => {});
  // An idle loop for a whole measuring window (loop-load.ts), whatever the test before did.
  await sleep(150);
  return log;
}

test('flushes up to inlineWriteBytes are written on the calling thread, larger ones in the thread pool', async () => {
  const dir = tempDir();
  const { fs, calls } = countingFs();
  const log = await openLog(dir.path, fs, 4096);
  try {
    // The segment's first write opens (creates) it through the thread pool.
    await append(log, Buffer.alloc(100, 1));
    const afterOpen = { ...calls };
    assert.equal(afterOpen.sync, 0, 'a segment being created is written through the thread pool');

    const small = log.appendFrame(Buffer.alloc(1000, 2));
    await log.whenDurable();
    assert.equal(calls.sync, afterOpen.sync + 1, 'a 1,000-byte flush: on the calling thread');
    assert.equal(calls.async, afterOpen.async);

    const big = log.appendFrame(Buffer.alloc(10_000, 3));
    await log.whenDurable();
    assert.equal(calls.async, afterOpen.async + 1, 'a 10,000-byte flush: through the thread pool');
    assert.equal(calls.sync, afterOpen.sync + 1);

    assert.deepEqual(await log.read(small, 1000), Buffer.alloc(1000, 2));
    assert.deepEqual(await log.read(big, 10_000), Buffer.alloc(10_000, 3));
  } finally {
    await log.close();
    dir.cleanup();
  }
});

test('inlineWriteBytes 0 writes every flush through the thread pool', async () => {
  const dir = tempDir();
  const { fs, calls } = countingFs();
  const log = await openLog(dir.path, fs, 0);
  try {
    for (let i = 0; i < 5; i++) await append(log, Buffer.alloc(100, i));
    assert.equal(calls.sync, 0);
    assert.equal(calls.async, 5);
  } finally {
    await log.close();
    dir.cleanup();
  }
});

test('after a slow write on the calling thread, writes go through the thread pool for a while, longer while they stay slow', async () => {
  const dir = tempDir();
  let slowMs = 0;
  const { fs, calls } = countingFs({ slowSyncMs: () => slowMs });
  const log = await openLog(dir.path, fs, 4096);
  try {
    await append(log, Buffer.alloc(100)); // creates the segment
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 1, 'a fast disk: on the calling thread');

    slowMs = INLINE_SLOW_MS + 5;
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 2, 'the slow write itself was on the calling thread');
    slowMs = 0;
    const asyncBefore = calls.async;
    for (let i = 0; i < 3; i++) await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 2, 'then none on the calling thread');
    assert.equal(calls.async, asyncBefore + 3, 'but through the thread pool');

    await sleep(INLINE_PAUSE_MS + 50);
    slowMs = INLINE_SLOW_MS + 5;
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 3, 'after the pause: on the calling thread again (and slow again)');
    slowMs = 0;
    await sleep(INLINE_PAUSE_MS + 50);
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 3, 'a second slow write in a row: a pause twice as long');
    await sleep(INLINE_PAUSE_MS + 100);
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 4, 'after it: on the calling thread again');
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 5, 'fast again: no pause');
  } finally {
    await log.close();
    dir.cleanup();
  }
});

test('while the event loop is busy, small flushes go through the thread pool too', async () => {
  const dir = tempDir();
  const { fs, calls } = countingFs();
  const log = await openLog(dir.path, fs, 4096);
  try {
    await append(log, Buffer.alloc(100)); // creates the segment
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 1, 'an idle loop: on the calling thread');

    // A loop with no time to spare: busy for the whole of the last measuring window.
    const until = performance.now() + 150;
    while (performance.now() < until);
    const asyncBefore = calls.async;
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 1, 'a busy loop: not on the calling thread');
    assert.equal(calls.async, asyncBefore + 1, 'but through the thread pool');
  } finally {
    await log.close();
    dir.cleanup();
  }
});

test('a failed write on the calling thread is refused and never acknowledged', async () => {
  const dir = tempDir();
  let fail = false;
  const { fs, calls } = countingFs({ failSync: () => fail });
  const log = await openLog(dir.path, fs, 4096);
  try {
    const kept = await append(log, Buffer.alloc(100, 1));
    fail = true;
    await assert.rejects(append(log, Buffer.alloc(100, 2)), /read-only|EIO/);
    assert.equal(calls.sync, 1, 'the write that failed was on the calling thread');
    fail = false;
    await assert.rejects(
      append(log, Buffer.alloc(100, 3)),
      /read-only/,
      'EIO is fatal: the log stays read-only',
    );
    assert.deepEqual(await log.read(kept, 100), Buffer.alloc(100, 1), 'what was durable is still there');
  } finally {
    await log.close();
    dir.cleanup();
  }
});
