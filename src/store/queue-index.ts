/**
 * The queue index of one (topic, queue): RocketMQ's ConsumeQueue. Entry `offset` of the queue is a
 * fixed-size record at `(offset - file.firstOffset) * 24` in the file holding that offset:
 *
 *   f64 logPosition | f64 storeTimestamp | u32 frameSize | i32 tagHash      (little-endian, 24 bytes)
 *
 * Files hold `entriesPerFile` entries and are named by their first offset. Entries live on disk; only
 * the entries not yet written (a short tail, flushed every few hundred ms) and a bounded window of the
 * most recently written ones (`recentEntries`, so a consumer near the head needs no index read) are
 * kept in memory, so memory does not grow with the backlog.
 *
 * Offsets: `minOffset` (first still stored; retention moves it) ≤ `committed` (readable: its record is
 * durable in the log) ≤ `nextOffset` (the next one to assign).
 *
 * One file on purpose: the entry layout, the unwritten tail, file rolling, retention's `applyLogStart`
 * and recovery's truncation all move the three offsets above and must change together.
 */
import { join } from 'node:path';
import {
  ensureDir,
  fsyncDir,
  nodeStoreFs,
  openIndexFile,
  readFully,
  readFullySync,
  removeTree,
  writeAll,
  type StoreFs,
} from './store-fs.js';
import { synced } from './io-errors.js';

export const INDEX_ENTRY_SIZE = 24;
const FILE_NAME = /^(\d{20})\.cq$/;

export interface IndexEntry {
  offset: number;
  logPosition: number;
  storeTimestamp: number;
  size: number;
  tagHash: number;
}

interface IndexFile {
  firstOffset: number;
  /** Entries on disk. */
  count: number;
  path: string;
  fd: number | null;
  /** Bumped by every write; `synced` says which generation the last successful fsync covered. */
  writes: number;
  synced: number;
  /** Not yet created on disk (its directory entry then needs an fsync). */
  fresh: boolean;
  /** Calls using the descriptor right now: it is never closed under them. */
  users: number;
  /** Closed (deleted or no longer needed) while in use: the last user closes the descriptor. */
  retired: boolean;
}

const isDirty = (f: IndexFile) => f.writes !== f.synced;

export class QueueIndex {
  private files: IndexFile[] = [];
  minOffset = 0;
  nextOffset = 0;
  committed = 0;
  /** Entries below this are on disk. */
  private persisted = 0;
  /** Entries [tailBase, nextOffset): up to `recentEntries` already written, then the unwritten ones. */
  private tail = Buffer.allocUnsafe(INDEX_ENTRY_SIZE * 64);
  private tailBase = 0;
  private tailLen = 0;
  /** Store time of the newest entry. */
  lastStoreTimestamp = 0;
  /** Files were created or removed since the directory was last fsynced. */
  private dirDirty = false;

  private constructor(
    readonly topic: string,
    readonly queueId: number,
    private readonly dir: string,
    private readonly entriesPerFile: number,
    private readonly fs: StoreFs,
    private readonly recentEntries: number,
    /** Reads of the newest this-many entries are made on the calling thread (see `syncReadBytes` of the log). */
    private readonly syncReadEntries: number,
  ) {}

  static create(
    topic: string,
    queueId: number,
    dir: string,
    entriesPerFile: number,
    sfs: StoreFs = nodeStoreFs,
    recentEntries = 0,
    syncReadEntries = 0,
  ): QueueIndex {
    return new QueueIndex(topic, queueId, dir, entriesPerFile, sfs, recentEntries, syncReadEntries);
  }

  /** Load the index files of a queue from disk (entries counted from file sizes). */
  static async load(
    topic: string,
    queueId: number,
    dir: string,
    entriesPerFile: number,
    sfs: StoreFs = nodeStoreFs,
    recentEntries = 0,
    syncReadEntries = 0,
  ): Promise<QueueIndex> {
    const q = new QueueIndex(topic, queueId, dir, entriesPerFile, sfs, recentEntries, syncReadEntries);
    const names = (await sfs.readdir(dir)).filter((n) => FILE_NAME.test(n)).sort();
    for (const name of names) {
      const path = join(dir, name);
      const size = (await sfs.stat(path)).size;
      const count = Math.min(Math.floor(size / INDEX_ENTRY_SIZE), entriesPerFile);
      q.files.push(indexFile(Number(FILE_NAME.exec(name)![1]), count, path, false));
    }
    const last = q.files.at(-1);
    q.minOffset = q.files[0]?.firstOffset ?? 0;
    q.nextOffset = q.committed = q.persisted = q.tailBase = last ? last.firstOffset + last.count : 0;
    if (last && last.count > 0) q.lastStoreTimestamp = (await q.entryAt(q.nextOffset - 1))!.storeTimestamp;
    return q;
  }

