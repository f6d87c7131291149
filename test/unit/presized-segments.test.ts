/**
 * Segments sized ahead: the active segment's file is as long as a whole segment from its creation, so
 * that durable appends land inside it; the segment left behind and, on close, the active one are cut
 * to their records; after a crash the zeros past the last record end the log cleanly, a write cut
 * short there is a torn record, and nothing past the end is ever read back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  closeSync,
  cpSync,
  openSync,
  readdirSync,
  readSync,
  statSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { SegmentLog } from '../../src/store/segment-log.js';
import { encodePayloadFrame, RecordType } from '../../src/store/record-codec.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';

const SEGMENT = 64 * 1024;
const frame = (i: number, size = 1000) => encodePayloadFrame(RecordType.STATE, Buffer.alloc(size, i & 0xff));

const open = (dir: string, segmentSize = SEGMENT) =>
  SegmentLog.open({ dir, segmentSize, flush: 'sync', flushIntervalMs: 500, logger: silentLogger() });

function segmentFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith('.log'))
    .sort()
    .map((n) => join(dir, n));
}

/** Every frame the scan accepts from the start, and how it ended. */
async function scanAll(log: SegmentLog): Promise<{ frames: Buffer[]; problem?: { reason: string } }> {
  const frames: Buffer[] = [];
  const r = await log.scan(0, (buf, off) =>
    frames.push(Buffer.from(buf.subarray(off, off + buf.readUInt32LE(off)))),
  );
  return { frames, ...(r.problem ? { problem: r.problem } : {}) };
}

/** Append `n` frames starting at number `from`; returns where each frame starts. */
async function append(log: SegmentLog, from: number, n: number, size = 1000): Promise<number[]> {
  const at: number[] = [];
  for (let i = from; i < from + n; i++) at.push(log.appendFrame(frame(i, size)));
  await log.whenDurable();
  return at;
}

/** What a crash would leave: a copy of the files of a log still open, all its appends durable. */
function crashImage(from: string, to: string): void {
  cpSync(from, to, { recursive: true });
}

/**
 * A log in `dir` with frames 0…n-1 appended, crashed: its files as they stood copied into each of
 * `images` (then the log is closed). Returns where the frames start and where the last one ends.
 */
async function crashedLog(
  dir: string,
  images: string[],
  n: number,
  segmentSize = SEGMENT,
): Promise<{ starts: number[]; end: number }> {
  const log = await open(dir, segmentSize);
  const starts = await append(log, 0, n);
  const end = log.endPosition;
  for (const image of images) crashImage(dir, image);
  await log.close();
  return { starts, end };
}

test('the active segment is sized ahead; the one left behind and, on close, the active one are cut to their records', async () => {
  const dir = tempDir();
  try {
    const log = await open(dir.path);
    await append(log, 0, 10);
    let [first] = segmentFiles(dir.path);
    assert.equal(statSync(first!).size, SEGMENT, 'a whole segment from the first append');
    const records = log.endPosition;
    assert.equal(records, 10 * frame(0).length);

    await append(log, 10, 70); // past one segment: a second one starts
    const files = segmentFiles(dir.path);
    assert.equal(files.length, 2);
    const ranges = log.segmentRanges();
    assert.equal(
      statSync(files[0]!).size,
      ranges[0]!.end - ranges[0]!.base,
      'left behind: cut to its records',
    );
    assert.equal(statSync(files[1]!).size, SEGMENT, 'the new active segment is sized ahead');

    await log.close();
    assert.equal(statSync(files[1]!).size, ranges[1]!.end - ranges[1]!.base, 'closed: cut to its records');

    // A clean restart: everything there, nothing cut, and the active segment sized ahead again.
    const again = await open(dir.path);
    const { frames, problem } = await scanAll(again);
    assert.equal(problem, undefined);
    assert.equal(frames.length, 80);
    assert.equal(again.endPosition, ranges[1]!.end);
    assert.equal(statSync(files[1]!).size, SEGMENT);
    await append(again, 80, 1);
    await again.close();
    [first] = segmentFiles(dir.path);
    assert.equal(statSync(first!).size, ranges[0]!.end - ranges[0]!.base);
  } finally {
    dir.cleanup();
  }
});

test('after a crash the zeros past the last record end the log: no damage reported, appends go on', async () => {
  const dir = tempDir();
  const copy = tempDir();
  try {
    const { end } = await crashedLog(dir.path, [copy.path], 20);

    const recovered = await open(copy.path);
    const { frames, problem } = await scanAll(recovered);
    assert.equal(problem, undefined, 'the unwritten rest of a segment is not damage');
    assert.deepEqual(
      frames,
      Array.from({ length: 20 }, (_, i) => frame(i)),
    );
    assert.equal(recovered.endPosition, end);
    await append(recovered, 20, 5);
    await recovered.close();

    const reopened = await open(copy.path);
    assert.deepEqual(
      (await scanAll(reopened)).frames,
      Array.from({ length: 25 }, (_, i) => frame(i)),
    );
    await reopened.close();
  } finally {
    dir.cleanup();
    copy.cleanup();
  }
});

