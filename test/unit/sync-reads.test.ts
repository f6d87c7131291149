/**
 * Reads of bytes taken to be in the page cache (the newest `syncReadBytes` of the log, the newest
 * `syncReadEntries` of a queue index) are made on the calling thread; older ones go through the
 * thread pool, so a disk read never stalls the event loop. Both give the same bytes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SegmentLog } from '../../src/store/segment-log.js';
import { QueueIndex } from '../../src/store/queue-index.js';
import { nodeStoreFs, type StoreFs } from '../../src/store/store-fs.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';

function countingFs(): { fs: StoreFs; calls: { sync: number; async: number } } {
  const calls = { sync: 0, async: 0 };
  return {
    calls,
    fs: {
      ...nodeStoreFs,
      read: (...args) => {
        calls.async++;
        return nodeStoreFs.read(...args);
      },
      readSync: (...args) => {
        calls.sync++;
        return nodeStoreFs.readSync(...args);
      },
    },
  };
}

test('the log reads its newest bytes on the calling thread, older ones through the thread pool', async () => {
  const dir = tempDir();
  const { fs, calls } = countingFs();
  const log = await SegmentLog.open({
    dir: dir.path,
    segmentSize: 1 << 20,
    flush: 'sync',
    flushIntervalMs: 1000,
    logger: silentLogger(),
    fs,
    syncReadBytes: 10_000,
  });
  try {
    const positions: number[] = [];
    for (let i = 0; i < 20; i++) positions.push(log.appendFrame(Buffer.alloc(1000, i)));
    await log.whenDurable();
    assert.deepEqual(await log.read(positions[0]!, 1000), Buffer.alloc(1000, 0), 'the oldest');
    assert.deepEqual(calls, { sync: 0, async: 1 }, '19,000 bytes behind the newest: thread pool');
    assert.deepEqual(await log.read(positions[15]!, 1000), Buffer.alloc(1000, 15), 'a new one');
    assert.equal(calls.sync, 1, 'within 10,000 bytes of the newest: on the calling thread');
    assert.equal(calls.async, 1);
  } finally {
    await log.close();
    dir.cleanup();
  }
});

test('a queue index reads its newest entries on the calling thread, older ones through the thread pool', async () => {
  const dir = tempDir();
  const { fs, calls } = countingFs();
  const q = QueueIndex.create('T', 0, dir.path, 8, fs, 0, 10);
  try {
    for (let i = 0; i < 30; i++) q.add(i * 100, 1000 + i, 100, 0);
    q.commitBelow(Infinity);
    await q.persist();
    const old = await q.read(0, 4);
    assert.deepEqual(
      old.map((e) => e.logPosition),
      [0, 100, 200, 300],
    );
    assert.equal(calls.async > 0 && calls.sync === 0, true, 'entries 30 behind: thread pool');
    const before = calls.async;
    const recent = await q.read(24, 4);
    assert.deepEqual(
      recent.map((e) => e.logPosition),
      [2400, 2500, 2600, 2700],
    );
    assert.equal(calls.async, before, 'the newest 10 entries: no thread-pool read');
    assert.ok(calls.sync > 0);
  } finally {
    await q.close();
    dir.cleanup();
  }
});
