/**
 * The schedule index: a time-ordered index over the log, for records to act on later (the broker's
 * delay messages). The records themselves stay in the log; this index only says *when* each is due
 * and *where* it is, in files that each cover one slab of time, so that only the slabs about to fall
 * due are ever read into memory: memory does not grow with the number of scheduled records.
 *
 *   <dir>/meta.json              { version, slabMs } (fixed when the directory is created)
 *   <dir>/labels                 one JSON string per line: the names entries refer to by number
 *   <dir>/checkpoint.json        the owner's recovery checkpoint (opaque here)
 *   <dir>/slabs/<start>.slab     the entries due in [start, start + slabMs)
 *
 * A slab file is append-only. Each 24-byte entry (little-endian) is
 *
 *   u8 kind | u8 magic 0x56 | u16 check (low 16 bits of the CRC-32 of bytes 4..23)
 *   u32 label | f64 due (ms) | f64 log position
 *
 * where `kind` is SCHEDULED (the record at that position is due then), or a mark about an entry of
 * the same slab: CANCELLED, DISPATCHING (its delivery is under way) or DONE. Reading a slab folds
 * the marks into each entry's state; an entry written twice (the owner re-indexed it after a crash)
 * counts once, and a torn or zeroed tail is ignored. Writes of entries are buffered and not synced
 * (the owner can rebuild them from the log); marks that must survive a power cut are synced before
 * the call returns.
 *
 * All I/O goes through a `StoreFs` and follows the store's failure rules (io-errors.ts): a write
 * that runs out of space or descriptors is rolled back (the file cut back to where it was, buffered
 * entries kept for the next try) and reported as transient; a failed fsync, or a write that cannot be
 * rolled back, makes the index read-only until a restart, since what it wrote since its last good
 * fsync can no longer be trusted: every later write is refused with STORE_IO_ERROR.
 *
 * One file on purpose: the slab file format, its reader and its writer change together.
 */
import { join } from 'node:path';
import { silentLogger, type Logger } from '../common/logger.js';
import { VelaError, isVelaError } from '../common/errors.js';
import { readFileIfExists, writeFileAtomic } from './atomic-file.js';
import { SerialExecutor } from '../common/serial-executor.js';
import { ensureDir, errnoOf, fsyncDir, nodeStoreFs, O, writeAll, type StoreFs } from './store-fs.js';
import { isRetriable, readOnlyError, rootCause, synced, transientError } from './io-errors.js';

export const ScheduleKind = {
  SCHEDULED: 1,
  CANCELLED: 2,
  DISPATCHING: 3,
  DONE: 4,
} as const;
export type ScheduleKind = (typeof ScheduleKind)[keyof typeof ScheduleKind];

export const ENTRY_SIZE = 24;
const MAGIC = 0x56;
const META_VERSION = 1;
/**
 * Slab span of a new index: a minute of due times per file, so an hour's schedule is 60 files (each
 * checkpoint syncs the files written since the last), and the one or two slabs in memory hold a
 * minute or two of deliveries.
 */
export const DEFAULT_SLAB_MS = 60_000;
/** Entries parsed between two yields to the event loop. */
const PARSE_SLICE = 32_768;

export interface ScheduleEntry {
  due: number;
  position: number;
  label: number;
}

/** Entries in parallel arrays (compact: 20 bytes each). */
export interface EntryArrays {
  length: number;
  due: Float64Array;
  position: Float64Array;
  label: Uint32Array;
}

/** What a slab holds, marks folded in. */
export interface SlabState {
  start: number;
  /** Scheduled, not cancelled, and no delivery begun. */
  pending: EntryArrays;
  /** A delivery began (DISPATCHING) but was never marked DONE: the owner must find out. */
  uncertain: EntryArrays;
  /** Positions of cancelled entries. */
  cancelled: Set<number>;
  /** Highest position of any entry (0 when none). */
  maxPosition: number;
}

/** Counts per label of the entries still to deliver (pending or uncertain), for one slab. */
export interface SlabSummary {
  start: number;
  counts: Map<number, number>;
  maxPosition: number;
}

