/**
 * Crash-safe whole-file replacement: write a temporary file, fsync it, rename it over the target and
 * fsync the directory, so a reader after any crash sees either the old or the new content, never a mix.
 */
import { open, rename, readFile } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';

export async function writeFileAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.tmp`);
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(data);
    await fh.datasync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  await fsyncDir(dirname(path));
}

/** Make a directory's entries (created, renamed or deleted files) durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Read a file, or `null` when it does not exist. */
export async function readFileIfExists(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
