/**
 * The message index: finds records by message id or by key (`queryMsgById`, `queryMsgByKey`).
 *
 * One file per log segment (`<segment base>.keys`), so retention drops a segment's index with it.
 * Entries are `u32 keyHash | f64 logPosition` (12 bytes), appended in log order. A lookup scans the
 * files newest first comparing hashes (about 1 GB/s of index, i.e. ~80 M messages a second), and the
 * caller confirms each candidate against the record itself, so hash collisions never leak through.
 * Only the not-yet-written tail is held in memory.
 */
import fs from 'node:fs';
import { openP, closeP, writeP, readP, fdatasyncP, ftruncateP } from './fs-async.js';
import { mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export const KEY_ENTRY_SIZE = 12;
const FILE_NAME = /^(\d{20})\.keys$/;
const SCAN_CHUNK = KEY_ENTRY_SIZE * 87_381; // ~1 MiB

interface KeyFile {
  base: number;
  count: number;
  path: string;
  fd: number | null;
  dirty: boolean;
}

export class KeyIndex {
  private files: KeyFile[] = [];
  /** Entries not yet written, in log order: [hash, position, segmentBase] triples. */
  private tail: number[] = [];
  /** How many tail entries are durable in the log (and so may be written). */
  private committedInTail = 0;

  private constructor(private readonly dir: string) {}

  static async load(dir: string): Promise<KeyIndex> {
    const k = new KeyIndex(dir);
    await mkdir(dir, { recursive: true });
    const names = (await readdir(dir)).filter((n) => FILE_NAME.test(n)).sort();
    for (const name of names) {
      const path = join(dir, name);
      const count = Math.floor((await stat(path)).size / KEY_ENTRY_SIZE);
      k.files.push({ base: Number(FILE_NAME.exec(name)![1]), count, path, fd: null, dirty: false });
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
      const fd = await this.fdOf(file);
      let done = 0;
      const at = file.count * KEY_ENTRY_SIZE;
      while (done < buf.length) done += await writeP(fd, buf.subarray(done), at + done);
      file.count += n;
      file.dirty = true;
      this.tail.splice(0, n * 3);
      this.committedInTail -= n;
    }
  }

  async sync(): Promise<void> {
    for (const f of this.files) {
      if (f.dirty && f.fd !== null) {
        f.dirty = false;
        await fdatasyncP(f.fd);
      }
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
    for (let fi = this.files.length - 1; fi >= 0 && out.size < limit; fi--) {
      const file = this.files[fi]!;
      const fd = await this.fdOf(file);
      const found: number[] = [];
      for (let start = 0; start < file.count * KEY_ENTRY_SIZE; start += SCAN_CHUNK) {
        const n = await readP(fd, buf, 0, Math.min(SCAN_CHUNK, file.count * KEY_ENTRY_SIZE - start), start);
        for (let p = 0; p + KEY_ENTRY_SIZE <= n; p += KEY_ENTRY_SIZE) {
          if (buf.readUInt32LE(p) === hash) found.push(buf.readDoubleLE(p + 4));
        }
      }
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
      const fd = await this.fdOf(f);
      const one = Buffer.allocUnsafe(KEY_ENTRY_SIZE);
      let lo = 0;
      let hi = f.count;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        await readP(fd, one, 0, KEY_ENTRY_SIZE, mid * KEY_ENTRY_SIZE);
        if (one.readDoubleLE(4) < position) lo = mid + 1;
        else hi = mid;
      }
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
    for (const f of this.files) {
      if (f.fd !== null) {
        await closeP(f.fd);
        f.fd = null;
      }
    }
  }

  private async cut(f: KeyFile, keep: number): Promise<void> {
    await ftruncateP(await this.fdOf(f), keep * KEY_ENTRY_SIZE);
    f.count = keep;
    f.dirty = true;
  }

  private async dropFile(f: KeyFile): Promise<void> {
    this.files.splice(this.files.indexOf(f), 1);
    if (f.fd !== null) await closeP(f.fd);
    f.fd = null;
    await unlink(f.path).catch(() => {});
  }

  private fileFor(base: number): KeyFile {
    let f = this.files.find((x) => x.base === base);
    if (!f) {
      f = {
        base,
        count: 0,
        path: join(this.dir, `${String(base).padStart(20, '0')}.keys`),
        fd: null,
        dirty: true,
      };
      this.files.push(f);
      this.files.sort((a, b) => a.base - b.base);
    }
    return f;
  }

  private async fdOf(f: KeyFile): Promise<number> {
    if (f.fd === null) {
      const fd = await openP(f.path, fs.existsSync(f.path) ? 'r+' : 'w+');
      if (f.fd === null) f.fd = fd;
      else await closeP(fd);
    }
    return f.fd!;
  }
}
