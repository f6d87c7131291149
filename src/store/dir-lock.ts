/**
 * One process per data directory. The LOCK file holds the owner's pid; a lock left by a process that
 * no longer exists (it was killed) is taken over.
 */
import { open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { VelaError } from '../common/errors.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function acquireDirLock(dir: string): Promise<void> {
  const path = join(dir, 'LOCK');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await open(path, 'wx');
      await fh.writeFile(String(process.pid));
      await fh.close();
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim());
    if (pid > 0 && (pid === process.pid || alive(pid))) {
      throw new VelaError(
        'STORE_LOCKED',
        `${dir} is in use by process ${pid}${pid === process.pid ? ' (this process: the store is already open)' : ''}`,
      );
    }
    await unlink(path).catch(() => {});
  }
  throw new VelaError('STORE_LOCKED', `could not take ${path}`);
}

export async function releaseDirLock(dir: string): Promise<void> {
  const path = join(dir, 'LOCK');
  const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim());
  if (pid === process.pid) await unlink(path).catch(() => {});
}
