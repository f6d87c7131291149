/**
 * The queue index of one (topic, queue): RocketMQ's ConsumeQueue. Entry `offset` of the queue is a
 * fixed-size record at `(offset - file.firstOffset) * 24` in the file holding that offset:
 *
 *   f64 logPosition | f64 storeTimestamp | u32 frameSize | i32 tagHash      (little-endian, 24 bytes)
 *
 * Files hold `entriesPerFile` entries and are named by their first offset. Entries live on disk; only
 * the entries not yet written (a short tail, flushed every few hundred ms) are kept in memory, so
 * memory does not grow with the backlog.
 *
 * Offsets: `minOffset` (first still stored; retention moves it) ≤ `committed` (readable: its record is
 * durable in the log) ≤ `nextOffset` (the next one to assign).
 */
import fs from 'node:fs';
import { openP, closeP, writeP, readP, fdatasyncP, ftruncateP } from './fs-async.js';
import { mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

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
  dirty: boolean;
}

export class QueueIndex {
  private files: IndexFile[] = [];
  minOffset = 0;
  nextOffset = 0;
  committed = 0;
  /** Entries below this are on disk. */
  private persisted = 0;
  /** Entries [persisted, nextOffset) */
  private tail = Buffer.allocUnsafe(INDEX_ENTRY_SIZE * 64);
  private tailLen = 0;
  /** Store time of the newest entry. */
  lastStoreTimestamp = 0;

  private constructor(
    readonly topic: string,
    readonly queueId: number,
    private readonly dir: string,
    private readonly entriesPerFile: number,
  ) {}

  static create(topic: string, queueId: number, dir: string, entriesPerFile: number): QueueIndex {
    return new QueueIndex(topic, queueId, dir, entriesPerFile);
  }

  /** Load the index files of a queue from disk (entries counted from file sizes). */
  static async load(
    topic: string,
    queueId: number,
    dir: string,
    entriesPerFile: number,
  ): Promise<QueueIndex> {
    const q = new QueueIndex(topic, queueId, dir, entriesPerFile);
    const names = (await readdir(dir)).filter((n) => FILE_NAME.test(n)).sort();
    for (const name of names) {
      const path = join(dir, name);
      const size = (await stat(path)).size;
      const count = Math.min(Math.floor(size / INDEX_ENTRY_SIZE), entriesPerFile);
      q.files.push({ firstOffset: Number(FILE_NAME.exec(name)![1]), count, path, fd: null, dirty: false });
    }
    const last = q.files.at(-1);
    q.minOffset = q.files[0]?.firstOffset ?? 0;
    q.nextOffset = q.committed = q.persisted = last ? last.firstOffset + last.count : 0;
    if (last && last.count > 0) q.lastStoreTimestamp = (await q.entryAt(q.nextOffset - 1))!.storeTimestamp;
    return q;
  }

  /** True when the queue holds no entries at all. */
  get isEmpty(): boolean {
    return this.nextOffset === this.minOffset && this.files.every((f) => f.count === 0);
  }