  /** True when the queue holds no entries at all. */
  get isEmpty(): boolean {
    return this.nextOffset === this.minOffset && this.files.every((f) => f.count === 0);
  }

  /** Start an empty queue at `offset` (recovery of a queue whose index files were lost). */
  resetEmptyTo(offset: number): void {
    this.minOffset = this.nextOffset = this.committed = this.persisted = this.tailBase = offset;
    this.tailLen = 0;
    this.files = this.files.filter((f) => f.count > 0);
  }

  /** Assign the next offset to a record (not readable until `commitBelow` covers it). */
  add(logPosition: number, storeTimestamp: number, size: number, tagHash: number): number {
    if (this.tailLen + INDEX_ENTRY_SIZE > this.tail.length) {
      const bigger = Buffer.allocUnsafe(this.tail.length * 2);
      this.tail.copy(bigger, 0, 0, this.tailLen);
      this.tail = bigger;
    }
    const t = this.tail;
    const p = this.tailLen;
    t.writeDoubleLE(logPosition, p);
    t.writeDoubleLE(storeTimestamp, p + 8);
    t.writeUInt32LE(size, p + 16);
    t.writeInt32LE(tagHash, p + 20);
    this.tailLen += INDEX_ENTRY_SIZE;
    this.lastStoreTimestamp = storeTimestamp;
    return this.nextOffset++;
  }

  /** Make readable every entry whose record starts below `durableEnd`. Returns true if all are. */
  commitBelow(durableEnd: number): boolean {
    while (this.committed < this.nextOffset) {
      const p = (this.committed - this.tailBase) * INDEX_ENTRY_SIZE;
      if (this.tail.readDoubleLE(p) >= durableEnd) return false;
      this.committed++;
    }
    return true;
  }

  /** Take back the entries added since `nextOffset` was `offset` (same turn: none is committed). */
  rewindTo(offset: number, lastStoreTimestamp: number): void {
    if (offset >= this.nextOffset || offset < this.committed) return;
    this.nextOffset = offset;
    this.tailLen = (offset - this.tailBase) * INDEX_ENTRY_SIZE;
    this.lastStoreTimestamp = lastStoreTimestamp;
  }

  /** Forget uncommitted entries (their records were rolled back). */
  rollback(): void {
    this.nextOffset = this.committed;
    this.tailLen = (this.committed - this.tailBase) * INDEX_ENTRY_SIZE;
    if (this.tailLen > 0) this.lastStoreTimestamp = this.tail.readDoubleLE(this.tailLen - 16);
  }

  /** Entries held in memory: the recently written window and those waiting to be written. */
  get entriesInMemory(): number {
    return this.tailLen / INDEX_ENTRY_SIZE;
  }

  /** Bytes of entries waiting to be written. */
  get pendingBytes(): number {
    return (this.committed - this.persisted) * INDEX_ENTRY_SIZE;
  }

  /** Write committed entries to the index files (no fsync; see `sync`). */
  async persist(): Promise<void> {
    while (this.persisted < this.committed) {
      const file = await this.fileForAppend(this.persisted);
      const room = this.entriesPerFile - (this.persisted - file.firstOffset);
      const n = Math.min(room, this.committed - this.persisted);
      const bytes = n * INDEX_ENTRY_SIZE;
      const from = (this.persisted - this.tailBase) * INDEX_ENTRY_SIZE;
      const chunk = Buffer.from(this.tail.subarray(from, from + bytes));
      const filePos = (this.persisted - file.firstOffset) * INDEX_ENTRY_SIZE;
      file.writes++;
      await this.use(file, (fd) => writeAll(this.fs, fd, [chunk], filePos));
      file.count = this.persisted + n - file.firstOffset;
      this.persisted += n;
      this.trimRecent();
    }
  }

  /** Keep at most `recentEntries` written entries in memory (entries added meanwhile stay behind them). */
  private trimRecent(): void {
    const drop = this.persisted - this.tailBase - this.recentEntries;
    if (drop <= 0) return;
    const bytes = drop * INDEX_ENTRY_SIZE;
    this.tail.copy(this.tail, 0, bytes, this.tailLen);
    this.tailLen -= bytes;
    this.tailBase += drop;
  }

