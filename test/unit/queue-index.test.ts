import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { QueueIndex } from '../../src/store/queue-index.js';
import { nodeStoreFs, type StoreFs } from '../../src/store/store-fs.js';
import { tempDir } from '../helpers.js';

/** Entry i: record at position i*100, stored at time 1000 + 10*i (with a run of equal times). */
function fill(q: QueueIndex, n: number): void {
  for (let i = 0; i < n; i++)
    q.add(i * 100, 1000 + 10 * Math.min(i, 20) + 10 * Math.max(0, i - 25), 100, i % 3);
}

test('entries become readable only once committed, then read across files and memory', async () => {
  const dir = tempDir();
  try {
    const q = QueueIndex.create('T', 0, dir.path, 8);
    fill(q, 30);
    assert.deepEqual(await q.read(0, 10), [], 'nothing is readable before the log is durable');
    assert.equal(q.commitBelow(1450), false);
    assert.equal(q.committed, 15);
    await q.persist();
    assert.equal(readdirSync(dir.path).length, 2, 'files of 8 entries');
    q.commitBelow(Infinity);
    const all = await q.read(0, 100);
    assert.deepEqual(
      all.map((e) => e.offset),
      Array.from({ length: 30 }, (_, i) => i),
    );
    assert.deepEqual(
      all.map((e) => e.logPosition),
      Array.from({ length: 30 }, (_, i) => i * 100),
    );
    assert.deepEqual(all[4], { offset: 4, logPosition: 400, storeTimestamp: 1040, size: 100, tagHash: 1 });
    assert.deepEqual(
      (await q.read(13, 4)).map((e) => e.offset),
      [13, 14, 15, 16],
      'spanning disk and memory',
    );
    await q.close();
  } finally {
    dir.cleanup();
  }
});

test('time search finds the first entry at or after a timestamp', async () => {
  const dir = tempDir();
  try {
    const q = QueueIndex.create('T', 0, dir.path, 8);
    fill(q, 40);
    q.commitBelow(Infinity);
    await q.persist();
    assert.equal(await q.offsetForTimestamp(0), 0);
    assert.equal(await q.offsetForTimestamp(1040), 4);
    assert.equal(await q.offsetForTimestamp(1041), 5);
    assert.equal(await q.offsetForTimestamp(1200), 20, 'first of a run of equal times');
    assert.equal(await q.offsetForTimestamp(99_999), 40, 'past the end: the max offset');
    await q.close();
  } finally {
    dir.cleanup();
  }
});

test('rollback forgets uncommitted entries; reload restores from files', async () => {
  const dir = tempDir();
  try {
    const q = QueueIndex.create('T', 1, dir.path, 8);
    fill(q, 20);
    q.commitBelow(1000);
    q.rollback();
    assert.equal(q.nextOffset, 10);
    assert.equal(q.add(5000, 9999, 100, 0), 10, 'offsets continue after the rollback');
    q.commitBelow(Infinity);
    await q.close();
    const again = await QueueIndex.load('T', 1, dir.path, 8);
    assert.equal(again.nextOffset, 11);
    assert.equal((await again.entryAt(10))!.logPosition, 5000);
    assert.equal(again.lastStoreTimestamp, 9999);
    await again.close();
  } finally {
    dir.cleanup();
  }
});

test('retention moves minOffset and deletes whole files; truncation cuts by count and by position', async () => {
  const dir = tempDir();
  try {
    const q = QueueIndex.create('T', 0, dir.path, 8);
    fill(q, 30);
    q.commitBelow(Infinity);
    await q.persist();
    await q.applyLogStart(1750);
    assert.equal(q.minOffset, 18);
    assert.deepEqual(readdirSync(dir.path).sort(), ['00000000000000000016.cq', '00000000000000000024.cq']);
    assert.deepEqual(
      (await q.read(0, 2)).map((e) => e.offset),
      [18, 19],
      'reads start at minOffset',
    );
    assert.equal(await q.truncateFromPosition(2500), 5);
    assert.equal(q.nextOffset, 25);
    assert.equal(await q.truncateTo(20), 5);
    assert.equal(q.nextOffset, 20);
    assert.deepEqual(readdirSync(dir.path), ['00000000000000000016.cq']);
    assert.equal(q.add(9000, 9000, 1, 0), 20);
    await q.close();
  } finally {
    dir.cleanup();
  }
});

test('a window of recently written entries is read from memory; older ones from the files', async () => {
  const dir = tempDir();
  let reads = 0;
  const counting: StoreFs = {
    ...nodeStoreFs,
    read: (...args) => {
      reads++;
      return nodeStoreFs.read(...args);
    },
  };
  try {
    const q = QueueIndex.create('T', 0, dir.path, 8, counting, 8);
    fill(q, 30);
    q.commitBelow(Infinity);
    await q.persist();
    assert.equal(q.entriesInMemory, 8, 'the window is bounded');
    assert.deepEqual(
      (await q.read(22, 100)).map((e) => e.logPosition),
      [2200, 2300, 2400, 2500, 2600, 2700, 2800, 2900],
    );
    assert.equal(reads, 0, 'the newest entries need no index read');
    const all = await q.read(0, 100);
    assert.deepEqual(
      all.map((e) => [e.offset, e.logPosition]),
      Array.from({ length: 30 }, (_, i) => [i, i * 100]),
    );
    assert.ok(reads > 0, 'older entries come from the files');
    // Entries added, one uncommitted and rolled back: the window moves on, reads stay contiguous.
    q.add(3000, 5000, 100, 0);
    q.add(3100, 5001, 100, 0);
    q.commitBelow(3100);
    q.rollback();
    await q.persist();
    assert.equal(q.entriesInMemory, 8);
    assert.deepEqual(
      (await q.read(20, 100)).map((e) => e.offset),
      Array.from({ length: 11 }, (_, i) => 20 + i),
    );
    assert.equal(q.lastStoreTimestamp, 5000);
    // Recovery's truncation empties the window; reads come from the files and stay right.
    assert.equal(await q.truncateTo(25), 6);
    assert.equal(q.entriesInMemory, 0);
    assert.deepEqual(
      (await q.read(20, 100)).map((e) => e.logPosition),
      [2000, 2100, 2200, 2300, 2400],
    );
    assert.equal(q.add(7777, 6000, 1, 0), 25);
    q.commitBelow(Infinity);
    assert.equal((await q.entryAt(25))!.logPosition, 7777);
    await q.close();
  } finally {
    dir.cleanup();
  }
});
