/**
 * redis-server from Debian, append-only file with `appendfsync everysec` (a write is acknowledged
 * before it is fsynced; up to a second of writes can be lost), no RDB snapshots, data in a temp dir.
 */
import { join } from 'node:path';
import { ManagedProcess, waitReady } from './managed-process.js';
import { freePort, privateDir, stopAndRemove, sumUsage, tcpOpen, type RunningServer } from './server.js';

export async function startRedis(): Promise<RunningServer> {
  const dir = privateDir('redis');
  const port = await freePort();
  const log = join(dir, 'server.log');
  const proc = new ManagedProcess(
    'redis-server',
    'redis-server',
    [
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--save',
      '',
      '--daemonize',
      'no',
      '--protected-mode',
      'yes',
    ],
    { cwd: dir, logFile: log },
  );
  try {
    await waitReady(proc, () => tcpOpen(port), 30_000, log);
  } catch (err) {
    await stopAndRemove([proc], dir).catch(() => {});
    throw err;
  }
  return { port, dir, usage: () => sumUsage([proc]), stop: () => stopAndRemove([proc], dir) };
}
