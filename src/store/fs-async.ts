/**
 * Promise wrappers over Node's callback `fs` calls on file descriptors. The store uses these rather
 * than `fs/promises` FileHandles on its hot paths: fewer allocations per call.
 */
import fs from 'node:fs';

export const openP = (path: string, flags: string | number) =>
  new Promise<number>((res, rej) => fs.open(path, flags, (err, fd) => (err ? rej(err) : res(fd))));
export const closeP = (fd: number) =>
  new Promise<void>((res, rej) => fs.close(fd, (err) => (err ? rej(err) : res())));
/** Write all of `buf` at `pos` (may write fewer bytes; callers loop). */
export const writeP = (fd: number, buf: Buffer, pos: number) =>
  new Promise<number>((res, rej) =>
    fs.write(fd, buf, 0, buf.length, pos, (err, n) => (err ? rej(err) : res(n))),
  );
export const writevP = (fd: number, bufs: Buffer[], pos: number) =>
  new Promise<number>((res, rej) => fs.writev(fd, bufs, pos, (err, n) => (err ? rej(err) : res(n))));
export const readP = (fd: number, buf: Buffer, off: number, len: number, pos: number) =>
  new Promise<number>((res, rej) => fs.read(fd, buf, off, len, pos, (err, n) => (err ? rej(err) : res(n))));
export const fdatasyncP = (fd: number) =>
  new Promise<void>((res, rej) => fs.fdatasync(fd, (err) => (err ? rej(err) : res())));
export const ftruncateP = (fd: number, len: number) =>
  new Promise<void>((res, rej) => fs.ftruncate(fd, len, (err) => (err ? rej(err) : res())));