test('a segment created just before a crash, with no record in it, is removed on recovery', async () => {
  const dir = tempDir();
  const copy = tempDir();
  try {
    const { end } = await crashedLog(dir.path, [copy.path], 5);
    // The crash came right after the segment was left behind (cut to its records) and the next one's
    // file was created and sized, before anything was written into it.
    const [first] = segmentFiles(copy.path);
    truncateSync(first!, end);
    const next = join(copy.path, `${String(end).padStart(20, '0')}.log`);
    closeSync(openSync(next, 'w'));
    truncateSync(next, SEGMENT);

    const recovered = await open(copy.path);
    const { frames, problem } = await scanAll(recovered);
    assert.equal(problem, undefined);
    assert.equal(frames.length, 5);
    assert.equal(segmentFiles(copy.path).length, 1, 'the empty segment is gone, not quarantined');
    assert.deepEqual(
      readdirSync(copy.path).filter((n) => n === 'quarantine'),
      [],
    );
    await recovered.close();
  } finally {
    dir.cleanup();
    copy.cleanup();
  }
});

test('a frame past the zeros that end the log is never read back, even after later appends and another crash', async () => {
  const dir = tempDir();
  const copy = tempDir();
  const copy2 = tempDir();
  try {
    const { end } = await crashedLog(dir.path, [copy.path], 10);
    // A page of the crash's last write reached the disk, the one before it did not: a whole valid
    // frame (never acknowledged) sits past a run of zeros.
    const [seg] = segmentFiles(copy.path);
    const stale = frame(99);
    const fd = openSync(seg!, 'r+');
    writeSync(fd, stale, 0, stale.length, end + 8192);
    closeSync(fd);

    const recovered = await open(copy.path);
    assert.equal((await scanAll(recovered)).frames.length, 10);
    await append(recovered, 10, 3); // 3 frames: they stop short of where the stale frame was
    assert.ok(recovered.endPosition < end + 8192);
    crashImage(copy.path, copy2.path);
    await recovered.close();

    const again = await open(copy2.path);
    const { frames, problem } = await scanAll(again);
    assert.equal(problem, undefined);
    assert.deepEqual(
      frames,
      Array.from({ length: 13 }, (_, i) => frame(i)),
      'the stale frame stays gone',
    );
    await again.close();
  } finally {
    dir.cleanup();
    copy.cleanup();
    copy2.cleanup();
  }
});

test('a last write cut short inside a segment sized ahead is a torn record; damage before other records is kept aside without the zeros', async () => {
  const dir = tempDir();
  const torn = tempDir();
  const damaged = tempDir();
  try {
    const { starts, end } = await crashedLog(dir.path, [torn.path, damaged.path], 8, 1024 * 1024);

    // Torn: the second half of the last frame never reached the disk (zeros, like the rest).
    {
      const [seg] = segmentFiles(torn.path);
      const fd = openSync(seg!, 'r+');
      const from = starts[7]! + 500;
      writeSync(fd, Buffer.alloc(end - from), 0, end - from, from);
      closeSync(fd);
      const recovered = await open(torn.path, 1024 * 1024);
      const { frames, problem } = await scanAll(recovered);
      assert.equal(problem?.reason, 'torn record');
      assert.equal(frames.length, 7);
      const cut = await recovered.truncate(starts[7]!, problem?.reason !== 'torn record', 1);
      assert.deepEqual(cut.quarantined, []);
      assert.equal(cut.truncatedBytes, 500, 'the bytes of the torn frame that were written');
      assert.equal(statSync(seg!).size, 1024 * 1024, 'sized ahead again');
      await append(recovered, 7, 1);
      await recovered.close();
      const again = await open(torn.path, 1024 * 1024);
      assert.equal((await scanAll(again)).frames.length, 8);
      await again.close();
    }

    // Damaged: a byte of frame 5 flipped, frames 6 and 7 intact after it.
    {
      const [seg] = segmentFiles(damaged.path);
      const fd = openSync(seg!, 'r+');
      const b = Buffer.alloc(1);
      readSync(fd, b, 0, 1, starts[5]! + 100);
      b[0] = b[0]! ^ 0xff;
      writeSync(fd, b, 0, 1, starts[5]! + 100);
      closeSync(fd);
      const recovered = await open(damaged.path, 1024 * 1024);
      const { frames, problem } = await scanAll(recovered);
      assert.equal(problem?.reason, 'checksum mismatch');
      assert.equal(frames.length, 5);
      const cut = await recovered.truncate(starts[5]!, true, 1);
      assert.equal(cut.quarantined.length, 1);
      const kept = statSync(join(damaged.path, 'quarantine', cut.quarantined[0]!)).size;
      assert.equal(kept, end - starts[5]!, 'the damaged frames, not the megabyte of zeros after them');
      await recovered.close();
    }
  } finally {
    dir.cleanup();
    torn.cleanup();
    damaged.cleanup();
  }
});
