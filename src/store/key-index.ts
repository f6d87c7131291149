/**
 * The message index: finds records by message id or by key (`queryMsgById`, `queryMsgByKey`).
 *
 * One file per log segment (`<segment base>.keys`), so retention drops a segment's index with it.
 * Entries are `u32 keyHash | f64 logPosition` (12 bytes), appended in log order. A lookup scans the
 * files newest first comparing hashes (about 1 GB/s of index, i.e. ~80 M messages a second), and the
 * caller confirms each candidate against the record itself, so hash collisions never leak through.
 * Only the not-yet-written tail is held in memory.
 */
import { join } from 'node:path';
import { ensureDir, fsyncDir, openIndexFile, readFully, writeAll, type StoreFs } from './store-fs.js';
import { synced } from './io-errors.js';

export const KEY_ENTRY_SIZE = 12;
const FILE_NAME = /^(\d{20})\.keys$/;
const SCAN_CHUNK = KEY_ENTRY_SIZE * 87_381; // ~1 MiB

interface KeyFile {
  base: number;
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
}

const isDirty = (f: KeyFile) => f.writes !== f.synced;

function keyFile(base: number, count: number, path: string, fresh: boolean): KeyFile {
  return { base, count, path, fd: null, writes: 0, synced: 0, fresh, users: 0 };
}

export class KeyIndex {
  private files: KeyFile[] = [];
  /** Entries not yet written, in log order: [hash, position, segmentBase] triples. */
  private tail: number[] = [];
  /** How many tail entries are durable in the log (and so may be written). */
  private committedInTail = 0;

  /** Files were created or removed since the directory was last fsynced. */
  private dirDirty = false;

  private constructor(
    private readonly dir: string,
    private readonly fs: StoreFs,
  ) {}

  static async load(dir: string, sfs: StoreFs): Promise<KeyIndex> {
    const k = new KeyIndex(dir, sfs);
    await ensureDir(sfs, dir);
    const names = (await sfs.readdir(dir)).filter((n) => FILE_NAME.test(n)).sort();
    for (const name of names) {
      const path = join(dir, name);
      const count = Math.floor((await sfs.stat(path)).size / KEY_ENTRY_SIZE);
      k.files.push(keyFile(Number(FILE_NAME.exec(name)![1]), count, path, false));
    }
    return k;
  }

