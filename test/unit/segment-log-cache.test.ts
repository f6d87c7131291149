/** The log's read cache: recently written bytes served from memory once durable, within a bound. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SegmentLog } from '../../src/store/segment-log.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';

const SLAB = 1 << 20;
const frame = (i: number) => Buffer.alloc(100_000, i & 0xff);

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
    assert.equal(log.readRecent(p0, 100_000), null, 'not durable yet: nothing to serve');
    await log.whenDurable();
    assert.deepEqual(log.readRecent(p0, 100_000), frame(0));
    assert.deepEqual(log.readRecent(p0 + 10, 50), frame(0).subarray(10, 60));
    const p1 = log.appendFrame(frame(1));
    assert.deepEqual(log.readRecent(p0, 200_000), frame(0), 'cut at the durable end');
    await log.whenDurable();
    assert.deepEqual(log.readRecent(p0, 200_000), Buffer.concat([frame(0), frame(1)]));
    assert.deepEqual(log.readRecent(p1, 100_000), await log.read(p1, 100_000));
  });
});

test('the cache keeps at most its bound of closed slabs; older bytes come from the files', async () => {
  await withLog(2 * SLAB, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 60; i++) positions.push(log.appendFrame(frame(i))); // 10 frames a slab: 6 slabs
    await log.whenDurable();
    assert.ok(log.readCacheSize > 0 && log.readCacheSize <= 2 * SLAB, `${log.readCacheSize} bytes cached`);
    assert.equal(log.readRecent(positions[0]!, 100_000), null, 'evicted: the caller reads the files');
    assert.deepEqual(await log.read(positions[0]!, 100_000), frame(0));
    // The newest frames, including ones spanning two slabs, are all in memory and match the files.
    for (const i of [39, 40, 49, 50, 59]) {
      const p = positions[i]!;
      const mem = log.readRecent(p, 200_000);
      assert.ok(mem, `frame ${i} from memory`);
      assert.deepEqual(mem, await log.read(p, 200_000), `frame ${i}`);
    }
  });
});

test('with a bound of 0 nothing past the slab being filled is kept', async () => {
  await withLog(0, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 25; i++) positions.push(log.appendFrame(frame(i)));
    await log.whenDurable();
    assert.equal(log.readCacheSize, 0);
    assert.equal(log.readRecent(positions[0]!, 100_000), null);
    assert.deepEqual(log.readRecent(positions[24]!, 100_000), frame(24), 'the active slab still serves');
  });
});

test('truncation (recovery) forgets the cache', async () => {
  await withLog(4 * SLAB, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 30; i++) positions.push(log.appendFrame(frame(i)));
    await log.whenDurable();
    assert.ok(log.readRecent(positions[5]!, 100_000));
    await log.truncate(positions[10]!);
    assert.equal(log.readCacheSize, 0);
    assert.equal(log.readRecent(positions[5]!, 100_000), null);
    assert.equal(log.readRecent(positions[20]!, 100_000), null, 'cut away');
    const p = log.appendFrame(frame(200));
    assert.equal(p, positions[10]);
    await log.whenDurable();
    assert.deepEqual(log.readRecent(p, 100_000), frame(200));
  });
});
