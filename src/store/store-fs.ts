/**
 * The file-system calls the store makes, behind one small interface. Everything under `src/store`
 * does its I/O through a `StoreFs`, so tests can put a layer underneath that injects faults (ENOSPC,
 * EIO, EMFILE) or models a power cut (what survives is only what was fsynced), and so the store's
 * fsync discipline is written in one vocabulary.
 *
 * `nodeStoreFs` is the real thing: Node's callback `fs` calls on file descriptors (fewer allocations
 * than `fs/promises` FileHandles on the hot path). Files are created 0600 and directories 0700: a
 * data directory holds messages and the receipt-handle key, readable by the broker's user only.
 */
import fs from 'node:fs';
import { dirname, join } from 'node:path';

export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

export interface StoreStat {
  size: number;
  mtimeMs: number;
  isDirectory(): boolean;
}

export interface StoreFs {
  /** Open a file or directory (`fs.constants` flags); a created file gets `mode` (0600 by default). */
  open(path: string, flags: number, mode?: number): Promise<number>;
  close(fd: number): Promise<void>;
  /** Read into `buf[off, off+len)` from file position `pos`; returns the bytes read. */
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number>;
  /** `read` on the calling thread (for bytes expected in the page cache: no thread-pool round trip). */
  readSync(fd: number, buf: Buffer, off: number, len: number, pos: number): number;
  /** Write `buf` at `pos`; may write fewer bytes (callers loop). */
  write(fd: number, buf: Buffer, pos: number): Promise<number>;
  /** Write `bufs` in order at `pos`; may write fewer bytes (callers loop). */
  writev(fd: number, bufs: Buffer[], pos: number): Promise<number>;
  /** `writev` on the calling thread (small durable writes: no thread-pool round trip). */
  writevSync(fd: number, bufs: Buffer[], pos: number): number;
  fdatasync(fd: number): Promise<void>;
  fsync(fd: number): Promise<void>;
  ftruncate(fd: number, len: number): Promise<void>;
  /** Create one directory (its parent must exist), 0700 by default. */
  mkdir(path: string, mode?: number): Promise<void>;
  rmdir(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  stat(path: string): Promise<StoreStat>;
  /** Like `stat`, but a symbolic link is described rather than followed. */
  lstat(path: string): Promise<StoreStat>;
  unlink(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
}

const cb =
  <T>(res: (v: T) => void, rej: (e: Error) => void) =>
  (err: Error | null, v: T) =>
    err ? rej(err) : res(v);

export const nodeStoreFs: StoreFs = {
  open: (path, flags, mode = FILE_MODE) =>
    new Promise((res, rej) => fs.open(path, flags, mode, cb(res, rej))),
  close: (fd) => new Promise<void>((res, rej) => fs.close(fd, (err) => (err ? rej(err) : res()))),
  read: (fd, buf, off, len, pos) => new Promise((res, rej) => fs.read(fd, buf, off, len, pos, cb(res, rej))),
  readSync: (fd, buf, off, len, pos) => fs.readSync(fd, buf, off, len, pos),
  write: (fd, buf, pos) => new Promise((res, rej) => fs.write(fd, buf, 0, buf.length, pos, cb(res, rej))),
  writev: (fd, bufs, pos) => new Promise((res, rej) => fs.writev(fd, bufs, pos, cb(res, rej))),
  writevSync: (fd, bufs, pos) => fs.writevSync(fd, bufs, pos),
  fdatasync: (fd) => new Promise<void>((res, rej) => fs.fdatasync(fd, (err) => (err ? rej(err) : res()))),
  fsync: (fd) => new Promise<void>((res, rej) => fs.fsync(fd, (err) => (err ? rej(err) : res()))),
  ftruncate: (fd, len) =>
    new Promise<void>((res, rej) => fs.ftruncate(fd, len, (err) => (err ? rej(err) : res()))),
  mkdir: (path, mode = DIR_MODE) =>
    new Promise<void>((res, rej) => fs.mkdir(path, { mode }, (err) => (err ? rej(err) : res()))),
  rmdir: (path) => new Promise<void>((res, rej) => fs.rmdir(path, (err) => (err ? rej(err) : res()))),
  readdir: (path) => new Promise((res, rej) => fs.readdir(path, cb(res, rej))),
  stat: (path) => new Promise((res, rej) => fs.stat(path, cb(res, rej))),
  lstat: (path) => new Promise((res, rej) => fs.lstat(path, cb(res, rej))),
  unlink: (path) => new Promise<void>((res, rej) => fs.unlink(path, (err) => (err ? rej(err) : res()))),
  rename: (from, to) =>
    new Promise<void>((res, rej) => fs.rename(from, to, (err) => (err ? rej(err) : res()))),
};

export const O = fs.constants;

export function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

export async function exists(sfs: StoreFs, path: string): Promise<boolean> {
  try {
    await sfs.stat(path);
    return true;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return false;
    throw err;
  }
}

/** Make a directory's entries (created, renamed or deleted files) durable. */
export async function fsyncDir(sfs: StoreFs, dir: string): Promise<void> {
  const fd = await sfs.open(dir, O.O_RDONLY | O.O_DIRECTORY);
  try {
    await sfs.fsync(fd);
  } finally {
    await sfs.close(fd);
  }
}

/**
 * Create `dir` and any missing parents, making each new entry durable (the parent of every directory
 * created is fsynced), so a file later fsynced inside it cannot vanish with its directory in a power
 * cut. Returns whether anything was created.
 */
export async function ensureDir(sfs: StoreFs, dir: string): Promise<boolean> {
  const missing: string[] = [];
  let d = dir;
  for (;;) {
    if (await exists(sfs, d)) break;
    missing.push(d);
    const parent = dirname(d);
    if (parent === d) break;
    d = parent;
  }
  for (let i = missing.length - 1; i >= 0; i--) {
    const path = missing[i]!;
    try {
      await sfs.mkdir(path);
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
      continue;
    }
    await fsyncDir(sfs, dirname(path));
  }
  return missing.length > 0;
}

/** Read a whole file, or `null` when it does not exist. */
export async function readFileIfExists(sfs: StoreFs, path: string): Promise<Buffer | null> {
  let fd: number;
  try {
    fd = await sfs.open(path, O.O_RDONLY);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  try {
    const chunks: Buffer[] = [];
    let pos = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(1 << 20);
      const n = await sfs.read(fd, buf, 0, buf.length, pos);
      if (n === 0) break;
      chunks.push(buf.subarray(0, n));
      pos += n;
    }
    return Buffer.concat(chunks);
  } finally {
    await sfs.close(fd);
  }
}

/** Write all of `bufs` at `pos`, looping over short writes. */
export async function writeAll(sfs: StoreFs, fd: number, bufs: Buffer[], pos: number): Promise<void> {
  let total = 0;
  for (const b of bufs) total += b.length;
  let written = 0;
  while (written < total) {
    const rest = written === 0 ? bufs : sliceBufs(bufs, written);
    written += await sfs.writev(fd, rest, pos + written);
  }
}

/** `writeAll` on the calling thread (`StoreFs.writevSync`). */
export function writeAllSync(sfs: StoreFs, fd: number, bufs: Buffer[], pos: number): void {
  let total = 0;
  for (const b of bufs) total += b.length;
  let written = 0;
  while (written < total) {
    const rest = written === 0 ? bufs : sliceBufs(bufs, written);
    written += sfs.writevSync(fd, rest, pos + written);
  }
}

/** `readFully` on the calling thread (`StoreFs.readSync`). */
export function readFullySync(sfs: StoreFs, fd: number, buf: Buffer, len: number, pos: number): number {
  let got = 0;
  while (got < len) {
    const n = sfs.readSync(fd, buf, got, len - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/** Read up to `len` bytes at `pos`, looping over short reads; returns how many were read. */
export async function readFully(
  sfs: StoreFs,
  fd: number,
  buf: Buffer,
  len: number,
  pos: number,
): Promise<number> {
  let got = 0;
  while (got < len) {
    const n = await sfs.read(fd, buf, got, len - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/** Remove a directory tree (the store's own files only: no symlinks are followed). */
export async function removeTree(sfs: StoreFs, path: string): Promise<void> {
  let st: StoreStat;
  try {
    st = await sfs.lstat(path);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw err;
  }
  if (!st.isDirectory()) {
    await sfs.unlink(path);
    return;
  }
  for (const name of await sfs.readdir(path)) await removeTree(sfs, join(path, name));
  await sfs.rmdir(path);
}

export function sliceBufs(bufs: Buffer[], skip: number): Buffer[] {
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

/**
 * The descriptor of an index file, opened on first use. Only a file this process is creating
 * (`fresh`) may be created: a file deleted meanwhile is never resurrected. `onCreated` is told when
 * the file was created (its directory entry then needs an fsync). Two opens racing keep one descriptor.
 */
export async function openIndexFile(
  sfs: StoreFs,
  f: { path: string; fd: number | null; fresh: boolean },
  onCreated: () => void,
): Promise<number> {
  if (f.fd === null) {
    const fd = await sfs.open(f.path, f.fresh ? O.O_RDWR | O.O_CREAT : O.O_RDWR);
    if (f.fresh) {
      f.fresh = false;
      onCreated();
    }
    if (f.fd === null) f.fd = fd;
    else await sfs.close(fd);
  }
  return f.fd;
}
