/**
 * Crash-safe whole-file replacement: write a temporary file, fsync it, rename it over the target and
 * fsync the directory, so a reader after any crash sees either the old or the new content, never a mix.
 * Files are created 0600 (they may hold keys or state).
 */
import { dirname, basename, join } from 'node:path';
import {
  errnoOf,
  fsyncDir,
  nodeStoreFs,
  O,
  readFileIfExists as readWith,
  writeAll,
  type StoreFs,
} from './store-fs.js';

export async function writeFileAtomic(
  path: string,
  data: Uint8Array | string,
  sfs: StoreFs = nodeStoreFs,
): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.tmp`);
  // A leftover temporary file may carry another mode: start from a fresh one.
  await sfs.unlink(tmp).catch((err: unknown) => {
    if (errnoOf(err) !== 'ENOENT') throw err;
  });
  const fd = await sfs.open(tmp, O.O_WRONLY | O.O_CREAT | O.O_EXCL);
  try {
    const buf =
      typeof data === 'string'
        ? Buffer.from(data)
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    await writeAll(sfs, fd, [buf], 0);
    await sfs.fdatasync(fd);
  } finally {
    await sfs.close(fd);
  }
  await sfs.rename(tmp, path);
  await fsyncDir(sfs, dirname(path));
}

/** Read a file, or `null` when it does not exist. */
export function readFileIfExists(path: string, sfs: StoreFs = nodeStoreFs): Promise<Buffer | null> {
  return readWith(sfs, path);
}
