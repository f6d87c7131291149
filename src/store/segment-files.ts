/**
 * The segment files of a `SegmentLog` and their descriptors. The active (last) segment stays open;
 * sealed segments opened for reads are kept in a small cache (`maxOpen`, least recently used closed
 * first) and are never closed under a read or a write (`use` counts users). A segment created by this
 * process is created on its first open, and its directory entry fsynced before anything in it is
 * acknowledged. Retention retires a segment: its descriptor closes when its last user is done.
 *
 * **Sized ahead** (`presize`): a new segment's file is extended to the full segment size when it is
 * created (sparse: no blocks written), so that a durable append does not also change the file's size
 * — on ext4 an `O_DSYNC` append that grows a file commits the file system's journal too, one that
 * lands inside it mostly does not (`bench/fsync-floor.ts` measures the difference). Only the active
 * segment is ever longer than its records: the one before it is cut to its last record, durably,
 * before the new one is created, and `SegmentLog.close` cuts the active one. After a crash the rest
 * of the active segment reads as zeros, where recovery's scan stops (segment-scan.ts).
 */
import { join } from 'node:path';
import type { FlushPolicy } from '../common/config.js';
import { errnoOf, fsyncDir, O, type StoreFs } from './store-fs.js';
import { synced } from './io-errors.js';

export interface Segment {
  base: number;
  /** Bytes assigned to this segment (durable + pending). */
  fill: number;
  /** Bytes known to be in the file. */
  written: number;
  fd: number | null;
  path: string;
  /** Created by this process and not yet opened: the first open creates the file and fsyncs the directory. */
  fresh: boolean;
  /** Reads and writes using the descriptor right now: it is never closed under them. */
  users: number;
  /** Deleted by retention: close the descriptor once the last user is done. */
  retired: boolean;
  lastUse: number;
}

export interface SegmentFilesOptions {
  dir: string;
  fs: StoreFs;
  flush: FlushPolicy;
  /** Sealed segments kept open for reads. */
  maxOpen: number;
  /** Everything below this is fsynced (under `async`, a segment is evicted only once it is). */
  syncedEnd: () => number;
  /** Asked to close idle descriptors elsewhere when an open fails with EMFILE; returns how many it closed. */
  releaseElsewhere?: () => Promise<number>;
  /** Size a new segment's file to this many bytes when it is created (0: grow it append by append). */
  presize: number;
}

const SEGMENT_NAME = /^(\d{20})\.log$/;

export function segmentName(base: number): string {
  return `${String(base).padStart(20, '0')}.log`;
}

export function isDescriptorError(err: unknown): boolean {
  const c = errnoOf(err);
  return c === 'EMFILE' || c === 'ENFILE';
}

export class SegmentFiles {
  /** Oldest first; the last one is the active segment. */
  readonly list: Segment[] = [];
  private useClock = 0;

  constructor(private readonly o: SegmentFilesOptions) {}

  /** Read the directory's segment files (sizes from the file system). */
  async load(): Promise<void> {
    const names = (await this.o.fs.readdir(this.o.dir)).filter((n) => SEGMENT_NAME.test(n)).sort();
    for (const name of names) {
      const path = join(this.o.dir, name);
      const size = (await this.o.fs.stat(path)).size;
      this.list.push(segment(Number(SEGMENT_NAME.exec(name)![1]), path, size, false));
    }
  }

  /** Open descriptors (the active segment and cached sealed ones). */
  get openDescriptors(): number {
    return this.list.filter((s) => s.fd !== null).length;
  }

  /** A new (empty, not yet created) segment starting at `base`, now the active one. */
  create(base: number): Segment {
    const seg = segment(base, join(this.o.dir, segmentName(base)), 0, true);
    this.list.push(seg);
    return seg;
  }

