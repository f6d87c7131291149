/**
 * The schedule index (delay messages) under I/O faults, through an injected `StoreFs`: a slab write
 * that runs out of space half-way is cut back and tried again whole; a failed fsync makes the index
 * read-only until a restart; a torn label line left by a crash does not swallow the labels after it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScheduleIndex, ScheduleKind, nodeStoreFs, type StoreFs } from '../../src/store/index.js';
import { isVelaError } from '../../src/common/errors.js';
import { captureLogger, tempDir } from '../helpers.js';
import { fsError } from './node-faults.js';

const positions = (a: { length: number; position: Float64Array }) =>
  Array.from(a.position.subarray(0, a.length)).sort((x, y) => x - y);

/** Node's fs with switchable faults on slab files: a short write then ENOSPC, or a failing fdatasync. */
function faultyFs() {
  const paths = new Map<number, string>();
  const f = { shortWriteThenFull: false, failSync: false };
  const sfs: StoreFs = {
    ...nodeStoreFs,
    open: async (path, flags, mode) => {
      const fd = await nodeStoreFs.open(path, flags, mode);
      paths.set(fd, path);
      return fd;
    },
    close: (fd) => {
      paths.delete(fd);
      return nodeStoreFs.close(fd);
    },
    writev: async (fd, bufs, pos) => {
      const path = paths.get(fd) ?? '';
      if (f.shortWriteThenFull && path.endsWith('.slab')) {
        f.shortWriteThenFull = false;
        fullAfter = true;
        // The device fills up in the middle of the write: part of it lands, the rest fails.
        const all = Buffer.concat(bufs);
        return nodeStoreFs.write(fd, all.subarray(0, 30), pos);
      }
      if (fullAfter && path.endsWith('.slab')) {
        fullAfter = false;
        throw fsError('ENOSPC', 'writev', path);
      }
      return nodeStoreFs.writev(fd, bufs, pos);
    },
    fdatasync: (fd) => {
      if (f.failSync && (paths.get(fd) ?? '').endsWith('.slab')) {
        f.failSync = false;
        return Promise.reject(fsError('EIO', 'fdatasync', paths.get(fd)!));
      }
      return nodeStoreFs.fdatasync(fd);
    },
  };
  let fullAfter = false;
  return { sfs, f };
}

test('a slab write that runs out of space half-way is cut back; the next try writes every entry whole', async () => {
  const dir = tempDir();
  try {
    const { sfs, f } = faultyFs();
    let ix = await ScheduleIndex.open({ dir: dir.path, sync: true, slabMs: 1000, fs: sfs });
    const l = await ix.ensureLabel('T');
    ix.add(Array.from({ length: 10 }, (_, i) => ({ due: 5_000 + i, position: 100 + i, label: l })));
    f.shortWriteThenFull = true;
    await assert.rejects(ix.flush(), (e) => isVelaError(e, 'STORE_DISK_FULL'));
    assert.equal(ix.readOnly, null, 'out of space is not fatal');
    ix.add([{ due: 5_500, position: 200, label: l }]);
    await ix.flush();
    await ix.mark(ScheduleKind.CANCELLED, [{ due: 5_001, position: 101, label: l }], true);
    await ix.close();

    ix = await ScheduleIndex.open({ dir: dir.path, sync: true });
    const s = await ix.load(5_000);
    assert.deepEqual(
      positions(s.pending),
      [100, ...Array.from({ length: 8 }, (_, i) => 102 + i), 200],
      'no entry lost, none shifted out of line by the partial write',
    );
    assert.deepEqual([...s.cancelled], [101]);
    await ix.close();
  } finally {
    dir.cleanup();
  }
});

test('a failed fsync makes the schedule index read-only until a restart', async () => {
  const dir = tempDir();
  try {
    const { sfs, f } = faultyFs();
    const { logger, lines } = captureLogger();
    let ix = await ScheduleIndex.open({ dir: dir.path, sync: true, slabMs: 1000, fs: sfs, logger });
    const l = await ix.ensureLabel('T');
    ix.add([
      { due: 5_100, position: 1, label: l },
      { due: 5_200, position: 2, label: l },
    ]);
    await ix.sync();
    f.failSync = true;
    await assert.rejects(
      ix.mark(ScheduleKind.DISPATCHING, [{ due: 5_100, position: 1, label: l }], true),
      (e) => isVelaError(e, 'STORE_IO_ERROR'),
    );
    assert.ok(ix.readOnly, 'read-only');
    assert.ok(
      lines.some((x) => x.level === 60 && /READ-ONLY/.test(x.msg)),
      'a fatal log line says so',
    );
    // The fault is gone, but what the failed fsync covered may be too: every write is refused …
    const refused = (e: unknown) => isVelaError(e, 'STORE_IO_ERROR') && /read-only/.test(e.message);
    await assert.rejects(ix.ensureLabel('T'), refused, 'known labels too: no delay message is accepted');
    await assert.rejects(ix.ensureLabel('U'), refused);
    await assert.rejects(ix.mark(ScheduleKind.DONE, [{ due: 5_200, position: 2, label: l }], true), refused);
    await assert.rejects(ix.sync(), refused);
    await assert.rejects(ix.writeCheckpoint({ offset: 1 }), refused);
    await assert.rejects(ix.delete(5_000), refused);
    // … reading still works, and closing does not try to sync.
    assert.equal((await ix.load(5_000)).start, 5_000);
    await ix.close();

    ix = await ScheduleIndex.open({ dir: dir.path, sync: true });
    assert.equal(ix.readOnly, null, 'a restart starts from what is on disk');
    assert.ok((await ix.ensureLabel('U')) > 0);
    await ix.close();
  } finally {
    dir.cleanup();
  }
});

test('a torn last label line is cut at open: a label created after it survives', async () => {
  const dir = tempDir();
  try {
    let ix = await ScheduleIndex.open({ dir: dir.path, sync: true });
    const a = await ix.ensureLabel('A');
    await ix.close();
    // A crash in the middle of creating label "B" (never acknowledged).
    appendFileSync(join(dir.path, 'labels'), '"B');
    ix = await ScheduleIndex.open({ dir: dir.path, sync: true });
    assert.equal(ix.labelOf('B'), undefined);
    const c = await ix.ensureLabel('C');
    await ix.close();
    ix = await ScheduleIndex.open({ dir: dir.path, sync: true });
    assert.equal(ix.nameOf(a), 'A');
    assert.equal(ix.nameOf(c), 'C', 'the label written after the torn line is read back');
    await ix.close();
  } finally {
    dir.cleanup();
  }
});
