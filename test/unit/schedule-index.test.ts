/** The schedule index's slab files: entries, marks, duplicates, torn tails, labels, summaries. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScheduleIndex, ScheduleKind } from '../../src/store/index.js';
import { ENTRY_SIZE } from '../../src/store/schedule-index.js';
import { tempDir } from '../helpers.js';

const positions = (a: { length: number; position: Float64Array }) =>
  Array.from(a.position.subarray(0, a.length)).sort((x, y) => x - y);

test('entries land in the slab of their due time; marks fold into each entry’s state', async () => {
  const dir = tempDir();
  try {
    const ix = await ScheduleIndex.open({ dir: dir.path, sync: true, slabMs: 1000 });
    const topic = await ix.ensureLabel('Orders');
    ix.add([
      { due: 10_100, position: 1, label: topic },
      { due: 10_900, position: 2, label: topic },
      { due: 11_000, position: 3, label: topic }, // next slab
      { due: 10_500, position: 4, label: topic },
      { due: 10_600, position: 5, label: topic },
    ]);
    assert.deepEqual(ix.slabs(), [10_000, 11_000]);
    await ix.mark(ScheduleKind.CANCELLED, [{ due: 10_900, position: 2, label: topic }], true);
    await ix.mark(ScheduleKind.DISPATCHING, [{ due: 10_500, position: 4, label: topic }], true);
    await ix.mark(ScheduleKind.DISPATCHING, [{ due: 10_600, position: 5, label: topic }], true);
    await ix.mark(ScheduleKind.DONE, [{ due: 10_600, position: 5, label: topic }], false);
    const s = await ix.load(10_000);
    assert.deepEqual(positions(s.pending), [1]);
    assert.deepEqual(positions(s.uncertain), [4], 'a delivery begun and never marked done is uncertain');
    assert.deepEqual([...s.cancelled], [2]);
    assert.equal(s.maxPosition, 5);
    assert.equal(s.pending.due[0], 10_100);
    assert.equal(s.pending.label[0], topic);
    const next = await ix.load(11_000);
    assert.deepEqual(positions(next.pending), [3]);
    await ix.close();
  } finally {
    dir.cleanup();
  }
});

test('an entry indexed twice counts once; a mark written before its entry still applies', async () => {
  const dir = tempDir();
  try {
    const ix = await ScheduleIndex.open({ dir: dir.path, sync: false, slabMs: 1000 });
    const l = await ix.ensureLabel('T');
    await ix.mark(ScheduleKind.DONE, [{ due: 5_500, position: 7, label: l }], false);
    ix.add([{ due: 5_500, position: 7, label: l }]);
    ix.add([{ due: 5_400, position: 8, label: l }]);
    ix.add([{ due: 5_400, position: 8, label: l }]);
    const s = await ix.load(5_000);
    assert.deepEqual(positions(s.pending), [8]);
    assert.equal(s.uncertain.length, 0);
    const [summary] = await ix.summarize();
    assert.equal(summary!.start, 5_000);
    assert.deepEqual([...summary!.counts], [[l, 1]]);
    await ix.close();
  } finally {
    dir.cleanup();
  }
});

test('survives reopening: labels, slab span, entries; a torn tail is ignored and later writes realign', async () => {
  const dir = tempDir();
  try {
    let ix = await ScheduleIndex.open({ dir: dir.path, sync: true, slabMs: 2000 });
    const a = await ix.ensureLabel('A');
    const b = await ix.ensureLabel('B');
    assert.equal(await ix.ensureLabel('A'), a, 'labels are stable');
    ix.add([
      { due: 4_100, position: 10, label: a },
      { due: 4_200, position: 11, label: b },
    ]);
    await ix.close();
    // A crash in the middle of an append leaves part of an entry.
    const file = join(dir.path, 'slabs', readdirSync(join(dir.path, 'slabs'))[0]!);
    appendFileSync(file, Buffer.alloc(ENTRY_SIZE - 5, 0x41));
    // A different span asked for later does not change an existing index.
    ix = await ScheduleIndex.open({ dir: dir.path, sync: true, slabMs: 500 });
    assert.equal(ix.slabMs, 2000);
    assert.equal(ix.labelOf('B'), b);
    assert.equal(ix.nameOf(a), 'A');
    ix.add([{ due: 4_300, position: 12, label: a }]);
    await ix.flush();
    assert.equal(statSync(file).size % ENTRY_SIZE, 0, 'the next write starts on an entry boundary');
    const s = await ix.load(4_000);
    assert.deepEqual(positions(s.pending), [10, 11, 12]);
    const [sum] = await ix.summarize();
    assert.deepEqual(
      [...sum!.counts].sort(),
      [
        [a, 2],
        [b, 1],
      ].sort(),
    );
    await ix.close();
  } finally {
    dir.cleanup();
  }
});

test('a damaged entry is skipped, the rest of the slab is read', async () => {
  const dir = tempDir();
  try {
    const ix = await ScheduleIndex.open({ dir: dir.path, sync: true, slabMs: 1000 });
    const l = await ix.ensureLabel('T');
    ix.add([0, 1, 2].map((i) => ({ due: 1_000 + i, position: 100 + i, label: l })));
    await ix.flush();
    const file = join(dir.path, 'slabs', readdirSync(join(dir.path, 'slabs'))[0]!);
    const buf = readFileSync(file);
    buf.writeUInt8(buf.readUInt8(ENTRY_SIZE + 20) ^ 0xff, ENTRY_SIZE + 20); // in the second entry
    writeFileSync(file, buf);
    const s = await ix.load(1_000);
    assert.deepEqual(positions(s.pending), [100, 102]);
    await ix.close();
  } finally {
    dir.cleanup();
  }
});

test('delete removes a slab, unless entries arrived for it meanwhile', async () => {
  const dir = tempDir();
  try {
    const ix = await ScheduleIndex.open({ dir: dir.path, sync: true, slabMs: 1000 });
    const l = await ix.ensureLabel('T');
    ix.add([{ due: 3_000, position: 1, label: l }]);
    await ix.sync();
    const seen = ix.generation(3_000);
    ix.add([{ due: 3_500, position: 2, label: l }]);
    await ix.sync(); // written out before the delete runs: still kept
    assert.equal(await ix.delete(3_000, seen), false);
    assert.ok(ix.has(3_000), 'entries added after the caller looked keep the slab');
    assert.deepEqual(positions((await ix.load(3_000)).pending), [1, 2]);
    assert.equal(await ix.delete(3_000), true);
    assert.equal(ix.has(3_000), false);
    assert.deepEqual(readdirSync(join(dir.path, 'slabs')), []);
    assert.equal((await ix.load(3_000)).pending.length, 0);
    await ix.writeCheckpoint({ offset: 9 });
    assert.deepEqual(await ix.readCheckpoint(), { offset: 9 });
    await ix.close();
  } finally {
    dir.cleanup();
  }
});
