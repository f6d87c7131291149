/**
 * nats-server from Debian with JetStream on file storage in a temp dir. JetStream acknowledges a
 * publish once the message is written to its file (no fsync per message; the OS flushes it later).
 */
import { join } from 'node:path';
import { ManagedProcess, waitReady } from './managed-process.js';
import { freePort, privateDir, stopAndRemove, sumUsage, tcpOpen, type RunningServer } from './server.js';

export async function startNats(): Promise<RunningServer> {
  const dir = privateDir('nats');
  const port = await freePort();
  const log = join(dir, 'server.log');
  const proc = new ManagedProcess(
    'nats-server',
    'nats-server',
    ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', join(dir, 'jetstream'), '-n', 'vela-compare'],
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