  /**
   * fsync index files written since the last sync, then the directory if files came or went. A file
   * counts as clean only once its fsync succeeded; a failure is a `SyncFailure` (the caller treats it
   * as fatal: the pages may be gone).
   */
  async sync(): Promise<void> {
    for (const f of [...this.files]) {
      if (!isDirty(f)) continue;
      const gen = f.writes;
      if (f.fd === null) {
        // Written, then its descriptor was closed (only ever after a successful fsync, see
        // `releaseIdle`), or truncated before being opened: open it to make sure.
        if (f.fresh) continue;
      }
      await this.use(f, (fd) => synced(this.fs.fdatasync(fd)));
      f.synced = gen;
    }
    if (this.dirDirty) {
      this.dirDirty = false;
      try {
        await synced(fsyncDir(this.fs, this.dir));
      } catch (err) {
        this.dirDirty = true;
        throw err;
      }
    }
  }

  /** Whether there is anything for `sync` to do. */
  get needsSync(): boolean {
    return this.dirDirty || this.files.some(isDirty);
  }

  /** Close descriptors no call is using, of files with nothing left to fsync. Returns how many. */
  async releaseIdle(): Promise<number> {
    let n = 0;
    for (const f of this.files) {
      if (f.fd !== null && f.users === 0 && !isDirty(f)) {
        await this.closeFile(f);
        n++;
      }
    }
    return n;
  }

  /** Open descriptors. */
  get openDescriptors(): number {
    return this.files.filter((f) => f.fd !== null).length;
  }

  /**
   * Read up to `count` readable entries starting at `from`; with `appended`, entries whose records
   * are not yet durable too (they come from memory: every one of them is in the tail).
   */
  async read(from: number, count: number, appended = false): Promise<IndexEntry[]> {
    const start = Math.max(from, this.minOffset);
    const end = Math.min(appended ? this.nextOffset : this.committed, start + count);
    const out: IndexEntry[] = [];
    let offset = start;
    while (offset < end && offset < this.tailBase) {
      const file = this.fileFor(offset);
      if (!file) {
        // A gap between files (should not happen): skip to the next file.
        const next = this.files.find((f) => f.firstOffset > offset);
        if (!next) break;
        offset = next.firstOffset;
        continue;
      }
      const n = Math.min(end, this.tailBase, file.firstOffset + file.count) - offset;
      if (n <= 0) break;
      const buf = Buffer.allocUnsafe(n * INDEX_ENTRY_SIZE);
      const at = (offset - file.firstOffset) * INDEX_ENTRY_SIZE;
      const got =
        (offset >= this.committed - this.syncReadEntries && file.fd !== null
          ? readFullySync(this.fs, file.fd, buf, buf.length, at)
          : undefined) ?? (await this.use(file, (fd) => readFully(this.fs, fd, buf, buf.length, at)));
      const entries = Math.floor(got / INDEX_ENTRY_SIZE);
      for (let i = 0; i < entries; i++) out.push(decodeEntry(buf, i * INDEX_ENTRY_SIZE, offset + i));
      offset += entries;
      if (entries < n) break;
    }
    // The rest comes from memory (the tail may have shifted while we awaited). A short file read
    // leaves a gap: return what was read, never entries past a gap.
    if (offset < this.tailBase && offset < end) return out;
    // A rollback while the files were read takes back what was appended past `committed`.
    const readable = appended ? this.nextOffset : this.committed;
    while (offset < end && offset < readable) {
      out.push(decodeEntry(this.tail, (offset - this.tailBase) * INDEX_ENTRY_SIZE, offset));
      offset++;
    }
    return out;
  }

  /** One readable entry, or undefined. */
  async entryAt(offset: number): Promise<IndexEntry | undefined> {
    if (offset < this.minOffset || offset >= this.committed) return undefined;
    return (await this.read(offset, 1))[0];
  }