  /** The segment holding `position`, by binary search. */
  at(position: number): Segment | undefined {
    const segs = this.list;
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

  /** Run `fn` with the segment's descriptor, which stays open until it is done. */
  async use<T>(seg: Segment, fn: (fd: number) => Promise<T>): Promise<T> {
    seg.users++;
    seg.lastUse = ++this.useClock;
    try {
      return await fn(await this.fdOf(seg));
    } finally {
      seg.users--;
      if (seg.users === 0 && seg.retired) await this.close(seg).catch(() => {});
    }
  }

  /**
   * `fn` with the segment's descriptor, on the calling thread, if it is open; undefined if not (the
   * caller goes the asynchronous way, which opens it). Nothing can close it under a synchronous call.
   */
  useSync<T>(seg: Segment, fn: (fd: number) => T): T | undefined {
    if (seg.fd === null) return undefined;
    seg.lastUse = ++this.useClock;
    return fn(seg.fd);
  }

  /** Close the segment's descriptor, if open. */
  async close(seg: Segment): Promise<void> {
    if (seg.fd !== null) {
      const fd = seg.fd;
      seg.fd = null;
      await this.o.fs.close(fd);
    }
  }

  /** Close every descriptor (shutdown). */
  async closeAll(): Promise<void> {
    for (const seg of this.list) await this.close(seg).catch(() => {});
  }

  /** Close descriptors of sealed segments no read is using (relief when the process runs out of them). */
  async releaseIdle(): Promise<number> {
    let closed = 0;
    const active = this.list.at(-1);
    for (const seg of this.list) {
      if (seg === active || seg.fd === null || seg.users > 0 || !this.evictable(seg)) continue;
      await this.close(seg);
      closed++;
    }
    return closed;
  }

  private async fdOf(seg: Segment): Promise<number> {
    if (seg.fd === null) {
      // A segment created by this process starts empty; an existing one is opened for read and write.
      // Under `sync` every write is made durable by the write itself (O_DSYNC): one round trip to the
      // thread pool per group commit instead of a write followed by an fdatasync.
      const fresh = seg.fresh;
      // The segment before a new one is cut to its records before the new file exists, so that only
      // the last segment can be longer than its records.
      if (fresh) await this.fitPrevious(seg);
      const flags =
        (fresh ? O.O_RDWR | O.O_CREAT | O.O_TRUNC : O.O_RDWR) | (this.o.flush === 'sync' ? O.O_DSYNC : 0);
      let fd: number;
      try {
        fd = await this.o.fs.open(seg.path, flags);
      } catch (err) {
        // Out of descriptors: give back the idle ones (ours and the store's) and try once more.
        if (!isDescriptorError(err)) throw err;
        const freed = (await this.releaseIdle()) + ((await this.o.releaseElsewhere?.()) ?? 0);
        if (freed === 0) throw err;
        fd = await this.o.fs.open(seg.path, flags);
      }
      if (seg.fd !== null) {
        await this.o.fs.close(fd);
        return seg.fd;
      }
      seg.fd = fd;
      if (fresh) {
        if (this.o.presize > 0) await this.extend(seg);
        // The new file's directory entry must be durable before any record in it is acknowledged.
        await synced(fsyncDir(this.o.fs, this.o.dir));
        seg.fresh = false;
      }
      if (this.sealedOpen().length > this.o.maxOpen) void this.trimSealed();
    }
    return seg.fd;
  }

  /** Size the segment's file to the full segment size (durably), unless it already is. */
  async extend(seg: Segment): Promise<void> {
    if (this.o.presize <= 0 || seg.written >= this.o.presize) return;
    await this.resize(seg, this.o.presize);
  }

  /** Cut a segment's file to its records (durably): `SegmentLog.close`, and a segment left behind. */
  async fit(seg: Segment): Promise<void> {
    if (this.o.presize <= 0) return;
    await this.resize(seg, seg.fill);
    seg.written = seg.fill;
  }

  private resize(seg: Segment, length: number): Promise<void> {
    return this.use(seg, async (fd) => {
      await this.o.fs.ftruncate(fd, length);
      await synced(this.o.fs.fdatasync(fd));
    });
  }

  private async fitPrevious(seg: Segment): Promise<void> {
    const i = this.list.indexOf(seg);
    const prev = i > 0 ? this.list[i - 1] : undefined;
    if (prev && !prev.fresh && !prev.retired) await this.fit(prev);
  }

  private evictable(seg: Segment): boolean {
    // Under `async` a segment with unsynced bytes keeps its descriptor until they are fsynced.
    return this.o.flush === 'sync' || seg.base + seg.written <= this.o.syncedEnd();
  }

  private sealedOpen(): Segment[] {
    const active = this.list.at(-1);
    return this.list.filter((s) => s !== active && s.fd !== null);
  }

  private async trimSealed(): Promise<void> {
    const open = this.sealedOpen();
    let excess = open.length - this.o.maxOpen;
    const idle = open.filter((s) => s.users === 0 && this.evictable(s)).sort((a, b) => a.lastUse - b.lastUse);
    for (const seg of idle) {
      if (excess <= 0) break;
      if (seg.users === 0 && seg.fd !== null) {
        await this.close(seg).catch(() => {});
        excess--;
      }
    }
  }
}

function segment(base: number, path: string, size: number, fresh: boolean): Segment {
  return { base, fill: size, written: size, fd: null, path, fresh, users: 0, retired: false, lastUse: 0 };
}
