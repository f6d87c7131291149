/**
 * An append-only log of checksummed frames, split into segment files named by their 20-digit start
 * position (RocketMQ's CommitLog shape). It owns the write pipeline:
 *
 * - Writers reserve room in a memory slab and encode their frame straight into it (no extra copy).
 * - One flusher takes everything reserved so far, writes it with one `writev` per segment and, under
 *   the `sync` policy, makes it durable in the same call (O_DSYNC: group commit). While a batch is on
 *   its way to disk the next one accumulates.
 * - Waiters are resolved in position order once their bytes are durable under the policy.
 * - A failed write is never acknowledged. What happens next depends on the failure (io-errors.ts):
 *   out of space or descriptors rolls the file back to its last durable byte and the log keeps
 *   going; a failed fsync (or any other write error) makes the log read-only until a restart.
 *
 * Recovery (`scan`, segment-scan.ts) walks frames from a position, verifying length and CRC;
 * `truncate` cuts the log at the first bad frame and moves any later segment into `quarantine/` rather
 * than deleting it. The files and their descriptors are segment-files.ts's.
 */
import { join } from 'node:path';
import type { Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { MAX_FRAME_SIZE } from './record-codec.js';
import {
  ensureDir,
  errnoOf,
  fsyncDir,
  nodeStoreFs,
  readFully,
  readFullySync,
  writeAll,
  writeAllSync,
  type StoreFs,
} from './store-fs.js';
import { isDescriptorError, SegmentFiles, segmentName, type Segment } from './segment-files.js';
import { copyRange, nonZeroEnd, scanFrames, type ScanResult } from './segment-scan.js';
import { isTransient, readOnlyError, SyncFailure, synced, transientError } from './io-errors.js';
import { LogChunkCache } from './log-chunk-cache.js';
import { loopLoad } from './loop-load.js';
import { INLINE_PAUSE_MS, inlineWriteGate, type InlineWriteGate } from './inline-writes.js';

import type { FlushPolicy } from '../common/config.js';

export { segmentName, type ScanResult };

export interface SegmentLogOptions {
  dir: string;
  /** Maximum bytes per segment file. A frame never spans two segments. */
  segmentSize: number;
  flush: FlushPolicy;
  /** Under `async`: how often written bytes are fsynced. */
  flushIntervalMs: number;
  logger: Logger;
  /** @defaultValue Node's file system */
  fs?: StoreFs;
  /** Sealed segments kept open for reads. @defaultValue 32 */
  maxOpenSegments?: number;
  /**
   * Bytes of recently written slabs kept in memory after they are durable, so that reads near the
   * head are served without the thread pool. 0 keeps none. @defaultValue 0
   */
  readCacheBytes?: number;
  /**
   * Bytes of the log read from its files kept in memory, in aligned chunks (log-chunk-cache.ts), so
   * that the interleaved queues of a topic read each span once. 0 keeps none. @defaultValue 0
   */
  chunkCacheBytes?: number;
  /** Bytes per chunk of that cache. @defaultValue 1 MiB */
  chunkSize?: number;
  /**
   * Reads of the newest this-many bytes of the log are made on the calling thread: they are expected
   * in the page cache, and a thread-pool round trip costs more than the copy. Older reads go through
   * the thread pool, so a disk read never stalls the event loop. @defaultValue 0
   */
  syncReadBytes?: number;
  /**
   * Flushes of at most this many bytes (per segment) are written on the calling thread while the
   * event loop has time to spare (loop-load.ts): a small durable write takes a fraction of a
   * millisecond, less than the two thread switches of a thread-pool round trip. Larger ones go
   * through the thread pool, so the event loop keeps working while a big batch is on its way to disk;
   * so do all of them while the loop is busy, while another log of the process is writing too, and
   * for a while after the disk was slow (inline-writes.ts). 0 writes everything through the thread
   * pool.
   * @defaultValue 0
   */
  inlineWriteBytes?: number;
  /** Whether the disk lets small flushes be written on the loop. @defaultValue the process's gate */
  inlineGate?: InlineWriteGate;
  /**
   * Size each new segment's file to `segmentSize` when it is created (sparse), so that durable
   * appends land inside the file instead of growing it (segment-files.ts). @defaultValue true
   */
  preallocate?: boolean;
  /** Called (synchronously, before waiters are rejected) when unflushed bytes are discarded after an I/O error. */
  onRollback?: (durableEnd: number) => void;
  /**
   * Awaited after a transient failure's rollback, before appends are accepted again (whoever read
   * past the durable end makes that right first). A rejection makes the log read-only.
   */
  afterRollback?: () => Promise<void>;
  /** Called after each batch becomes durable, with the new durable end. */
  onDurable?: (durableEnd: number) => void;
  /** Called once when the log goes read-only after a fatal I/O failure. */
  onFatal?: (err: Error) => void;
  /** Called when a write failed for lack of space or descriptors (the log rolls itself back). */
  onTransient?: (err: Error) => void;
  /** Asked to close idle descriptors elsewhere when an open fails with EMFILE; returns how many it closed. */
  releaseDescriptors?: () => Promise<number>;
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

/** Where the log stood before a run of reservations, to take them back (`rewind`). */
export interface LogMark {
  writePos: number;
  segments: number;
  slab: Slab | null;
  slabUsed: number;
  closedSlabs: number;
  fill: number;
}

const SLAB_SIZE = 1 << 20;
/** Bytes per chunk of the read cache. */
const READ_CHUNK_SIZE = 1 << 20;

/** Bytes a chunk holds past its end (never past its segment's): 64 KiB for 1 MiB chunks. */
const overhangOf = (chunkSize: number) => Math.floor(chunkSize / 16);

/** Where the chunk holding `position` starts: chunks are aligned within their segment. */
function chunkStart(segment: Segment, position: number, chunkSize: number): number {
  return segment.base + Math.floor((position - segment.base) / chunkSize) * chunkSize;
}
const MAX_FREE_SLABS = 8;
export class SegmentLog {
  private readonly files: SegmentFiles;
  private readonly segments: Segment[];
  private slab: Slab | null = null;
  private closedSlabs: Slab[] = [];
  /** Closed slabs the flusher is writing (taken from `closedSlabs`), until they are retired. */
  private writing: Slab[] = [];
  private freeSlabs: Buffer[] = [];
  /**
   * Closed slabs whose bytes are all durable, oldest first, kept to serve reads near the head
   * (`readRecent`). At most `readCacheBytes` of them; evicted ones are recycled.
   */
  private cached: Slab[] = [];
  private cachedBytes = 0;
  private waiters: Waiter[] = [];
  private writePos = 0;
  private durablePos = 0;
  private syncedPos = 0;
  private flushing: Promise<void> | null = null;
  private flushScheduled = false;
  /** Set for good after a fatal I/O failure: the log is read-only until the process restarts. */
  private fatal: Error | null = null;
  /** Set while the files are rolled back after a transient failure (out of space or descriptors). */
  private transient: VelaError | null = null;
  private closed = false;
  private syncTimer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> | null = null;
  private readonly fs: StoreFs;
  private readonly chunks: LogChunkCache | null;
  private readonly presized: boolean;
  private readonly inlineBytes: number;
  private readonly inlineGate: InlineWriteGate;

  private constructor(private readonly opts: SegmentLogOptions) {
    this.fs = opts.fs ?? nodeStoreFs;
    this.presized = opts.preallocate !== false;
    this.inlineBytes = opts.inlineWriteBytes ?? 0;
    this.inlineGate = opts.inlineGate ?? inlineWriteGate;
    const chunkBytes = opts.chunkCacheBytes ?? 0;
    const chunkSize = opts.chunkSize ?? READ_CHUNK_SIZE;
    const capacity = chunkSize + overhangOf(chunkSize);
    this.chunks =
      chunkBytes >= capacity ? new LogChunkCache({ chunkSize, capacity, budget: chunkBytes }) : null;
    this.files = new SegmentFiles({
      dir: opts.dir,
      fs: this.fs,
      flush: opts.flush,
      maxOpen: opts.maxOpenSegments ?? 32,
      syncedEnd: () => this.syncedPos,
      releaseElsewhere: opts.releaseDescriptors,
      presize: this.presized ? opts.segmentSize : 0,
    });
    this.segments = this.files.list;
  }

  /**
   * Open (creating if needed) the log in `opts.dir`. Call `scan` (and `truncate` if it found a problem)
   * before appending: until then the end is where the files end, which for a segment sized ahead is
   * past its last record.
   */
  static async open(opts: SegmentLogOptions): Promise<SegmentLog> {
    const log = new SegmentLog(opts);
    await ensureDir(log.fs, opts.dir);
    await log.files.load();
    const last = log.segments.at(-1);
    const end = last ? last.base + last.written : 0;
    log.writePos = log.durablePos = log.syncedPos = end;
    if (opts.flush === 'async') {
      // A failure here is fatal and reported by `sync` itself; nothing to add.
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
  /** The fatal failure that made the log read-only, if any. */
  get failure(): Error | null {
    return this.fatal;
  }
  /** Open descriptors (the active segment and cached sealed ones). */
  get openDescriptors(): number {
    return this.files.openDescriptors;
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
    this.checkWritable();
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

  /** Throw the error an append gets now, if appends are refused. */
  checkWritable(): void {
    if (this.fatal) throw readOnlyError(this.fatal);
    if (this.transient) throw this.transient;
    if (this.closed) throw new VelaError('STORE_CLOSED');
  }

  /**
   * Where the log stands now. Reservations made after it (synchronously, in the same turn) can be
   * taken back with `rewind`, so a batch that cannot be completed leaves nothing behind.
   */
  mark(): LogMark {
    const seg = this.segments.at(-1);
    return {
      writePos: this.writePos,
      segments: this.segments.length,
      slab: this.slab,
      slabUsed: this.slab?.used ?? 0,
      closedSlabs: this.closedSlabs.length,
      fill: seg?.fill ?? 0,
    };
  }

  /** Take back every reservation made since `m` (same turn: nothing of it has been handed to the flusher). */
  rewind(m: LogMark): void {
    if (this.writePos === m.writePos) return;
    while (this.segments.length > m.segments) this.segments.pop();
    const seg = this.segments.at(-1);
    if (seg) seg.fill = m.fill;
    this.closedSlabs.length = m.closedSlabs;
    this.slab = m.slab;
    if (this.slab) this.slab.used = m.slabUsed;
    this.writePos = m.writePos;
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
    if (this.fatal) return Promise.reject(readOnlyError(this.fatal));
    if (position <= this.durablePos) return Promise.resolve();
    if (this.transient) return Promise.reject(this.transient);
    return new Promise((resolve, reject) => {
      this.waiters.push({ position, resolve, reject });
      this.scheduleFlush();
    });
  }

  /**
   * Write everything pending and fsync it, whatever the policy. A failed fsync makes the log
   * read-only (it is never retried: the pages it covered may be gone).
   */
  async sync(): Promise<void> {
    await this.whenDurable();
    if (this.syncedPos >= this.durablePos) return;
    if (this.syncing) {
      await this.syncing;
      return this.sync();
    }
    const target = this.durablePos;
    this.syncing = (async () => {
      for (const seg of [...this.segments]) {
        if (seg.base + seg.written > this.syncedPos && seg.fd !== null)
          await this.files.use(seg, (fd) => synced(this.fs.fdatasync(fd)));
      }
      this.syncedPos = Math.max(this.syncedPos, target);
    })();
    try {
      await this.syncing;
    } catch (err) {
      this.goFatal(err as Error, 'fsync of the log failed');
      throw readOnlyError(this.fatal!);
    } finally {
      this.syncing = null;
    }
  }

  /** Whether reads of the files go through the chunk cache (`loadChunks`, `copyCached`). */
  get cachesChunks(): boolean {
    return this.chunks !== null;
  }

  /**
   * Copy the bytes [position, position + length) into `into[at…]` from a chunk of the read cache, if
   * one chunk holds them all; false (nothing copied) otherwise.
   */
  copyCached(position: number, length: number, into: Buffer, at: number): boolean {
    const start = this.chunkStartOf(position);
    return start >= 0 && this.chunks!.copyInto(start, position, length, into, at);
  }

  /** Whether `copyCached` would serve these bytes. */
  isCached(position: number, length: number): boolean {
    const start = this.chunkStartOf(position);
    return start >= 0 && this.chunks!.holds(start, position, length);
  }

  /**
   * Bring the full chunks covering [position, end) into the read cache (one file read each, shared
   * with reads of the same chunk under way). Chunks not yet whole on disk (at the head, or a
   * segment's last) are left out: their bytes are read when asked for.
   */
  async loadChunks(position: number, end: number): Promise<void> {
    const cache = this.chunks;
    if (!cache) return;
    let at = position;
    while (at < end) {
      const segment = this.files.at(at);
      if (!segment) return;
      const size = cache.chunkSize;
      const start = chunkStart(segment, at, size);
      const stop = start + size;
      const segmentEnd = Math.min(segment.base + segment.written, this.durablePos);
      if (stop > segmentEnd) return;
      // A little past the chunk too, so that a record starting near its end is in it whole.
      const length = size + Math.min(overhangOf(size), segmentEnd - stop);
      await cache.load(start, size, (into) => this.readInto(start, into, length));
      at = stop;
    }
  }

  /** Where the chunk of the read cache holding `position` starts (-1: no cache, or not stored). */
  private chunkStartOf(position: number): number {
    if (!this.chunks) return -1;
    const segment = this.files.at(position);
    return segment ? chunkStart(segment, position, this.chunks.chunkSize) : -1;
  }

  /** Read `length` bytes at `position` (callers stay below `durableEnd`), across segments if need be. */
  async read(position: number, length: number): Promise<Buffer> {
    const end = Math.min(position + length, this.durablePos);
    if (end <= position) return Buffer.alloc(0);
    const buf = Buffer.allocUnsafe(end - position);
    return buf.subarray(0, await this.readInto(position, buf, end - position));
  }

  /** Read up to `length` durable bytes at `position` into `buf`; returns how many were read. */
  private async readInto(position: number, buf: Buffer, length: number): Promise<number> {
    const end = Math.min(position + length, this.durablePos);
    let got = 0;
    while (position + got < end) {
      const at = position + got;
      const seg = this.files.at(at);
      if (!seg) throw new VelaError('STORE_BAD_ARGUMENT', `position ${at} is not stored`);
      const want = Math.min(end - at, seg.base + seg.written - at);
      if (want <= 0) break;
      const into = buf.subarray(got);
      const n =
        (at >= this.writePos - (this.opts.syncReadBytes ?? 0)
          ? this.files.useSync(seg, (fd) => readFullySync(this.fs, fd, into, want, at - seg.base))
          : undefined) ??
        (await this.files.use(seg, (fd) => readFully(this.fs, fd, into, want, at - seg.base)));
      got += n;
      if (n < want) break;
    }
    return got;
  }

  /**
   * Copy the durable bytes [position, position + length) into `into[at…]` from memory, if this
   * process still holds all of them (the slab being filled, slabs waiting for or being written by the
   * flusher, and the read cache); false (nothing copied) otherwise, and the caller reads the files.
   * Bytes served here are the very bytes this process encoded and handed to the file system: they
   * were never read back from a disk. With `appended`, bytes not yet durable may be copied too (all
   * of them are in memory); a rollback may still take them back.
   */
  copyRecent(position: number, length: number, into: Buffer, at: number, appended = false): boolean {
    const end = position + length;
    const limit = appended ? this.writePos : this.durablePos;
    if (length <= 0 || end > limit || position < this.startPosition) return false;
    const first = this.slabHolding(position, limit);
    if (!first) return false; // the common miss
    if (end <= first.position + first.used) {
      first.buf.copy(into, at, position - first.position, end - first.position);
      return true;
    }
    // Across slabs (rare: a reservation never straddles two): every one must still be here.
    const slabs = [first];
    for (let p = first.position + first.used; p < end;) {
      const next = this.slabHolding(p, limit);
      if (!next) return false;
      slabs.push(next);
      p = next.position + next.used;
    }
    let p = position;
    for (const slab of slabs) {
      const n = Math.min(end, slab.position + slab.used) - p;
      slab.buf.copy(into, at + (p - position), p - slab.position, p - slab.position + n);
      p += n;
    }
    return true;
  }

  /** Whether `copyRecent` would serve the byte at `position` (the first of a read). */
  holdsRecent(position: number, appended = false): boolean {
    const limit = appended ? this.writePos : this.durablePos;
    return position >= this.startPosition && this.slabHolding(position, limit) !== null;
  }

  /** Bytes held by the read cache (not counting the slabs still being written). */
  get readCacheSize(): number {
    return this.cachedBytes;
  }

  /** Bytes held by the chunk cache. */
  get chunkCacheSize(): number {
    return this.chunks?.size ?? 0;
  }

  /**
   * Walk valid frames from `from` to the end, calling `onFrame` for each. Stops at the first frame that
   * is torn or fails its checksum, or at a gap between segments.
   */
  async scan(
    from: number,
    onFrame: (buf: Buffer, off: number, position: number, type: number) => void,
  ): Promise<ScanResult> {
    const result = await scanFrames(this.files, this.fs, from, this.writePos, onFrame);
    const last = this.segments.at(-1);
    if (result.zeroTail && last && result.validEnd < last.base + last.written) {
      // The unwritten rest of the active segment (a crash came before `close` cut it): the log ends
      // at its last record. Cut the file there, so that nothing past it can ever be read as a frame,
      // and size it ahead again. A segment with no record at all is removed, not quarantined.
      if (result.validEnd === last.base) last.written = last.fill = 0;
      await this.truncate(result.validEnd, false, 0, true);
    } else if (!result.problem && last) {
      await this.files.extend(last);
    }
    return result;
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
    stamp = 0,
    /** Everything past `position` was never written (the zeros of a segment sized ahead). */
    unwritten = false,
  ): Promise<{ truncatedBytes: number; quarantined: string[] }> {
    const sfs = this.fs;
    let truncatedBytes = 0;
    const quarantined: string[] = [];
    const qdir = join(this.opts.dir, 'quarantine');
    while (this.segments.length > 0 && this.segments.at(-1)!.base >= position) {
      const seg = this.segments.pop()!;
      await this.files.close(seg);
      if (seg.written === 0) {
        await sfs.unlink(seg.path).catch(() => {});
        continue;
      }
      await ensureDir(sfs, qdir);
      const name = `${segmentName(seg.base)}.${stamp}`;
      await sfs.rename(seg.path, join(qdir, name));
      truncatedBytes += seg.written;
      quarantined.push(name);
    }
    const seg = this.segments.at(-1);
    if (seg && seg.base + seg.written > position) {
      const keep = position - seg.base;
      // A segment sized ahead holds zeros past its last write: they are not part of the tail.
      if (this.presized && !unwritten)
        seg.written = await this.files.use(seg, (fd) => nonZeroEnd(sfs, fd, keep, seg.written));
      if (preserveTail && seg.written > keep) {
        await ensureDir(sfs, qdir);
        const name = `${segmentName(seg.base)}.tail-at-${keep}.${stamp}`;
        await this.files.use(seg, (fd) => copyRange(sfs, fd, keep, seg.written - keep, join(qdir, name)));
        quarantined.push(name);
      }
      truncatedBytes += seg.written - keep;
      await this.files.use(seg, async (fd) => {
        await sfs.ftruncate(fd, keep);
        await sfs.fdatasync(fd);
      });
      seg.written = seg.fill = keep;
    }
    if (seg) await this.files.extend(seg);
    this.dropCache();
    if (quarantined.length > 0) await fsyncDir(sfs, qdir);
    await fsyncDir(sfs, this.opts.dir);
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
      // Reads under way keep their descriptor: it is closed when the last of them is done.
      seg.retired = true;
      if (seg.users === 0) await this.files.close(seg);
      await this.fs.unlink(seg.path);
      removed.push({ base: seg.base, end: seg.base + seg.fill });
    }
    while (this.cached.length > 0 && this.cached[0]!.position < this.startPosition) this.evictOldest();
    this.chunks?.dropBelow(this.startPosition);
    if (removed.length) {
      try {
        await synced(fsyncDir(this.fs, this.opts.dir));
      } catch (err) {
        this.goFatal(err as Error, 'fsync of the log directory failed');
        throw readOnlyError(this.fatal!);
      }
    }
    return removed;
  }

  /**
   * Make the log read-only now (another part of the store had a fatal I/O failure): every pending
   * and future append is refused until a restart.
   */
  failWrites(err: Error): void {
    this.goFatal(err, 'the store went read-only');
  }

  /** Close descriptors of sealed segments no read is using (relief when the process runs out of them). */
  releaseIdleDescriptors(): Promise<number> {
    return this.files.releaseIdle();
  }

  /** Flush and fsync everything, cut the active segment to its records, then close all files. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.syncTimer) clearInterval(this.syncTimer);
    try {
      if (!this.fatal && !this.transient) {
        await this.sync();
        // Not cut (a failure here): the next start finds the zeros past the last record and cuts them.
        const last = this.segments.at(-1);
        if (last && !last.fresh) await this.files.fit(last).catch(() => {});
      }
    } finally {
      this.closed = true;
      await this.files.closeAll();
    }
  }

  // ------------------------------------------------------------------------------------------------

  private newSegment(): Segment {
    return this.files.create(this.writePos);
  }

  private newSlab(segment: Segment, minSize: number): Slab {
    if (this.slab) this.closedSlabs.push(this.slab);
    const size = Math.max(SLAB_SIZE, minSize);
    const buf =
      size === SLAB_SIZE && this.freeSlabs.length > 0 ? this.freeSlabs.pop()! : Buffer.allocUnsafe(size);
    this.slab = { buf, used: 0, taken: 0, segment, position: this.writePos };
    return this.slab;
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
        if (!this.fatal && !this.transient && this.writePos > this.durablePos) this.scheduleFlush();
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
    this.writing = this.closedSlabs;
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
    while (!this.fatal && !this.transient && this.writePos > this.durablePos) {
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
          const started = performance.now();
          this.inlineGate.flushing(this, started);
          if (!this.writeInline(seg, bufs, bytes, start - seg.base, started)) {
            // Not a write that creates its segment: that takes several fsyncs on any disk.
            const observe = bytes <= this.inlineBytes && !seg.fresh;
            await this.files.use(seg, (fd) => writeAll(this.fs, fd, bufs, start - seg.base));
            if (observe) this.wroteInPool(bytes, started);
          }
          seg.written = Math.max(seg.written, start - seg.base + bytes);
          touched.push(seg);
        }
        // Under sync the writes above were O_DSYNC, so every byte is durable before anyone hears
        // "stored". Under async a segment being left behind is fsynced once, so only the active
        // segment has a loss window.
        if (this.opts.flush === 'async') {
          for (const seg of touched)
            if (seg !== this.segments.at(-1))
              await this.files.use(seg, (fd) => synced(this.fs.fdatasync(fd)));
        }
      } catch (err) {
        await this.onWriteFailure(err as Error);
        return;
      }
      this.durablePos = end;
      if (this.opts.flush === 'sync') this.syncedPos = end;
      this.writing = [];
      for (const c of chunks) if (c.releasesSlab) this.retire(c.slab);
      this.opts.onDurable?.(end);
      this.releaseWaiters();
    }
  }

  /**
   * Write a small flush on the calling thread (`inlineWriteBytes`), if the segment's descriptor is
   * open, the event loop has time to spare (loop-load.ts), the disk has not been slow lately and no
   * other log of the process is writing (inline-writes.ts). Returns false when the caller must write
   * it through the thread pool instead; a failed write throws, as the thread-pool write would reject.
   * `started` is `performance.now()` as the flush began.
   */
  private writeInline(seg: Segment, bufs: Buffer[], bytes: number, at: number, started: number): boolean {
    // A segment this process is creating is opened (and its directory entry made durable) by the
    // thread-pool path first.
    if (bytes > this.inlineBytes || seg.fresh) return false;
    if (!this.inlineGate.isOpen(started, this) || !loopLoad.hasTimeToSpare(started)) return false;
    const done = this.files.useSync(seg, (fd) => {
      writeAllSync(this.fs, fd, bufs, at);
      return true;
    });
    if (!done) return false;
    const took = performance.now() - started;
    loopLoad.wrote(took);
    const pause = this.inlineGate.wroteOnLoop(started, took);
    if (pause > 0) {
      // Once per slow spell at warn level; while it lasts, each probe only at debug.
      const log = pause === INLINE_PAUSE_MS ? this.opts.logger.warn : this.opts.logger.debug;
      log.call(
        this.opts.logger,
        { dir: this.opts.dir, bytes, ms: Math.round(took), pauseMs: pause },
        `a write on the event loop was slow: the store's writes go through the thread pool for ${pause} ms`,
      );
    }
    return true;
  }

  /** A small flush went through the thread pool: a stalling disk keeps every log's writes off the loop. */
  private wroteInPool(bytes: number, started: number): void {
    const took = performance.now() - started;
    const pause = this.inlineGate.wroteInPool(started, took);
    if (pause > 0) {
      this.opts.logger.debug(
        { dir: this.opts.dir, bytes, ms: Math.round(took), pauseMs: pause },
        `a small durable write was slow: the store's writes stay off the event loop for ${pause} ms more`,
      );
    }
  }

  /** A closed slab all of whose bytes are durable: into the read cache, or back to the pool. */
  private retire(slab: Slab): void {
    const budget = this.opts.readCacheBytes ?? 0;
    if (budget <= 0 || slab.used === 0) {
      if (slab.buf.length === SLAB_SIZE) this.recycle(slab.buf);
      return;
    }
    this.cached.push(slab);
    this.cachedBytes += slab.buf.length;
    while (this.cachedBytes > budget && this.cached.length > 0) this.evictOldest();
  }

  private evictOldest(): void {
    const slab = this.cached.shift()!;
    this.cachedBytes -= slab.buf.length;
    if (slab.buf.length === SLAB_SIZE) this.recycle(slab.buf);
  }

  /** Forget the read caches (their slabs are not recycled: nothing must be served from them again). */
  private dropCache(): void {
    this.cached = [];
    this.cachedBytes = 0;
    this.chunks?.clear();
  }

  /** The slab in memory holding byte `position` (below `limit`), if any. */
  private slabHolding(position: number, limit: number): Slab | null {
    if (position >= limit) return null;
    const s = this.slab;
    if (s && position >= s.position && position < s.position + s.used) return s;
    for (const c of this.closedSlabs) if (position >= c.position && position < c.position + c.used) return c;
    for (const c of this.writing) if (position >= c.position && position < c.position + c.used) return c;
    const cached = this.cached;
    let lo = 0;
    let hi = cached.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const c = cached[mid]!;
      if (position < c.position) hi = mid - 1;
      else if (position >= c.position + c.used) lo = mid + 1;
      else return c;
    }
    return null;
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

  /** Forget every reservation past the durable end and reject whoever waits for it. */
  private dropUnflushed(error: Error): Segment[] {
    const durable = this.durablePos;
    this.slab = null;
    this.closedSlabs = [];
    this.writing = [];
    this.dropCache();
    this.writePos = durable;
    const dropped: Segment[] = [];
    while (this.segments.length > 1 && this.segments.at(-1)!.base >= durable)
      dropped.push(this.segments.pop()!);
    const seg = this.segments.at(-1);
    if (seg) seg.fill = Math.min(seg.fill, durable - seg.base);
    this.opts.onRollback?.(durable);
    const rejected = this.waiters;
    this.waiters = [];
    for (const w of rejected) w.reject(error);
    return dropped;
  }

  private async onWriteFailure(err: Error): Promise<void> {
    if (!(err instanceof SyncFailure) && isTransient(err)) {
      await this.rollBack(err);
      return;
    }
    this.goFatal(err, 'log write failed');
  }

  /**
   * A transient failure (no space, no descriptors): nothing past the durable end was acknowledged,
   * and the bytes of the failed call never reached the file. Cut the files back to the durable end
   * and make that durable, then accept appends again. If that fails too, the log goes read-only.
   */
  private async rollBack(err: Error): Promise<void> {
    const durable = this.durablePos;
    const error = transientError(err, `writing ${this.opts.dir}`);
    this.transient = error;
    this.opts.logger.warn(
      { err, durableEnd: durable },
      'log write failed for lack of space or descriptors; rolling back unacknowledged records',
    );
    const dropped = this.dropUnflushed(error);
    this.opts.onTransient?.(err);
    const seg = this.segments.at(-1);
    try {
      for (const d of dropped) {
        await this.files.close(d);
        if (!d.fresh) {
          await this.fs.unlink(d.path).catch((e: unknown) => {
            if (errnoOf(e) !== 'ENOENT') throw e;
          });
        }
      }
      if (seg && !seg.fresh) {
        // A partly completed write may have landed past what `written` says: always cut the file.
        const keep = durable - seg.base;
        await this.files.use(seg, async (fd) => {
          await this.fs.ftruncate(fd, keep);
          await synced(this.fs.fdatasync(fd));
        });
        seg.written = keep;
      }
      if (dropped.some((d) => !d.fresh)) await synced(fsyncDir(this.fs, this.opts.dir));
      await this.opts.afterRollback?.();
      this.transient = null;
      // Reads and writes may have been refused descriptors too: give back the idle ones.
      if (isDescriptorError(err)) {
        await this.files.releaseIdle();
        await this.opts.releaseDescriptors?.();
      }
    } catch (rollbackErr) {
      this.transient = null;
      this.goFatal(rollbackErr as Error, 'log rollback failed');
    }
  }

  private goFatal(err: Error, what: string): void {
    if (this.fatal) return;
    const cause = err instanceof SyncFailure ? (err.cause as Error) : err;
    this.fatal = cause;
    this.opts.logger.fatal(
      { err: cause, dir: this.opts.dir, durableEnd: this.durablePos },
      `${what}: the log is READ-ONLY until the broker restarts and recovers from disk`,
    );
    this.dropUnflushed(readOnlyError(cause));
    this.opts.onFatal?.(cause);
  }
}
