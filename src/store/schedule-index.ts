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
 */
import { mkdir, open, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { silentLogger, type Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { readFileIfExists, writeFileAtomic } from './atomic-file.js';
import { SerialExecutor } from './serial-executor.js';

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
/** Slab span of a new index. */
export const DEFAULT_SLAB_MS = 10_000;

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
  /** Span of one slab for a new directory (an existing one keeps its own). @defaultValue 10000 */
  slabMs?: number;
  logger?: Logger;
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

export function encodeEntry(buf: Buffer, off: number, kind: ScheduleKind, e: ScheduleEntry): void {
  buf[off] = kind;
  buf[off + 1] = MAGIC;
  buf.writeUInt32LE(e.label >>> 0, off + 4);
  buf.writeDoubleLE(e.due, off + 8);
  buf.writeDoubleLE(e.position, off + 16);
  buf.writeUInt16LE(crc32(buf.subarray(off + 4, off + ENTRY_SIZE)) & 0xffff, off + 2);
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

/**
 * Fold a slab file's entries into states. Returns the scheduled entries (in file order, each once)
 * with their flags; a torn or damaged entry is skipped.
 */
function parseSlab(buf: Buffer): {
  due: number[];
  position: number[];
  label: number[];
  flags: number[];
  damaged: number;
} {
  const n = Math.floor(buf.length / ENTRY_SIZE);
  const at = new Map<number, number>(); // position → index in the arrays
  const due: number[] = [];
  const position: number[] = [];
  const label: number[] = [];
  const flags: number[] = [];
  let damaged = 0;
  for (let i = 0; i < n; i++) {
    const off = i * ENTRY_SIZE;
    const kind = buf[off]!;
    const flag = FLAG_OF[kind];
    if (
      flag === undefined ||
      buf[off + 1] !== MAGIC ||
      (crc32(buf.subarray(off + 4, off + ENTRY_SIZE)) & 0xffff) !== buf.readUInt16LE(off + 2)
    ) {
      damaged++;
      continue;
    }
    const pos = buf.readDoubleLE(off + 16);
    let j = at.get(pos);
    if (j === undefined) {
      j = due.length;
      at.set(pos, j);
      due.push(0);
      position.push(pos);
      label.push(0);
      flags.push(0);
    }
    if (flag === SCHEDULED_BIT && (flags[j]! & SCHEDULED_BIT) === 0) {
      due[j] = buf.readDoubleLE(off + 8);
      label[j] = buf.readUInt32LE(off + 4);
    }
    flags[j] = flags[j]! | flag;
  }
  return { due, position, label, flags, damaged };
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
  private readonly labels: string[] = [];
  private readonly labelIds = new Map<string, number>();
  private closed = false;

  private constructor(
    private readonly dir: string,
    readonly slabMs: number,
    private readonly syncMarks: boolean,
    private readonly logger: Logger,
  ) {}

  static async open(o: ScheduleIndexOptions): Promise<ScheduleIndex> {
    const logger = o.logger ?? silentLogger();
    await mkdir(join(o.dir, 'slabs'), { recursive: true });
    const metaPath = join(o.dir, 'meta.json');
    const meta = await readFileIfExists(metaPath);
    let slabMs = o.slabMs ?? DEFAULT_SLAB_MS;
    if (meta) {
      const m = JSON.parse(meta.toString('utf8')) as { version: number; slabMs: number };
      if (m.version !== META_VERSION || !(m.slabMs > 0)) {
        throw new VelaError('STORE_CORRUPT_RECORD', `unsupported schedule index in ${o.dir}`);
      }
      slabMs = m.slabMs;
    } else {
      await writeFileAtomic(metaPath, JSON.stringify({ version: META_VERSION, slabMs }));
    }
    const index = new ScheduleIndex(o.dir, slabMs, o.sync, logger);
    const labels = await readFileIfExists(join(o.dir, 'labels'));
    if (labels) {
      for (const line of labels.toString('utf8').split('\n')) {
        if (line === '') continue;
        try {
          index.remember(JSON.parse(line) as string);
        } catch {
          break; // a torn last line: the label was never acknowledged
        }
      }
    }
    for (const f of await readdir(join(o.dir, 'slabs'))) {
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

  labelOf(name: string): number | undefined {
    return this.labelIds.get(name);
  }

  nameOf(label: number): string | undefined {
    return this.labels[label - 1];
  }

  /** The label of `name`, created (durably) if new. */
  ensureLabel(name: string): Promise<number> {
    const known = this.labelIds.get(name);
    if (known !== undefined) return Promise.resolve(known);
    return this.serial.run(async () => {
      const again = this.labelIds.get(name);
      if (again !== undefined) return again;
      const fh = await open(join(this.dir, 'labels'), 'a');
      try {
        await fh.write(`${JSON.stringify(name)}\n`);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      this.dirDirty = true;
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
    return this.serial.run(() => this.flushNow());
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
        await this.append(start, bufs, durable && this.syncMarks);
      }
      if (durable && this.syncMarks && this.dirDirty) await this.syncDir();
    });
  }

  /** Read one slab (buffered entries included), marks folded in. */
  load(start: number): Promise<SlabState> {
    return this.serial.run(async () => {
      await this.flushSlab(start);
      const buf = await this.readSlab(start);
      const p = parseSlab(buf);
      if (p.damaged > 0)
        this.logger.warn({ slab: start, damaged: p.damaged }, 'damaged schedule entries skipped');
      let nPending = 0;
      let nUncertain = 0;
      for (const f of p.flags) {
        if ((f & SCHEDULED_BIT) === 0 || isTerminal(f)) continue;
        if (f & DISPATCHING_BIT) nUncertain++;
        else nPending++;
      }
      const pending = emptyArrays(nPending);
      const uncertain = emptyArrays(nUncertain);
      const cancelled = new Set<number>();
      let maxPosition = 0;
      for (let i = 0; i < p.flags.length; i++) {
        const f = p.flags[i]!;
        const pos = p.position[i]!;
        if (pos > maxPosition) maxPosition = pos;
        if (f & CANCELLED_BIT) cancelled.add(pos);
        if ((f & SCHEDULED_BIT) === 0 || isTerminal(f)) continue;
        pushEntry(f & DISPATCHING_BIT ? uncertain : pending, p.due[i]!, pos, p.label[i]!);
      }
      return { start, pending, uncertain, cancelled, maxPosition };
    });
  }

  /** Per-label counts of what every slab still holds to deliver (read at start-up). */
  summarize(): Promise<SlabSummary[]> {
    return this.serial.run(async () => {
      await this.flushNow();
      const out: SlabSummary[] = [];
      for (const start of this.slabs()) {
        const p = parseSlab(await this.readSlab(start));
        const counts = new Map<number, number>();
        let maxPosition = 0;
        for (let i = 0; i < p.flags.length; i++) {
          const f = p.flags[i]!;
          if (p.position[i]! > maxPosition) maxPosition = p.position[i]!;
          if ((f & SCHEDULED_BIT) === 0 || isTerminal(f)) continue;
          counts.set(p.label[i]!, (counts.get(p.label[i]!) ?? 0) + 1);
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
      if (this.generation(start) !== generation) return false; // entries arrived meanwhile: keep it
      this.known.delete(start);
      this.lastAdd.delete(start);
      this.buffered.delete(start);
      this.dirty.delete(start);
      try {
        await unlink(this.slabPath(start));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      this.dirDirty = true;
      return true;
    });
  }

  /** Write buffered entries and fsync every slab written since the last sync (and the directory). */
  sync(): Promise<void> {
    return this.serial.run(async () => {
      await this.flushNow();
      for (const start of [...this.dirty]) {
        this.dirty.delete(start);
        let fh;
        try {
          fh = await open(this.slabPath(start), 'r');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // deleted meanwhile
          throw err;
        }
        try {
          await fh.datasync();
        } finally {
          await fh.close();
        }
      }
      if (this.dirDirty) await this.syncDir();
    });
  }

  async readCheckpoint<T>(): Promise<T | null> {
    const b = await readFileIfExists(join(this.dir, 'checkpoint.json'));
    return b ? (JSON.parse(b.toString('utf8')) as T) : null;
  }

  writeCheckpoint(data: unknown): Promise<void> {
    return this.serial.run(() => writeFileAtomic(join(this.dir, 'checkpoint.json'), JSON.stringify(data)));
  }

  /** Write and sync what is buffered. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.sync();
    this.closed = true;
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
    try {
      return await readFile(this.slabPath(start));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
      throw err;
    }
  }

  private async flushNow(): Promise<void> {
    for (const start of [...this.buffered.keys()]) await this.flushSlab(start);
  }

  private async flushSlab(start: number): Promise<void> {
    const bufs = this.buffered.get(start);
    if (!bufs) return;
    this.buffered.delete(start);
    await this.append(start, bufs, false);
  }

  private async append(start: number, bufs: Buffer[], durable: boolean): Promise<void> {
    const path = this.slabPath(start);
    let fh;
    try {
      fh = await open(path, 'wx');
      this.dirDirty = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      fh = await open(path, 'a');
    }
    try {
      // A torn entry left by a crash would misalign everything after it: pad to a whole entry.
      const { size } = await fh.stat();
      const misaligned = size % ENTRY_SIZE;
      if (misaligned !== 0) bufs.unshift(Buffer.alloc(ENTRY_SIZE - misaligned));
      const all = Buffer.concat(bufs);
      for (let off = 0; off < all.length;) {
        const { bytesWritten } = await fh.write(all, off, all.length - off);
        off += bytesWritten;
      }
      if (durable) await fh.datasync();
      else this.dirty.add(start);
    } finally {
      await fh.close();
    }
    this.known.add(start);
  }

  private async syncDir(): Promise<void> {
    this.dirDirty = false;
    for (const d of [this.dir, join(this.dir, 'slabs')]) {
      const fh = await open(d, 'r');
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    }
  }
}
