/**
 * One process per data directory, with a lock that dies with its process.
 *
 * On Linux the lock is a Unix socket bound in the abstract namespace under a name derived from the
 * directory's real path. Binding is atomic, and the kernel releases the name the moment the process
 * ends, however it ends (kill -9, OOM kill), so a crashed broker never blocks its own restart, even
 * when the new process has the same pid (pid 1 in a container). The abstract namespace belongs to
 * the network namespace: two containers with separate network namespaces that mount the same data
 * directory do not see each other's lock (pid files cannot tell them apart either: give each broker
 * its own volume).
 *
 * Elsewhere (no abstract sockets) the LOCK file's pid decides: a pid that is no longer alive, or
 * that is this process's own pid without this process holding the lock (a previous incarnation with
 * a recycled pid), is taken over.
 *
 * In both cases `<dir>/LOCK` holds the owner's pid for people and error messages.
 */
import { createHash } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { VelaError } from '../common/errors.js';
import { writeFileAtomic, readFileIfExists } from './atomic-file.js';
import { errnoOf, nodeStoreFs, O, type StoreFs } from './store-fs.js';

export interface DirLock {
  /** Release the lock (idempotent). */
  release(): Promise<void>;
}

/** Directories (real paths) whose lock this process holds. */
const held = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoOf(err) === 'EPERM';
  }
}

async function lockOwner(path: string, sfs: StoreFs): Promise<number> {
  const raw = await readFileIfExists(path, sfs).catch(() => null);
  return Number(raw?.toString('utf8').trim() ?? '') || 0;
}

/** The abstract socket name for a directory: `\0vela-lock:<sha256 of its real path>`. */
export function lockName(realDir: string): string {
  return `\0vela-lock:${createHash('sha256').update(realDir).digest('hex').slice(0, 48)}`;
}

function bindAbstract(name: string): Promise<Server | NodeJS.ErrnoException> {
  return new Promise((resolve) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', (err) => resolve(err as NodeJS.ErrnoException));
    server.listen({ path: name, exclusive: true }, () => {
      server.removeAllListeners('error');
      server.on('error', () => {});
      server.unref();
      resolve(server);
    });
  });
}

export async function acquireDirLock(dir: string, sfs: StoreFs = nodeStoreFs): Promise<DirLock> {
  const real = await realpath(dir);
  const path = join(dir, 'LOCK');
  if (held.has(real)) {
    throw new VelaError(
      'STORE_LOCKED',
      `${dir} is in use by process ${process.pid} (this process: the store is already open)`,
    );
  }
  let server: Server | null = null;
  if (process.platform === 'linux') {
    const bound = await bindAbstract(lockName(real));
    if (bound instanceof Error) {
      if (bound.code === 'EADDRINUSE') {
        const pid = await lockOwner(path, sfs);
        throw new VelaError(
          'STORE_LOCKED',
          `${dir} is in use by ${pid > 0 ? `process ${pid}` : 'another process'}`,
        );
      }
      // No abstract sockets here after all (a restricted sandbox): fall back to the pid file.
    } else {
      server = bound;
    }
  }
  if (!server) await takePidLock(dir, path, sfs);
  held.add(real);
  try {
    await writeFileAtomic(path, String(process.pid), sfs);
  } catch (err) {
    held.delete(real);
    server?.close();
    throw err;
  }
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      if ((await lockOwner(path, sfs)) === process.pid) await sfs.unlink(path).catch(() => {});
      held.delete(real);
      if (server) await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The portable fallback: create LOCK exclusively, taking over a lock whose owner is gone. */
async function takePidLock(dir: string, path: string, sfs: StoreFs): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = await sfs.open(path, O.O_WRONLY | O.O_CREAT | O.O_EXCL);
      await sfs.close(fd);
      return;
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
    }
    const pid = await lockOwner(path, sfs);
    // Our own pid without holding the lock: a previous incarnation of this pid left it (container restart).
    if (pid > 0 && pid !== process.pid && alive(pid)) {
      throw new VelaError('STORE_LOCKED', `${dir} is in use by process ${pid}`);
    }
    await sfs.unlink(path).catch(() => {});
  }
  throw new VelaError('STORE_LOCKED', `could not take ${path}`);
}