export interface ScheduleIndexOptions {
  dir: string;
  /** Whether marks asked to be durable are fsynced (false under an `async` flush policy). */
  sync: boolean;
  /** Span of one slab for a new directory (an existing one keeps its own). @defaultValue 60000 */
  slabMs?: number;
  logger?: Logger;
  /** The file-system calls (tests put faults underneath). @defaultValue Node's fs */
  fs?: StoreFs;
}

/** Slab files kept open at most. */
const MAX_OPEN_SLABS = 64;
/** Slab files written or synced at once. */
const PARALLEL_IO = 8;

interface SlabHandle {
  fd: number;
  /** Bytes in the file (where the next entry goes). */
  size: number;
}

const SCHEDULED_BIT = 1;
const CANCELLED_BIT = 2;
const DISPATCHING_BIT = 4;
const DONE_BIT = 8;
const FLAG_OF: Record<number, number> = {
  [ScheduleKind.SCHEDULED]: SCHEDULED_BIT,
  [ScheduleKind.CANCELLED]: CANCELLED_BIT,
  [ScheduleKind.DISPATCHING]: DISPATCHING_BIT,
  [ScheduleKind.DONE]: DONE_BIT,
};

/** FNV-1a over bytes [off + 4, off + 24) of an entry, low 16 bits: cheap to check at load. */
function entryCheck(buf: Buffer, off: number): number {
  let h = 0x811c9dc5;
  for (let i = off + 4; i < off + ENTRY_SIZE; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
  return (h ^ (h >>> 16)) & 0xffff;
}

export function encodeEntry(buf: Buffer, off: number, kind: ScheduleKind, e: ScheduleEntry): void {
  buf[off] = kind;
  buf[off + 1] = MAGIC;
  buf.writeUInt32LE(e.label >>> 0, off + 4);
  buf.writeDoubleLE(e.due, off + 8);
  buf.writeDoubleLE(e.position, off + 16);
  buf.writeUInt16LE(entryCheck(buf, off), off + 2);
}

function emptyArrays(capacity: number): EntryArrays {
  return {
    length: 0,
    due: new Float64Array(capacity),
    position: new Float64Array(capacity),
    label: new Uint32Array(capacity),
  };
}

function pushEntry(a: EntryArrays, due: number, position: number, label: number): void {
  a.due[a.length] = due;
  a.position[a.length] = position;
  a.label[a.length] = label;
  a.length++;
}

interface ParsedSlab {
  /** The scheduled entries, each once, in file order. */
  scheduled: EntryArrays;
  /** Flags of the marks, by position. */
  marks: Map<number, number>;
  damaged: number;
}

/**
 * Read a slab file: its scheduled entries (each once) and its marks, by position; a torn or damaged
 * entry is skipped. Entries are appended in log order, so positions normally only grow: duplicates
 * (an entry indexed again after a crash) are looked for only when one does not.
 */
async function parseSlab(buf: Buffer): Promise<ParsedSlab> {
  const n = Math.floor(buf.length / ENTRY_SIZE);
  const scheduled = emptyArrays(n);
  const marks = new Map<number, number>();
  let damaged = 0;
  let maxPos = -1;
  let ordered = true;
  for (let i = 0; i < n; i++) {
    // A big slab is read in slices, so that deliveries due meanwhile are not held up.
    if ((i & (PARSE_SLICE - 1)) === PARSE_SLICE - 1) await new Promise<void>((r) => setImmediate(r));
    const off = i * ENTRY_SIZE;
    const flag = FLAG_OF[buf[off]!];
    if (flag === undefined || buf[off + 1] !== MAGIC || entryCheck(buf, off) !== buf.readUInt16LE(off + 2)) {
      damaged++;
      continue;
    }
    const pos = buf.readDoubleLE(off + 16);
    if (flag === SCHEDULED_BIT) {
      if (pos <= maxPos) ordered = false;
      else maxPos = pos;
      pushEntry(scheduled, buf.readDoubleLE(off + 8), pos, buf.readUInt32LE(off + 4));
    } else marks.set(pos, (marks.get(pos) ?? 0) | flag);
  }
  if (!ordered) {
    const seen = new Set<number>();
    const unique = emptyArrays(scheduled.length);
    for (let i = 0; i < scheduled.length; i++) {
      const pos = scheduled.position[i]!;
      if (seen.has(pos)) continue;
      seen.add(pos);
      pushEntry(unique, scheduled.due[i]!, pos, scheduled.label[i]!);
    }
    return { scheduled: unique, marks, damaged };
  }
  return { scheduled, marks, damaged };
}

const isTerminal = (f: number) => (f & (CANCELLED_BIT | DONE_BIT)) !== 0;

export class ScheduleIndex {
  private readonly serial = new SerialExecutor();
  /** Starts of the slabs that have a file (or buffered entries). */
  private readonly known = new Set<number>();
  /** Buffered entries per slab, not yet written. */
  private readonly buffered = new Map<number, Buffer[]>();
  /** Slabs written since the last `sync()`. */
  private readonly dirty = new Set<number>();
  private dirDirty = false;
  /** Per slab, the sequence number of the last entry added (see `generation`). */
  private readonly lastAdd = new Map<number, number>();
  private addSeq = 0;
  /** Open slab files, least recently used first. */
  private readonly handles = new Map<number, SlabHandle>();
  private readonly labels: string[] = [];
  private readonly labelIds = new Map<string, number>();
  /** Bytes of whole label lines in the labels file (where the next one goes). */
  private labelsSize = 0;
  private closed = false;
  /** The failure that made the index read-only (see the header). */
  private failure: Error | null = null;

  private constructor(
    private readonly dir: string,
    readonly slabMs: number,
    private readonly syncMarks: boolean,
    private readonly logger: Logger,
    private readonly fs: StoreFs,
  ) {}

  static async open(o: ScheduleIndexOptions): Promise<ScheduleIndex> {
    const logger = o.logger ?? silentLogger();
    const sfs = o.fs ?? nodeStoreFs;
    await ensureDir(sfs, join(o.dir, 'slabs'));
    const metaPath = join(o.dir, 'meta.json');
    const meta = await readFileIfExists(metaPath, sfs);
    let slabMs = o.slabMs ?? DEFAULT_SLAB_MS;
    if (meta) {
      const m = JSON.parse(meta.toString('utf8')) as { version: number; slabMs: number };
      if (m.version !== META_VERSION || !(m.slabMs > 0)) {
        throw new VelaError('STORE_CORRUPT_RECORD', `unsupported schedule index in ${o.dir}`);
      }
      slabMs = m.slabMs;
    } else {
      await writeFileAtomic(metaPath, JSON.stringify({ version: META_VERSION, slabMs }), sfs);
    }
    const index = new ScheduleIndex(o.dir, slabMs, o.sync, logger, sfs);
    const labelsPath = join(o.dir, 'labels');
    const labels = await readFileIfExists(labelsPath, sfs);
    if (labels) {
      let at = 0;
      while (at < labels.length) {
        const nl = labels.indexOf(0x0a, at);
        if (nl < 0) break; // a torn last line: the label was never acknowledged
        try {
          index.remember(JSON.parse(labels.toString('utf8', at, nl)) as string);
        } catch {
          break;
        }
        at = nl + 1;
      }
      index.labelsSize = at;
      // Cut a torn tail, so that the next label starts a line of its own.
      if (at < labels.length) await cutFile(sfs, labelsPath, at);
    }
    for (const f of await sfs.readdir(join(o.dir, 'slabs'))) {
      const m = /^(\d+)\.slab$/.exec(f);
      if (m) index.known.add(Number(m[1]));
    }
    return index;
  }

  /** The start of the slab a due time falls in. */
  slabOf(due: number): number {
    return Math.floor(due / this.slabMs) * this.slabMs;
  }

  /** Starts of every slab holding entries, in time order. */
  slabs(): number[] {
    return [...this.known].sort((a, b) => a - b);
  }

  has(start: number): boolean {
    return this.known.has(start);
  }

  /** The failure that made the index read-only, if any: every write is refused until a restart. */
  get readOnly(): Error | null {
    return this.failure;
  }

  labelOf(name: string): number | undefined {
    return this.labelIds.get(name);
  }

  nameOf(label: number): string | undefined {
    return this.labels[label - 1];
  }

  /**
   * The label of `name`, created (durably) if new. Refused (STORE_IO_ERROR) once the index is
   * read-only, known or not: nothing more can be scheduled.
   */
  ensureLabel(name: string): Promise<number> {
    if (this.failure) return Promise.reject(readOnlyError(this.failure));
    const known = this.labelIds.get(name);
    if (known !== undefined) return Promise.resolve(known);
    return this.serial.run(async () => {
      this.refuseIfReadOnly();
      const again = this.labelIds.get(name);
      if (again !== undefined) return again;
      const line = Buffer.from(`${JSON.stringify(name)}\n`);
      const path = join(this.dir, 'labels');
      let fd: number;
      try {
        fd = await this.fs.open(path, O.O_WRONLY | O.O_CREAT);
      } catch (err) {
        throw this.writeFailed(err, 'opening the schedule labels');
      }
      const created = this.labelsSize === 0;
      try {
        try {
          await writeAll(this.fs, fd, [line], this.labelsSize);
        } catch (err) {
          // Nothing of the line may stay behind: the next label would be glued to it.
          throw await this.rollBack(fd, this.labelsSize, err, 'writing a schedule label');
        }
        await this.synced(this.fs.fdatasync(fd), 'fsync of the schedule labels failed');
      } finally {
        await this.fs.close(fd).catch(() => {});
      }
      // The first label created the file: its directory entry must be as durable as its line.
      if (created) await this.synced(fsyncDir(this.fs, this.dir), 'fsync of the schedule directory failed');
      this.labelsSize += line.length;
      return this.remember(name);
    });
  }

  /**
   * Changes whenever an entry is added to the slab: `delete(start, generation)` deletes nothing if
   * an entry arrived after the generation was read.
   */
  generation(start: number): number {
    return this.lastAdd.get(start) ?? 0;
  }

  /** Buffer new SCHEDULED entries (written by the next `flush`, `mark`, `load` or `sync`). */
  add(entries: readonly ScheduleEntry[]): void {
    if (this.closed) throw new VelaError('STORE_CLOSED');
    for (const e of entries) {
      const start = this.slabOf(e.due);
      this.lastAdd.set(start, ++this.addSeq);
      const buf = Buffer.allocUnsafe(ENTRY_SIZE);
      encodeEntry(buf, 0, ScheduleKind.SCHEDULED, e);
      let list = this.buffered.get(start);
      if (!list) this.buffered.set(start, (list = []));
      list.push(buf);
      this.known.add(start);
    }
  }

  /** Write buffered entries out (not synced). */
  flush(): Promise<void> {
    return this.serial.run(() => {
      this.refuseIfReadOnly();
      return this.flushNow();
    });
  }

  /**
   * Append marks about entries (each goes to the slab of its due time, after any buffered entries of
   * that slab). With `durable`, the files are synced before this resolves (under a sync policy).
   */
  mark(
    kind: Exclude<ScheduleKind, typeof ScheduleKind.SCHEDULED>,
    entries: readonly ScheduleEntry[],
    durable: boolean,
  ): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return this.serial.run(async () => {
      this.refuseIfReadOnly();
      const bySlab = new Map<number, Buffer[]>();
      for (const e of entries) {
        const start = this.slabOf(e.due);
        const buf = Buffer.allocUnsafe(ENTRY_SIZE);
        encodeEntry(buf, 0, kind, e);
        let list = bySlab.get(start);
        if (!list) bySlab.set(start, (list = []));
        list.push(buf);
      }
      for (const [start, bufs] of bySlab) {
        const before = this.buffered.get(start);
        if (before) {
          this.buffered.delete(start);
          bufs.unshift(...before);
        }
        try {
          await this.append(start, bufs, durable && this.syncMarks);
        } catch (err) {
          // The slab's buffered entries wait for the next try; the marks are the caller's to retry.
          if (before) this.rebuffer(start, before);
          throw err;
        }
      }
      if (durable && this.syncMarks && this.dirDirty) await this.syncDir();
    });
  }

  /**
   * Buffer marks that need not be durable at once (DONE): written with the next `flush`, `sync`,
   * `mark` or `load`, so that frequent small deliveries cost no write each.
   */
  markLater(
    kind: Exclude<ScheduleKind, typeof ScheduleKind.SCHEDULED>,
    entries: readonly ScheduleEntry[],
  ): void {
    if (this.closed) throw new VelaError('STORE_CLOSED');
    for (const e of entries) {
      const start = this.slabOf(e.due);
      const buf = Buffer.allocUnsafe(ENTRY_SIZE);
      encodeEntry(buf, 0, kind, e);
      let list = this.buffered.get(start);
      if (!list) this.buffered.set(start, (list = []));
      list.push(buf);
    }
  }

  /** Whether entries or marks wait in memory to be written. */
  get hasBuffered(): boolean {
    return this.buffered.size > 0;
  }

  /** Read one slab (buffered entries included), marks folded in. */
  load(start: number): Promise<SlabState> {
    return this.serial.run(async () => {
      if (!this.failure) await this.flushSlab(start);
      const buf = await this.readSlab(start);
      const p = await parseSlab(buf);
      if (p.damaged > 0)
        this.logger.warn({ slab: start, damaged: p.damaged }, 'damaged schedule entries skipped');
      const { scheduled, marks } = p;
      const cancelled = new Set<number>();
      let maxPosition = 0;
      for (const [pos, f] of marks) {
        if (f & CANCELLED_BIT) cancelled.add(pos);
        if (pos > maxPosition) maxPosition = pos;
      }
      let pending: EntryArrays = scheduled;
      let uncertain = emptyArrays(0);
      for (let i = 0; i < scheduled.length; i++) {
        if (scheduled.position[i]! > maxPosition) maxPosition = scheduled.position[i]!;
      }
      if (marks.size > 0) {
        pending = emptyArrays(scheduled.length);
        uncertain = emptyArrays(Math.min(scheduled.length, marks.size));
        for (let i = 0; i < scheduled.length; i++) {
          const pos = scheduled.position[i]!;
          const f = marks.get(pos) ?? 0;
          if (isTerminal(f)) continue;
          pushEntry(f & DISPATCHING_BIT ? uncertain : pending, scheduled.due[i]!, pos, scheduled.label[i]!);
        }
      }
      return { start, pending, uncertain, cancelled, maxPosition };
    });
  }

  /** Per-label counts of what every slab still holds to deliver (read at start-up). */
  summarize(): Promise<SlabSummary[]> {
    return this.serial.run(async () => {
      if (!this.failure) await this.flushNow();
      const out: SlabSummary[] = [];
      for (const start of this.slabs()) {
        const { scheduled, marks } = await parseSlab(await this.readSlab(start));
        const counts = new Map<number, number>();
        let maxPosition = 0;
        for (const pos of marks.keys()) if (pos > maxPosition) maxPosition = pos;
        for (let i = 0; i < scheduled.length; i++) {
          const pos = scheduled.position[i]!;
          if (pos > maxPosition) maxPosition = pos;
          if (marks.size > 0 && isTerminal(marks.get(pos) ?? 0)) continue;
          const label = scheduled.label[i]!;
          counts.set(label, (counts.get(label) ?? 0) + 1);
        }
        out.push({ start, counts, maxPosition });
      }
      return out;
    });
  }

  /**
   * Remove a slab whose every entry is done or cancelled, unless entries were added to it after
   * `generation` (the caller's view of it) was read. Resolves whether it was removed.
   */
  delete(start: number, generation = this.generation(start)): Promise<boolean> {
    return this.serial.run(async () => {
      this.refuseIfReadOnly();
      if (this.generation(start) !== generation) return false; // entries arrived meanwhile: keep it
      this.known.delete(start);
      this.lastAdd.delete(start);
      this.buffered.delete(start);
      await this.closeHandle(start);
      this.dirty.delete(start);
      try {
        await this.fs.unlink(this.slabPath(start));
      } catch (err) {
        if (errnoOf(err) !== 'ENOENT') throw err;
      }
      this.dirDirty = true;
      return true;
    });
  }

  /** Write buffered entries and fsync every slab written since the last sync (and the directory). */
  sync(): Promise<void> {
    return this.serial.run(async () => {
      this.refuseIfReadOnly();
      await this.flushNow();
      const dirty = [...this.dirty];
      this.dirty.clear();
      await this.inParallel(dirty, async (start) => {
        let h: SlabHandle | undefined;
        try {
          h = await this.handle(start, false); // undefined: deleted meanwhile
        } catch (err) {
          this.dirty.add(start);
          throw err;
        }
        if (h) await this.synced(this.fs.fdatasync(h.fd), 'fsync of a schedule slab failed');
      });
      if (this.dirDirty) await this.syncDir();
    });
  }

  async readCheckpoint<T>(): Promise<T | null> {
    const b = await readFileIfExists(join(this.dir, 'checkpoint.json'), this.fs);
    return b ? (JSON.parse(b.toString('utf8')) as T) : null;
  }

  writeCheckpoint(data: unknown): Promise<void> {
    return this.serial.run(async () => {
      this.refuseIfReadOnly();
      try {
        await writeFileAtomic(join(this.dir, 'checkpoint.json'), JSON.stringify(data), this.fs);
      } catch (err) {
        throw this.writeFailed(err, 'writing the schedule checkpoint');
      }
    });
  }

  /** Write and sync what is buffered, close the files. Idempotent. A read-only index only closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (!this.failure) await this.sync();
    this.closed = true;
    await this.serial.run(async () => {
      for (const start of [...this.handles.keys()]) await this.closeHandle(start);
    });
  }

  // ------------------------------------------------------------------------------------------------

  private remember(name: string): number {
    this.labels.push(name);
    const id = this.labels.length;
    this.labelIds.set(name, id);
    return id;
  }

  private slabPath(start: number): string {
    return join(this.dir, 'slabs', `${String(start).padStart(15, '0')}.slab`);
  }

  private async readSlab(start: number): Promise<Buffer> {
    return (await readFileIfExists(this.slabPath(start), this.fs)) ?? Buffer.alloc(0);
  }

  private async flushNow(): Promise<void> {
    await this.inParallel([...this.buffered.keys()], (start) => this.flushSlab(start));
  }

  private async flushSlab(start: number): Promise<void> {
    const bufs = this.buffered.get(start);
    if (!bufs) return;
    this.buffered.delete(start);
    try {
      await this.append(start, bufs, false);
    } catch (err) {
      this.rebuffer(start, bufs); // written by the next try
      throw err;
    }
  }

  /** Put entries that could not be written back in front of whatever was buffered since. */
  private rebuffer(start: number, bufs: Buffer[]): void {
    const later = this.buffered.get(start);
    this.buffered.set(start, later ? [...bufs, ...later] : bufs);
  }

  /** Run `fn` over `starts`, a few at a time, keeping the number of open files bounded. */
  private async inParallel(starts: number[], fn: (start: number) => Promise<void>): Promise<void> {
    for (let i = 0; i < starts.length; i += PARALLEL_IO) {
      await Promise.all(starts.slice(i, i + PARALLEL_IO).map(fn));
      await this.trimHandles();
    }
  }

  private async append(start: number, bufs: Buffer[], durable: boolean): Promise<void> {
    const h = (await this.handle(start, true))!;
    const all = Buffer.concat(bufs);
    try {
      await writeAll(this.fs, h.fd, [all], h.size);
    } catch (err) {
      // A part of an entry left behind would shift every later one out of line.
      throw await this.rollBack(h.fd, h.size, err, 'writing a schedule slab');
    }
    h.size += all.length;
    this.dirty.add(start);
    if (durable) {
      await this.synced(this.fs.fdatasync(h.fd), 'fsync of a schedule slab failed');
      this.dirty.delete(start);
    }
    this.known.add(start);
  }

  /**
   * The open file of a slab (opened, and created if `create`, when not cached). A torn entry left
   * at its end by a crash is padded to a whole entry, so that what follows stays aligned.
   */
  private async handle(start: number, create: boolean): Promise<SlabHandle | undefined> {
    const cached = this.handles.get(start);
    if (cached) {
      this.handles.delete(start); // most recently used last
      this.handles.set(start, cached);
      return cached;
    }
    const path = this.slabPath(start);
    let fd: number;
    try {
      fd = await this.fs.open(path, O.O_RDWR);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw this.writeFailed(err, 'opening a schedule slab');
      if (!create) return undefined;
      try {
        fd = await this.fs.open(path, O.O_RDWR | O.O_CREAT | O.O_EXCL);
      } catch (err2) {
        throw this.writeFailed(err2, 'creating a schedule slab');
      }
      this.dirDirty = true;
    }
    try {
      let { size } = await this.fs.stat(path);
      const misaligned = size % ENTRY_SIZE;
      if (misaligned !== 0) {
        const pad = Buffer.alloc(ENTRY_SIZE - misaligned);
        try {
          await writeAll(this.fs, fd, [pad], size);
        } catch (err) {
          throw await this.rollBack(fd, size, err, 'aligning a schedule slab');
        }
        size += pad.length;
        this.dirty.add(start);
      }
      const h = { fd, size };
      this.handles.set(start, h);
      return h;
    } catch (err) {
      await this.fs.close(fd).catch(() => {});
      throw err;
    }
  }

  private async closeHandle(start: number): Promise<void> {
    const h = this.handles.get(start);
    if (!h) return;
    this.handles.delete(start);
    await this.fs.close(h.fd);
  }

  /** Close the least recently used files beyond the cap (their data stays dirty until `sync`). */
  private async trimHandles(): Promise<void> {
    while (this.handles.size > MAX_OPEN_SLABS) {
      const oldest = this.handles.keys().next().value as number;
      await this.closeHandle(oldest);
    }
  }

  private async syncDir(): Promise<void> {
    this.dirDirty = false;
    for (const d of [this.dir, join(this.dir, 'slabs')])
      await this.synced(fsyncDir(this.fs, d), 'fsync of the schedule directory failed');
  }

  // ---- failures (see the header) ---------------------------------------------------------------------

  private refuseIfReadOnly(): void {
    if (this.failure) throw readOnlyError(this.failure);
  }

  /** Await an fsync; its failure makes the index read-only. */
  private async synced(p: Promise<void>, what: string): Promise<void> {
    try {
      await synced(p);
    } catch (err) {
      throw this.goReadOnly(err, what);
    }
  }

  /**
   * The error to throw for a failed open or write that left nothing behind: transient ones (no
   * space, no descriptors) are reported as such; any other makes the index read-only.
   */
  private writeFailed(err: unknown, what: string): Error {
    if (isVelaError(err)) return err;
    if (isRetriable(err)) return transientError(err, what);
    return this.goReadOnly(err, what);
  }

  /** Cut a file back to `size` after a failed write; if even that fails, the index is read-only. */
  private async rollBack(fd: number, size: number, err: unknown, what: string): Promise<Error> {
    if (!isRetriable(err)) return this.goReadOnly(err, what);
    try {
      await this.fs.ftruncate(fd, size);
    } catch (err2) {
      return this.goReadOnly(err2, `${what}, then cutting it back`);
    }
    return transientError(err, what);
  }

  private goReadOnly(err: unknown, what: string): VelaError {
    const cause = rootCause(err);
    if (!this.failure) {
      this.failure = cause;
      this.logger.fatal(
        { err: cause, dir: this.dir },
        `${what}: the schedule index is READ-ONLY; delay messages are refused until the broker is restarted`,
      );
    }
    return readOnlyError(this.failure);
  }
}

/** Cut a file to `size` durably (a torn tail left by a crash). */
async function cutFile(sfs: StoreFs, path: string, size: number): Promise<void> {
  const fd = await sfs.open(path, O.O_WRONLY);
  try {
    await sfs.ftruncate(fd, size);
    await sfs.fdatasync(fd);
  } finally {
    await sfs.close(fd);
  }
}