  /** The first offset whose store time is at or after `timestamp` (`committed` if none). */
  async offsetForTimestamp(timestamp: number): Promise<number> {
    let lo = this.minOffset;
    let hi = this.committed;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const e = await this.entryAt(mid);
      if (!e) break;
      if (e.storeTimestamp < timestamp) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The first offset whose record starts at or after `position` (`committed` if none). */
  async offsetForPosition(position: number, from = this.minOffset): Promise<number> {
    let lo = Math.max(from, this.minOffset);
    let hi = this.committed;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const e = await this.entryAt(mid);
      if (!e) break;
      if (e.logPosition < position) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Recovery: drop every entry whose record starts at or after `position`. Returns how many went. */
  async truncateFromPosition(position: number): Promise<number> {
    return this.truncateTo(await this.offsetForPosition(position, this.files[0]?.firstOffset ?? 0));
  }

  /** Recovery: keep only entries below offset `keep`. Returns how many went. */
  async truncateTo(keep: number): Promise<number> {
    keep = Math.min(keep, this.nextOffset);
    // A file starting at or past `keep` holds only entries that go.
    while (this.files.length > 0 && this.files.at(-1)!.firstOffset >= keep) {
      const f = this.files.pop()!;
      await this.closeFile(f);
      if (!f.fresh) await this.fs.unlink(f.path);
      this.dirDirty = true;
    }
    const last = this.files.at(-1);
    if (last && last.firstOffset + last.count > keep) {
      last.count = Math.max(0, keep - last.firstOffset);
      last.writes++;
      await this.use(last, (fd) => this.fs.ftruncate(fd, last.count * INDEX_ENTRY_SIZE));
    }
    const dropped = this.nextOffset - keep;
    this.nextOffset = this.committed = this.persisted = this.tailBase = keep;
    this.tailLen = 0;
    if (this.files.length === 0 || this.minOffset > keep) this.minOffset = keep;
    this.lastStoreTimestamp =
      keep > this.minOffset ? ((await this.entryAt(keep - 1))?.storeTimestamp ?? 0) : 0;
    return dropped;
  }

  /**
   * Retention: records below `logStart` are gone. Move `minOffset` past them and delete index files
   * that hold only such entries (never the last file, which carries the queue's next offset).
   */
  async applyLogStart(logStart: number): Promise<void> {
    this.minOffset = await this.offsetForPosition(logStart);
    while (this.files.length > 1 && this.files[1]!.firstOffset <= this.minOffset) {
      const f = this.files.shift()!;
      await this.closeFile(f);
      if (!f.fresh) await this.fs.unlink(f.path);
      this.dirDirty = true;
    }
  }

  async close(): Promise<void> {
    await this.persist();
    await this.sync();
    for (const f of this.files) await this.closeFile(f);
  }

  /** Close every descriptor without writing anything (the store is going away or read-only). */
  async abandon(): Promise<void> {
    for (const f of this.files) await this.closeFile(f).catch(() => {});
  }

  /** Delete the queue's files and directory (its topic was deleted). Memory is released with the object. */
  async destroy(): Promise<void> {
    await this.abandon();
    this.files = [];
    this.tailLen = 0;
    this.tail = Buffer.alloc(0);
    await removeTree(this.fs, this.dir);
  }

  private fileFor(offset: number): IndexFile | undefined {
    const files = this.files;
    let lo = 0;
    let hi = files.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const f = files[mid]!;
      if (offset < f.firstOffset) hi = mid - 1;
      else if (offset >= f.firstOffset + this.entriesPerFile) lo = mid + 1;
      else return f;
    }
    return undefined;
  }

  private async fileForAppend(offset: number): Promise<IndexFile> {
    const last = this.files.at(-1);
    if (last && offset < last.firstOffset + this.entriesPerFile) return last;
    // New directories are made durable here (their parents fsynced); the new file's own entry is
    // fsynced with the directory by `sync`, before any checkpoint vouches for it.
    await ensureDir(this.fs, this.dir);
    const f = indexFile(offset, 0, join(this.dir, `${String(offset).padStart(20, '0')}.cq`), true);
    this.files.push(f);
    return f;
  }

  /** Run `fn` with the file's descriptor, which stays open until it is done. */
  private async use<T>(f: IndexFile, fn: (fd: number) => Promise<T>): Promise<T> {
    f.users++;
    try {
      return await fn(await this.fdOf(f));
    } finally {
      f.users--;
      if (f.users === 0 && f.retired) await this.closeFile(f).catch(() => {});
    }
  }

  private async fdOf(f: IndexFile): Promise<number> {
    return openIndexFile(this.fs, f, () => {
      this.dirDirty = true;
    });
  }

  /** Close a file's descriptor, or, while a call still uses it, have the last one close it. */
  private async closeFile(f: IndexFile): Promise<void> {
    if (f.users > 0) {
      f.retired = true;
      return;
    }
    if (f.fd !== null) {
      const fd = f.fd;
      f.fd = null;
      f.retired = false;
      await this.fs.close(fd);
    }
  }
}

function decodeEntry(buf: Buffer, p: number, offset: number): IndexEntry {
  return {
    offset,
    logPosition: buf.readDoubleLE(p),
    storeTimestamp: buf.readDoubleLE(p + 8),
    size: buf.readUInt32LE(p + 16),
    tagHash: buf.readInt32LE(p + 20),
  };
}

function indexFile(firstOffset: number, count: number, path: string, fresh: boolean): IndexFile {
  return { firstOffset, count, path, fd: null, writes: 0, synced: 0, fresh, users: 0, retired: false };
}
