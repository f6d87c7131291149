/**
 * Small flushes (`inlineWriteBytes`) are written on the calling thread, larger ones through the thread
 * pool; after a write on the calling thread was slow, every log's writes go through the thread pool
 * for a while, and longer while small writes there still stall, so a slow disk cannot stall the event
 * loop at every flush; and only while one log of the process is writing alone. Either way the bytes
 * are durable before anyone hears so, and a failed write is refused the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { SegmentLog } from '../../src/store/segment-log.js';
import {
  INLINE_ALONE_MS,
  INLINE_PAUSE_MS,
  INLINE_SLOW_MS,
  InlineWriteGate,
} from '../../src/store/inline-writes.js';
import { nodeStoreFs, type StoreFs } from '../../src/store/store-fs.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';

interface Calls {
  sync: number;
  async: number;
}

interface TestFs {
  fs: StoreFs;
  calls: Calls;
  /** Milliseconds the last write was made to take (0: as fast as the disk). */
  lastDelay: () => number;
}

function countingFs(
  opts: {
    slowSyncMs?: () => number;
    slowAsyncMs?: () => number;
    failSync?: () => boolean;
    /** Where the last write's delay is kept (several logs on one disk share one). */
    last?: { ms: number };
  } = {},
): TestFs {
  const calls: Calls = { sync: 0, async: 0 };
  const last = opts.last ?? { ms: 0 };
  return {
    calls,
    lastDelay: () => last.ms,
    fs: {
      ...nodeStoreFs,
      writev: async (...args) => {
        calls.async++;
        const ms = (last.ms = opts.slowAsyncMs?.() ?? 0);
        if (ms > 0) await sleep(ms);
        return nodeStoreFs.writev(...args);
      },
      writevSync: (...args) => {
        calls.sync++;
        if (opts.failSync?.()) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
        const ms = (last.ms = opts.slowSyncMs?.() ?? 0);
        // A disk that takes this long: the calling thread is blocked, as by a slow write.
        if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
        return nodeStoreFs.writevSync(...args);
      },
    },
  };
}

/**
 * Judges each write by the delay the test gave it, not by the clock: the real disk under the test's
 * files may be slow at any moment (a CI machine's more than most), which would pause writes on the
 * calling thread where a test expects none.
 */
class TestGate extends InlineWriteGate {
  constructor(private readonly delay: () => number) {
    super();
  }
  override wroteOnLoop(started: number): number {
    return super.wroteOnLoop(started, this.delay());
  }
  override wroteInPool(started: number): number {
    return super.wroteInPool(started, this.delay());
  }
}

/** Append a frame and wait until it is durable; returns its position. */
async function append(log: SegmentLog, frame: Buffer): Promise<number> {
  const position = log.appendFrame(frame);
  await log.whenDurable();
  return position;
}