  /** Start an empty queue at `offset` (recovery of a queue whose index files were lost). */
  resetEmptyTo(offset: number): void {
    this.minOffset = this.nextOffset = this.committed = this.persisted = offset;
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
      const p = (this.committed - this.persisted) * INDEX_ENTRY_SIZE;
      if (this.tail.readDoubleLE(p) >= durableEnd) return false;
      this.committed++;
    }
    return true;
  }

  /** Forget uncommitted entries (their records were rolled back). */
  rollback(): void {
    this.nextOffset = this.committed;
    this.tailLen = (this.committed - this.persisted) * INDEX_ENTRY_SIZE;
    if (this.tailLen > 0) this.lastStoreTimestamp = this.tail.readDoubleLE(this.tailLen - 16);
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
      const chunk = Buffer.from(this.tail.subarray(0, bytes));
      const fd = await this.fdOf(file);
      let done = 0;
      const filePos = (this.persisted - file.firstOffset) * INDEX_ENTRY_SIZE;
      while (done < bytes) done += await writeP(fd, chunk.subarray(done), filePos + done);
      file.count = this.persisted + n - file.firstOffset;
      file.dirty = true;
      // Drop the written entries from the tail (entries added meanwhile stay behind them).
      this.tail.copy(this.tail, 0, bytes, this.tailLen);
      this.tailLen -= bytes;
      this.persisted += n;
    }
  }

  /** fsync index files written since the last sync. */
  async sync(): Promise<void> {
    for (const f of this.files) {
      if (f.dirty && f.fd !== null) {
        f.dirty = false;
        await fdatasyncP(f.fd);
      }
    }
  }

  /** Read up to `count` readable entries starting at `from`. */
  async read(from: number, count: number): Promise<IndexEntry[]> {
    const start = Math.max(from, this.minOffset);
    const end = Math.min(this.committed, start + count);
    const out: IndexEntry[] = [];
    let offset = start;
    while (offset < end && offset < this.persisted) {
      const file = this.fileFor(offset);
      if (!file) {
        // A gap between files (should not happen): skip to the next file.
        const next = this.files.find((f) => f.firstOffset > offset);
        if (!next) break;
        offset = next.firstOffset;
        continue;
      }
      const n = Math.min(end, this.persisted, file.firstOffset + file.count) - offset;
      if (n <= 0) break;
      const buf = Buffer.allocUnsafe(n * INDEX_ENTRY_SIZE);
      const fd = await this.fdOf(file);
      const got = await readFullyAt(fd, buf, (offset - file.firstOffset) * INDEX_ENTRY_SIZE);
      const entries = Math.floor(got / INDEX_ENTRY_SIZE);
      for (let i = 0; i < entries; i++) out.push(decodeEntry(buf, i * INDEX_ENTRY_SIZE, offset + i));
      offset += entries;
      if (entries < n) break;
    }
    // Entries not yet persisted come from memory (the tail may have shifted while we awaited).
    offset = Math.max(offset, this.persisted);
    while (offset < end && offset < this.committed) {
      out.push(decodeEntry(this.tail, (offset - this.persisted) * INDEX_ENTRY_SIZE, offset));
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
      await unlink(f.path);
    }
    const last = this.files.at(-1);
    if (last && last.firstOffset + last.count > keep) {
      last.count = Math.max(0, keep - last.firstOffset);
      await ftruncateP(await this.fdOf(last), last.count * INDEX_ENTRY_SIZE);
      last.dirty = true;
    }
    const dropped = this.nextOffset - keep;
    this.nextOffset = this.committed = this.persisted = keep;
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
      await unlink(f.path);
    }
  }

  async close(): Promise<void> {
    await this.persist();
    await this.sync();
    for (const f of this.files) await this.closeFile(f);
  }

  /** Close without writing anything more: the index is being deleted (its files go with it). */
  async discard(): Promise<void> {
    for (const f of this.files) await this.closeFile(f);
    this.files = [];
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
    await mkdir(this.dir, { recursive: true });
    const f: IndexFile = {
      firstOffset: offset,
      count: 0,
      path: join(this.dir, `${String(offset).padStart(20, '0')}.cq`),
      fd: null,
      dirty: true,
    };
    this.files.push(f);
    return f;
  }

  private async fdOf(f: IndexFile): Promise<number> {
    if (f.fd === null) {
      const fd = await openP(f.path, fs.existsSync(f.path) ? 'r+' : 'w+');
      if (f.fd === null) f.fd = fd;
      else await closeP(fd);
    }
    return f.fd!;
  }

  private async closeFile(f: IndexFile): Promise<void> {
    if (f.fd !== null) {
      const fd = f.fd;
      f.fd = null;
      await closeP(fd);
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

async function readFullyAt(fd: number, buf: Buffer, pos: number): Promise<number> {
  let got = 0;
  while (got < buf.length) {
    const n = await readP(fd, buf, got, buf.length - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}
