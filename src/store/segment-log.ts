/**
 * An append-only log of checksummed frames, split into segment files named by their 20-digit start
 * position (RocketMQ's CommitLog shape). It owns the write pipeline:
 *
 * - Writers reserve room in a memory slab and encode their frame straight into it (no extra copy).
 * - One flusher takes everything reserved so far, writes it with one `writev` per segment and, under
 *   the `sync` policy, one `fdatasync` that covers every record in the batch (group commit). While a
 *   batch is on its way to disk the next one accumulates.
 * - Waiters are resolved in position order once their bytes are durable under the policy.
 * - A failed write or fsync rolls the log back to the last durable position and rejects every waiter
 *   past it, so no caller is told "stored" for bytes that may not be.
 *
 * Recovery (`scan`) walks frames from a position, verifying length and CRC; `truncate` cuts the log at
 * the first bad frame and moves any later segment into `quarantine/` rather than deleting it.
 */
import fs from 'node:fs';
import { writevP, fdatasyncP, openP, closeP, readP, ftruncateP } from './fs-async.js';
import { mkdir, readdir, rename, unlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { checkFrame, FrameCheck, frameLength, frameType, MAX_FRAME_SIZE } from './record-codec.js';
import { fsyncDir } from './atomic-file.js';

import type { FlushPolicy } from '../common/config.js';

export interface SegmentLogOptions {
  dir: string;
  /** Maximum bytes per segment file. A frame never spans two segments. */
  segmentSize: number;
  flush: FlushPolicy;
  /** Under `async`: how often written bytes are fsynced. */
  flushIntervalMs: number;
  logger: Logger;
  /** Called (synchronously, before waiters are rejected) when unflushed bytes are discarded after an I/O error. */
  onRollback?: (durableEnd: number) => void;
  /** Called after each batch becomes durable, with the new durable end. */
  onDurable?: (durableEnd: number) => void;
}

interface Segment {
  base: number;
  /** Bytes assigned to this segment (durable + pending). */
  fill: number;
  /** Bytes known to be in the file. */
  written: number;
  fd: number | null;
  path: string;
}

interface Slab {
  buf: Buffer;
  used: number;
  /** Bytes of `buf` already handed to the flusher. */
  taken: number;
  segment: Segment;
  /** Global position of buf[0]. */
  position: number;
}

interface Chunk {
  segment: Segment;
  buf: Buffer;
  position: number;
  slab: Slab;
  /** True when the slab is closed and this chunk is its last part. */
  releasesSlab: boolean;
}

interface Waiter {
  position: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

export interface Reservation {
  buf: Buffer;
  off: number;
  /** Global log position the frame will have. */
  position: number;
  /** Base position of the segment the frame goes into. */
  segmentBase: number;
}

export interface ScanResult {
  /** End of the last valid frame. */
  validEnd: number;
  /** Why the scan stopped before the physical end, if it did. */
  problem?: { position: number; reason: string };
}

const SEGMENT_NAME = /^(\d{20})\.log$/;
const SLAB_SIZE = 1 << 20;
const MAX_FREE_SLABS = 8;
const SCAN_CHUNK = 8 << 20;
const LATE_CLOSE_MS = 30_000;

export function segmentName(base: number): string {
  return `${String(base).padStart(20, '0')}.log`;
}

export class SegmentLog {
  private readonly segments: Segment[] = [];
  private slab: Slab | null = null;
  private closedSlabs: Slab[] = [];
  private freeSlabs: Buffer[] = [];
  private waiters: Waiter[] = [];
  private writePos = 0;
  private durablePos = 0;
  private syncedPos = 0;
  private flushing: Promise<void> | null = null;
  private flushScheduled = false;
  private failed: Error | null = null;
  private closed = false;
  private syncTimer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> | null = null;
  private readonly lateCloses = new Map<NodeJS.Timeout, number>();

  private constructor(private readonly opts: SegmentLogOptions) {}

  /** Open (creating if needed) the log in `opts.dir`. Call `scan` + `truncate` before appending after a crash. */
  static async open(opts: SegmentLogOptions): Promise<SegmentLog> {
    const log = new SegmentLog(opts);
    await mkdir(opts.dir, { recursive: true });
    const names = (await readdir(opts.dir)).filter((n) => SEGMENT_NAME.test(n)).sort();
    for (const name of names) {
      const path = join(opts.dir, name);
      const size = (await stat(path)).size;
      const base = Number(SEGMENT_NAME.exec(name)![1]);
      log.segments.push({ base, fill: size, written: size, fd: null, path });
    }
    const last = log.segments.at(-1);
    const end = last ? last.base + last.written : 0;
    log.writePos = log.durablePos = log.syncedPos = end;
    if (opts.flush === 'async') {
      log.syncTimer = setInterval(() => void log.sync().catch(() => {}), opts.flushIntervalMs);
      log.syncTimer.unref();
    }
    return log;
  }

  /** First position still stored (retention moves it forward). */
  get startPosition(): number {
    return this.segments[0]?.base ?? this.writePos;
  }
  /** Position the next reserved frame gets. */
  get endPosition(): number {
    return this.writePos;
  }
  /** Everything below this is written (and, under `sync`, fsynced). */
  get durableEnd(): number {
    return this.durablePos;
  }
  /** Everything below this is fsynced. */
  get syncedEnd(): number {
    return this.syncedPos;
  }

  /** Segments as [base, end) ranges, oldest first. */
  segmentRanges(): { base: number; end: number }[] {
    return this.segments.map((s) => ({ base: s.base, end: s.base + s.fill }));
  }

  /**
   * Reserve room for a frame of at most `maxLen` bytes. The caller encodes into `buf` at `off`, then
   * calls `commit(actualLen)` before reserving again (synchronously: no await in between).
   */
  reserve(maxLen: number): Reservation {
    if (this.failed) throw new VelaError('STORE_IO_ERROR', this.failed.message, { cause: this.failed });
    if (this.closed) throw new VelaError('STORE_CLOSED');
    if (maxLen > MAX_FRAME_SIZE) throw new VelaError('STORE_RECORD_TOO_LARGE', `${maxLen} bytes`);
    let seg = this.segments.at(-1);
    if (!seg || (seg.fill > 0 && seg.fill + maxLen > this.opts.segmentSize)) {
      seg = this.newSegment();
    }
    let slab = this.slab;
    if (!slab || slab.segment !== seg || slab.buf.length - slab.used < maxLen) {
      slab = this.newSlab(seg, maxLen);
    }
    return { buf: slab.buf, off: slab.used, position: this.writePos, segmentBase: seg.base };
  }

  /** Account for the frame just encoded into the last reservation. */
  commit(len: number): void {
    const slab = this.slab!;
    slab.used += len;
    slab.segment.fill += len;
    this.writePos += len;
    this.scheduleFlush();
  }

  /** Append a ready-made frame. Returns its position. */
  appendFrame(frame: Uint8Array): number {
    const r = this.reserve(frame.length);
    r.buf.set(frame, r.off);
    this.commit(frame.length);
    return r.position;
  }

  /** Resolves when every byte reserved so far is durable under the flush policy. */
  whenDurable(position = this.writePos): Promise<void> {
    if (this.failed) return Promise.reject(new VelaError('STORE_IO_ERROR', this.failed.message));
    if (position <= this.durablePos) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiters.push({ position, resolve, reject });
      this.scheduleFlush();
    });
  }

  /** Write everything pending and fsync it, whatever the policy. */
  async sync(): Promise<void> {
    await this.whenDurable();
    if (this.syncedPos >= this.durablePos) return;
    if (this.syncing) {
      await this.syncing;
      return this.sync();
    }
    const target = this.durablePos;
    this.syncing = (async () => {
      for (const seg of this.segments) {
        if (seg.fd !== null && seg.base + seg.written > this.syncedPos) await fdatasyncP(seg.fd);
      }
      this.syncedPos = Math.max(this.syncedPos, target);
    })();
    try {
      await this.syncing;
    } finally {
      this.syncing = null;
    }
  }

  /** Read `length` bytes at `position` (callers stay below `durableEnd`), across segments if need be. */
  async read(position: number, length: number): Promise<Buffer> {
    const end = Math.min(position + length, this.durablePos);
    if (end <= position) return Buffer.alloc(0);
    const buf = Buffer.allocUnsafe(end - position);
    let got = 0;
    while (position + got < end) {
      const at = position + got;
      const seg = this.segmentAt(at);
      if (!seg) throw new VelaError('STORE_BAD_ARGUMENT', `position ${at} is not stored`);
      const want = Math.min(end - at, seg.base + seg.written - at);
      if (want <= 0) break;
      const n = await readFully(await this.fdOf(seg), buf.subarray(got), want, at - seg.base);
      got += n;
      if (n < want) break;
    }
    return buf.subarray(0, got);
  }

  /**
   * Walk valid frames from `from` to the end, calling `onFrame` for each. Stops at the first frame that
   * is torn or fails its checksum, or at a gap between segments.
   */
  async scan(
    from: number,
    onFrame: (buf: Buffer, off: number, position: number, type: number) => void,
  ): Promise<ScanResult> {
    let position = Math.max(from, this.startPosition);
    let idx = this.segments.findIndex((s) => position < s.base + s.written);
    if (idx < 0) return { validEnd: Math.max(position, this.writePos) };
    for (; idx < this.segments.length; idx++) {
      const seg = this.segments[idx]!;
      if (position < seg.base) {
        return {
          validEnd: position,
          problem: { position, reason: `gap before segment ${segmentName(seg.base)}` },
        };
      }
      const fd = await this.fdOf(seg);
      const segEnd = seg.base + seg.written;
      let buf = Buffer.allocUnsafe(Math.min(SCAN_CHUNK, Math.max(1, segEnd - position)));
      while (position < segEnd) {
        const want = Math.min(buf.length, segEnd - position);
        const n = await readFully(fd, buf, want, position - seg.base);
        let off = 0;
        while (off < n) {
          const check = checkFrame(buf, off, n);
          if (check === FrameCheck.OK) {
            onFrame(buf, off, position + off, frameType(buf, off));
            off += frameLength(buf, off);
            continue;
          }
          if (check === FrameCheck.INCOMPLETE) {
            const len = n - off >= 4 ? frameLength(buf, off) : 0;
            if (position + off + Math.max(len, 9) > segEnd || n < want) {
              return {
                validEnd: position + off,
                problem: { position: position + off, reason: 'torn record' },
              };
            }
            if (off === 0) buf = Buffer.allocUnsafe(Math.max(len, buf.length)); // a frame bigger than the chunk
            break;
          }
          return {
            validEnd: position + off,
            problem: { position: position + off, reason: 'checksum mismatch' },
          };
        }
        position += off;
      }
    }
    return { validEnd: position };
  }

  /**
   * Cut the log at `position`, discarding everything after it. Only call before appending. Whole
   * segments past the cut are moved into `quarantine/`; with `preserveTail` (a checksum failure rather
   * than a torn write) the bytes cut from the segment holding `position` are copied there first, so
   * recovery never destroys data a person might still want to inspect.
   */
  async truncate(
    position: number,
    preserveTail = false,
  ): Promise<{ truncatedBytes: number; quarantined: string[] }> {
    let truncatedBytes = 0;
    const quarantined: string[] = [];
    const qdir = join(this.opts.dir, 'quarantine');
    const stamp = Date.now();
    while (this.segments.length > 0 && this.segments.at(-1)!.base >= position) {
      const seg = this.segments.pop()!;
      await this.closeSegment(seg);
      if (seg.written === 0) {
        await unlink(seg.path).catch(() => {});
        continue;
      }
      await mkdir(qdir, { recursive: true });
      const name = `${segmentName(seg.base)}.${stamp}`;
      await rename(seg.path, join(qdir, name));
      truncatedBytes += seg.written;
      quarantined.push(name);
    }
    const seg = this.segments.at(-1);
    if (seg && seg.base + seg.written > position) {
      const keep = position - seg.base;
      if (preserveTail) {
        await mkdir(qdir, { recursive: true });
        const name = `${segmentName(seg.base)}.tail-at-${keep}.${stamp}`;
        await pipeline(
          fs.createReadStream(seg.path, { start: keep }),
          fs.createWriteStream(join(qdir, name)),
        );
        quarantined.push(name);
      }
      truncatedBytes += seg.written - keep;
      const fd = await this.fdOf(seg);
      await ftruncateP(fd, keep);
      await fdatasyncP(fd);
      seg.written = seg.fill = keep;
    }
    await fsyncDir(this.opts.dir);
    const last = this.segments.at(-1);
    this.writePos = this.durablePos = this.syncedPos = last ? last.base + last.written : position;
    return { truncatedBytes, quarantined };
  }

  /** Delete whole segments that end at or before `position`; the active (last) segment is never deleted. */
  async deleteSegmentsBefore(position: number): Promise<{ base: number; end: number }[]> {
    const removed: { base: number; end: number }[] = [];
    while (this.segments.length > 1) {
      const seg = this.segments[0]!;
      if (seg.base + seg.fill > position) break;
      this.segments.shift();
      // Reads already under way keep their descriptor: close it later so it is never reused under them.
      this.closeLater(seg);
      await unlink(seg.path);
      removed.push({ base: seg.base, end: seg.base + seg.fill });
    }
    if (removed.length) await fsyncDir(this.opts.dir);
    return removed;
  }

  /** Flush and fsync everything, then close all files. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.syncTimer) clearInterval(this.syncTimer);
    if (!this.failed) await this.sync();
    this.closed = true;
    for (const seg of this.segments) await this.closeSegment(seg);
    for (const [timer, fd] of this.lateCloses) {
      clearTimeout(timer);
      await closeP(fd).catch(() => {});
    }
    this.lateCloses.clear();
  }

  private closeLater(seg: Segment): void {
    if (seg.fd === null) return;
    const fd = seg.fd;
    seg.fd = null;
    const timer: NodeJS.Timeout = setTimeout(() => {
      this.lateCloses.delete(timer);
      fs.close(fd, () => {});
    }, LATE_CLOSE_MS);
    timer.unref();
    this.lateCloses.set(timer, fd);
  }

  private segmentAt(position: number): Segment | undefined {
    const segs = this.segments;
    let lo = 0;
    let hi = segs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = segs[mid]!;
      if (position < s.base) hi = mid - 1;
      else if (position >= s.base + s.fill) lo = mid + 1;
      else return s;
    }
    return undefined;
  }

  private newSegment(): Segment {
    const base = this.writePos;
    const seg: Segment = {
      base,
      fill: 0,
      written: 0,
      fd: null,
      path: join(this.opts.dir, segmentName(base)),
    };
    this.segments.push(seg);
    return seg;
  }

  private newSlab(segment: Segment, minSize: number): Slab {
    if (this.slab) this.closedSlabs.push(this.slab);
    const size = Math.max(SLAB_SIZE, minSize);
    const buf =
      size === SLAB_SIZE && this.freeSlabs.length > 0 ? this.freeSlabs.pop()! : Buffer.allocUnsafe(size);
    this.slab = { buf, used: 0, taken: 0, segment, position: this.writePos };
    return this.slab;
  }

  private async fdOf(seg: Segment): Promise<number> {
    if (seg.fd === null) {
      // A segment created by this process starts empty; an existing one is opened for read and write.
      const exists = seg.written > 0 || fs.existsSync(seg.path);
      // Under `sync` every write is made durable by the write itself (O_DSYNC): one round trip to the
      // thread pool per group commit instead of a write followed by an fdatasync.
      const c = fs.constants;
      const flags =
        (exists ? c.O_RDWR : c.O_RDWR | c.O_CREAT | c.O_TRUNC) | (this.opts.flush === 'sync' ? c.O_DSYNC : 0);
      const fd = await openP(seg.path, flags);
      if (seg.fd === null) seg.fd = fd;
      else await closeP(fd);
      if (!exists) await fsyncDir(this.opts.dir);
    }
    return seg.fd!;
  }

  private async closeSegment(seg: Segment): Promise<void> {
    if (seg.fd !== null) {
      const fd = seg.fd;
      seg.fd = null;
      await closeP(fd);
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.flushing) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (this.flushing) return;
      this.flushing = this.flushLoop().finally(() => {
        this.flushing = null;
        // A waiter released by the loop may have appended before this ran, while `flushing` still
        // looked busy: pick that up now, or it would wait forever.
        if (!this.failed && this.writePos > this.durablePos) this.scheduleFlush();
      });
    });
  }

  private takeChunks(): Chunk[] {
    const chunks: Chunk[] = [];
    for (const slab of this.closedSlabs) {
      if (slab.used > slab.taken) {
        chunks.push({
          segment: slab.segment,
          buf: slab.buf.subarray(slab.taken, slab.used),
          position: slab.position + slab.taken,
          slab,
          releasesSlab: true,
        });
      }
      slab.taken = slab.used;
    }
    this.closedSlabs = [];
    const s = this.slab;
    if (s && s.used > s.taken) {
      chunks.push({
        segment: s.segment,
        buf: s.buf.subarray(s.taken, s.used),
        position: s.position + s.taken,
        slab: s,
        releasesSlab: false,
      });
      s.taken = s.used;
    }
    return chunks;
  }

  private async flushLoop(): Promise<void> {
    while (!this.failed && this.writePos > this.durablePos) {
      const chunks = this.takeChunks();
      if (chunks.length === 0) break;
      const end = chunks.at(-1)!.position + chunks.at(-1)!.buf.length;
      try {
        let i = 0;
        const touched: Segment[] = [];
        while (i < chunks.length) {
          const seg = chunks[i]!.segment;
          const bufs: Buffer[] = [];
          const start = chunks[i]!.position;
          let bytes = 0;
          while (i < chunks.length && chunks[i]!.segment === seg) {
            bufs.push(chunks[i]!.buf);
            bytes += chunks[i]!.buf.length;
            i++;
          }
          const fd = await this.fdOf(seg);
          let written = 0;
          while (written < bytes) {
            const rest = written === 0 ? bufs : sliceBufs(bufs, written);
            written += await writevP(fd, rest, start - seg.base + written);
          }
          seg.written = Math.max(seg.written, start - seg.base + bytes);
          touched.push(seg);
        }
        // Under sync the writes above were O_DSYNC, so every byte is durable before anyone hears
        // "stored". Under async a segment being left behind is fsynced once, so only the active
        // segment has a loss window.
        if (this.opts.flush === 'async') {
          for (const seg of touched) if (seg !== this.segments.at(-1)) await fdatasyncP(seg.fd!);
        }
      } catch (err) {
        await this.fail(err as Error);
        return;
      }
      this.durablePos = end;
      if (this.opts.flush === 'sync') this.syncedPos = end;
      for (const c of chunks) if (c.releasesSlab && c.slab.buf.length === SLAB_SIZE) this.recycle(c.slab.buf);
      this.opts.onDurable?.(end);
      this.releaseWaiters();
    }
  }

  private recycle(buf: Buffer): void {
    if (this.freeSlabs.length < MAX_FREE_SLABS) this.freeSlabs.push(buf);
  }

  private releaseWaiters(): void {
    const w = this.waiters;
    let n = 0;
    while (n < w.length && w[n]!.position <= this.durablePos) n++;
    if (n === 0) return;
    const done = w.splice(0, n);
    for (const x of done) x.resolve();
  }

  /** Roll back to the durable end after an I/O failure and reject everyone waiting past it. */
  private async fail(err: Error): Promise<void> {
    const durable = this.durablePos;
    this.opts.logger.error({ err, durableEnd: durable }, 'log write failed; rolling back unflushed records');
    // Reset in-memory state synchronously and refuse appends until the files match it again.
    this.failed = err;
    this.slab = null;
    this.closedSlabs = [];
    this.writePos = durable;
    const dropped: Segment[] = [];
    while (this.segments.length > 1 && this.segments.at(-1)!.base >= durable)
      dropped.push(this.segments.pop()!);
    const seg = this.segments.at(-1);
    const keep = seg ? durable - seg.base : 0;
    if (seg) seg.fill = Math.min(seg.fill, keep);
    this.opts.onRollback?.(durable);
    const rejected = this.waiters;
    this.waiters = [];
    const error = new VelaError('STORE_IO_ERROR', err.message, { cause: err });
    for (const w of rejected) w.reject(error);
    try {
      for (const d of dropped) {
        await this.closeSegment(d);
        await unlink(d.path).catch(() => {});
      }
      if (seg) {
        // A partly completed write may have landed past what `written` says: always cut the file.
        await ftruncateP(await this.fdOf(seg), keep);
        seg.written = keep;
      }
      this.failed = null;
    } catch (truncErr) {
      this.failed = truncErr as Error;
      this.opts.logger.error({ err: truncErr }, 'log rollback failed; refusing further writes until restart');
    }
  }
}

async function readFully(fd: number, buf: Buffer, len: number, filePos: number): Promise<number> {
  let got = 0;
  while (got < len) {
    const n = await readP(fd, buf, got, len - got, filePos + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

function sliceBufs(bufs: Buffer[], skip: number): Buffer[] {
  const out: Buffer[] = [];
  for (const b of bufs) {
    if (skip >= b.length) {
      skip -= b.length;
      continue;
    }
    out.push(skip > 0 ? b.subarray(skip) : b);
    skip = 0;
  }
  return out;
}