async function openLog(
  dir: string,
  { fs, lastDelay }: TestFs,
  inlineWriteBytes: number,
  // Each test its own: the process's gate would carry one test's slow writes into the next.
  inlineGate: InlineWriteGate = new TestGate(lastDelay),
): Promise<SegmentLog> {
  const log = await SegmentLog.open({
    inlineGate,
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
  const disk = countingFs();
  const { calls } = disk;
  const log = await openLog(dir.path, disk, 4096);
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
  const disk = countingFs();
  const { calls } = disk;
  const log = await openLog(dir.path, disk, 0);
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
  const disk = countingFs({ slowSyncMs: () => slowMs });
  const { calls } = disk;
  const log = await openLog(dir.path, disk, 4096);
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

test("a slow write on the calling thread keeps every log's writes off it (they share the disk)", async () => {
  const dirA = tempDir();
  const dirB = tempDir();
  let slowMs = 0;
  const last = { ms: 0 };
  const a = countingFs({ slowSyncMs: () => slowMs, last });
  const b = countingFs({ last });
  const gate = new TestGate(a.lastDelay);
  const logA = await openLog(dirA.path, a, 4096, gate);
  const logB = await openLog(dirB.path, b, 4096, gate);
  try {
    for (const log of [logA, logB]) await append(log, Buffer.alloc(100)); // creates the segment
    // Each log writes alone below: the other one's last flush is older than INLINE_ALONE_MS.
    await sleep(INLINE_ALONE_MS + 20);
    await append(logB, Buffer.alloc(100));
    assert.equal(b.calls.sync, 1, 'a fast disk: the second log writes on the calling thread');

    await sleep(INLINE_ALONE_MS + 20);
    slowMs = INLINE_SLOW_MS + 5;
    await append(logA, Buffer.alloc(100));
    assert.equal(a.calls.sync, 1, 'the slow write itself was on the calling thread');
    slowMs = 0;
    await sleep(INLINE_ALONE_MS + 20);
    const asyncBefore = b.calls.async;
    await append(logB, Buffer.alloc(100));
    assert.equal(b.calls.sync, 1, "then the other log's writes are not on the calling thread either");
    assert.equal(b.calls.async, asyncBefore + 1, 'but through the thread pool');
  } finally {
    await logA.close();
    await logB.close();
    dirA.cleanup();
    dirB.cleanup();
  }
});

test('a log writes on the calling thread only while no other log of the process is writing', async () => {
  const dirA = tempDir();
  const dirB = tempDir();
  const a = countingFs();
  const b = countingFs();
  const gate = new TestGate(() => 0);
  const logA = await openLog(dirA.path, a, 4096, gate);
  const logB = await openLog(dirB.path, b, 4096, gate);
  try {
    for (const log of [logA, logB]) await append(log, Buffer.alloc(100)); // creates the segment
    await sleep(INLINE_ALONE_MS + 20);
    for (let i = 0; i < 3; i++) await append(logA, Buffer.alloc(100));
    assert.equal(a.calls.sync, 3, 'writing alone: on the calling thread');

    // Both logs writing (messages consumed as they are stored): neither writes on the calling thread.
    const asyncA = a.calls.async;
    const asyncB = b.calls.async;
    for (let i = 0; i < 3; i++) {
      await append(logB, Buffer.alloc(100));
      await append(logA, Buffer.alloc(100));
    }
    assert.equal(b.calls.sync, 0, 'the second log, while the first writes: through the thread pool');
    assert.equal(a.calls.sync, 3, 'and the first, while the second writes, too');
    assert.equal(b.calls.async, asyncB + 3);
    assert.equal(a.calls.async, asyncA + 3);

    // The first log stops writing: the second is alone again once its last flush is old enough.
    await append(logB, Buffer.alloc(100));
    assert.equal(b.calls.sync, 0, 'the first flushed moments ago');
    await sleep(INLINE_ALONE_MS + 20);
    await append(logB, Buffer.alloc(100));
    assert.equal(b.calls.sync, 1, 'alone again: on the calling thread');
  } finally {
    await logA.close();
    await logB.close();
    dirA.cleanup();
    dirB.cleanup();
  }
});

test('while writes are off the calling thread, a small write that is slow in the thread pool extends the pause', async () => {
  const dir = tempDir();
  let slowSyncMs = 0;
  let slowAsyncMs = 0;
  const disk = countingFs({ slowSyncMs: () => slowSyncMs, slowAsyncMs: () => slowAsyncMs });
  const { calls } = disk;
  const log = await openLog(dir.path, disk, 4096);
  try {
    await append(log, Buffer.alloc(100)); // creates the segment
    slowSyncMs = INLINE_SLOW_MS + 5;
    await append(log, Buffer.alloc(100));
    slowSyncMs = 0;
    assert.equal(calls.sync, 1, 'a slow write on the calling thread: a pause begins');

    await sleep(INLINE_PAUSE_MS / 2);
    // The disk is slow again while writes go through the thread pool.
    slowAsyncMs = INLINE_SLOW_MS + 20;
    await append(log, Buffer.alloc(100));
    slowAsyncMs = 0;
    assert.equal(calls.sync, 1, 'the slow write went through the thread pool');

    // Past the end of the first pause, but not of a pause counted from the slow write.
    await sleep(INLINE_PAUSE_MS / 2 + 100);
    const asyncBefore = calls.async;
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 1, 'the slow write in the thread pool kept writes off the calling thread');
    assert.equal(calls.async, asyncBefore + 1);

    // The disk is still slow: the pause from that write is the next one, twice the first.
    await sleep(2 * INLINE_PAUSE_MS);
    await append(log, Buffer.alloc(100));
    assert.equal(calls.sync, 2, 'after that pause, on the calling thread again');
  } finally {
    await log.close();
    dir.cleanup();
  }
});

test('while the event loop is busy, small flushes go through the thread pool too', async () => {
  const dir = tempDir();
  const disk = countingFs();
  const { calls } = disk;
  const log = await openLog(dir.path, disk, 4096);
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
  const disk = countingFs({ failSync: () => fail });
  const { calls } = disk;
  const log = await openLog(dir.path, disk, 4096);
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