  /** Entry counts per file, for the checkpoint. */
  counts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const f of this.files) out[f.base] = f.count;
    return out;
  }

  /** Entries per file counting committed entries not yet written: what a checkpoint taken now vouches for. */
  durableCounts(): Record<string, number> {
    const out = this.counts();
    const t = this.tail;
    for (let i = 0; i < this.committedInTail; i++) {
      const base = t[i * 3 + 2]!;
      out[base] = (out[base] ?? 0) + 1;
    }
    return out;
  }

  add(hash: number, position: number, segmentBase: number): void {
    this.tail.push(hash, position, segmentBase);
  }

  commitBelow(durableEnd: number): void {
    const t = this.tail;
    let i = this.committedInTail * 3;
    while (i < t.length && t[i + 1]! < durableEnd) i += 3;
    this.committedInTail = i / 3;
  }

  rollback(): void {
    this.tail.length = this.committedInTail * 3;
  }

  /** Entries added so far (for `rewind`). */
  mark(): number {
    return this.tail.length;
  }

  /** Take back the entries added since `mark` (same turn: none of them is committed). */
  rewind(mark: number): void {
    if (this.tail.length > mark) this.tail.length = Math.max(mark, this.committedInTail * 3);
  }

  get pendingEntries(): number {
    return this.committedInTail;
  }

  /** Write committed entries to their segment's key file (no fsync; see `sync`). */
  async persist(): Promise<void> {
    while (this.committedInTail > 0) {
      const t = this.tail;
      const base = t[2]!;
      let n = 0;
      while (n < this.committedInTail && t[n * 3 + 2] === base) n++;
      const buf = Buffer.allocUnsafe(n * KEY_ENTRY_SIZE);
      for (let i = 0; i < n; i++) {
        buf.writeUInt32LE(t[i * 3]!, i * KEY_ENTRY_SIZE);
        buf.writeDoubleLE(t[i * 3 + 1]!, i * KEY_ENTRY_SIZE + 4);
      }
      const file = this.fileFor(base);
      const at = file.count * KEY_ENTRY_SIZE;
      file.writes++;
      await this.use(file, (fd) => writeAll(this.fs, fd, [buf], at));
      file.count += n;
      this.tail.splice(0, n * 3);
      this.committedInTail -= n;
    }
  }

  /**
   * fsync key files written since the last sync, then the directory if files came or went. A file
   * counts as clean only once its fsync succeeded (a failure is a `SyncFailure`: fatal for the store).
   */
  async sync(): Promise<void> {
    for (const f of [...this.files]) {
      if (!isDirty(f) || (f.fd === null && f.fresh)) continue;
      const gen = f.writes;
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

  /** Close descriptors no call is using, of files with nothing left to fsync. Returns how many. */
  async releaseIdle(): Promise<number> {
    let n = 0;
    for (const f of this.files) {
      if (f.fd !== null && f.users === 0 && !isDirty(f)) {
        const fd = f.fd;
        f.fd = null;
        await this.fs.close(fd);
        n++;
      }
    }
    return n;
  }

  /** Open descriptors. */
  get openDescriptors(): number {
    return this.files.filter((f) => f.fd !== null).length;
  }

  /** Close every descriptor without writing anything. */
  async abandon(): Promise<void> {
    for (const f of this.files) {
      if (f.fd === null) continue;
      const fd = f.fd;
      f.fd = null;
      await this.fs.close(fd).catch(() => {});
    }
  }

  /** Log positions of records whose id or key hashes to `hash`, newest first, at most `limit`. */
  async find(hash: number, limit: number): Promise<number[]> {
    // A Set: an index flush during the awaits below can move tail entries into a file we read next,
    // and one record may carry the same key twice (or a key equal to its id).
    const out = new Set<number>();
    const t = this.tail;
    for (let i = this.committedInTail * 3 - 3; i >= 0 && out.size < limit; i -= 3) {
      if (t[i] === hash) out.add(t[i + 1]!);
    }
    const buf = Buffer.allocUnsafe(SCAN_CHUNK);
    const files = [...this.files];
    for (let fi = files.length - 1; fi >= 0 && out.size < limit; fi--) {
      const file = files[fi]!;
      if (file.fresh && file.fd === null) continue;
      const found: number[] = [];
      if (!this.files.includes(file)) continue; // dropped by retention meanwhile
      await this.use(file, async (fd) => {
        for (let start = 0; start < file.count * KEY_ENTRY_SIZE; start += SCAN_CHUNK) {
          const want = Math.min(SCAN_CHUNK, file.count * KEY_ENTRY_SIZE - start);
          const n = await readFully(this.fs, fd, buf, want, start);
          for (let p = 0; p + KEY_ENTRY_SIZE <= n; p += KEY_ENTRY_SIZE) {
            if (buf.readUInt32LE(p) === hash) found.push(buf.readDoubleLE(p + 4));
          }
        }
      });
      for (let i = found.length - 1; i >= 0 && out.size < limit; i--) out.add(found[i]!);
    }
    return [...out];
  }

  /** Recovery: keep the first `counts[base]` entries of each file; files not listed are dropped. */
  async truncateToCounts(counts: Record<string, number>): Promise<void> {
    for (const f of [...this.files]) {
      const keep = counts[f.base] ?? 0;
      if (keep === 0) await this.dropFile(f);
      else if (f.count > keep) await this.cut(f, keep);
    }
  }

  /** Recovery: drop entries for records at or after `position`. */
  async truncateFromPosition(position: number): Promise<void> {
    this.tail = [];
    this.committedInTail = 0;
    for (const f of [...this.files]) {
      if (f.base >= position) {
        await this.dropFile(f);
        continue;
      }
      // Entries are in log order: binary search the first at or after `position`.
      const one = Buffer.allocUnsafe(KEY_ENTRY_SIZE);
      let lo = 0;
      let hi = f.count;
      await this.use(f, async (fd) => {
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          await readFully(this.fs, fd, one, KEY_ENTRY_SIZE, mid * KEY_ENTRY_SIZE);
          if (one.readDoubleLE(4) < position) lo = mid + 1;
          else hi = mid;
        }
      });
      if (lo < f.count) await this.cut(f, lo);
    }
  }

  /** Retention: drop the files of segments that start below `logStart`. */
  async dropBelow(logStart: number): Promise<void> {
    for (const f of [...this.files]) if (f.base < logStart) await this.dropFile(f);
  }

  async close(): Promise<void> {
    await this.persist();
    await this.sync();
    await this.abandon();
  }

  private async cut(f: KeyFile, keep: number): Promise<void> {
    f.writes++;
    await this.use(f, (fd) => this.fs.ftruncate(fd, keep * KEY_ENTRY_SIZE));
    f.count = keep;
  }

  private async dropFile(f: KeyFile): Promise<void> {
    this.files.splice(this.files.indexOf(f), 1);
    if (f.fd !== null && f.users === 0) {
      const fd = f.fd;
      f.fd = null;
      await this.fs.close(fd);
    }
    // Otherwise a lookup still reading it closes it when done (see `use`).
    if (!f.fresh) await this.fs.unlink(f.path).catch(() => {});
    this.dirDirty = true;
  }

  private fileFor(base: number): KeyFile {
    let f = this.files.find((x) => x.base === base);
    if (!f) {
      f = keyFile(base, 0, join(this.dir, `${String(base).padStart(20, '0')}.keys`), true);
      this.files.push(f);
      this.files.sort((a, b) => a.base - b.base);
    }
    return f;
  }

  /** Run `fn` with the file's descriptor, which stays open until it is done. */
  private async use<T>(f: KeyFile, fn: (fd: number) => Promise<T>): Promise<T> {
    f.users++;
    try {
      return await fn(await this.fdOf(f));
    } finally {
      f.users--;
      // Dropped (retention) while in use: close now that nobody reads it.
      if (f.users === 0 && f.fd !== null && !this.files.includes(f)) {
        const fd = f.fd;
        f.fd = null;
        await this.fs.close(fd).catch(() => {});
      }
    }
  }

  private async fdOf(f: KeyFile): Promise<number> {
    return openIndexFile(this.fs, f, () => {
      this.dirDirty = true;
    });
  }
}
