/**
 * Vela in a child process (Node, running the sources under tsx like the other benchmarks), sync
 * flush, data in a temp dir. With `cpuProfDir` the broker writes V8 CPU profiles to
 * `cpuProfDir/broker-<label>/` on exit (the largest file is the main thread's).
 */
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedProcess, waitReady } from './managed-process.js';
import { privateDir, stopAndRemove, sumUsage, type RunningServer } from './server.js';

const CHILD = fileURLToPath(new URL('./vela-broker-child.ts', import.meta.url));

/** Node flags that make V8 log every inline-cache state change of the process to `file`. */
export function icLogFlags(file: string): string[] {
  return ['--log-ic', `--logfile=${file}`, '--no-logfile-per-isolate'];
}

/** With `remoting`, `port` is the broker's Remoting port instead of its gRPC port. */
export async function startVela(options: {
  cpuProfDir?: string;
  /** Write V8's inline-cache log to `icLogDir/broker-<label>.log`. */
  icLogDir?: string;
  label: string;
  remoting?: boolean;
}): Promise<RunningServer> {
  const dir = privateDir('vela');
  const log = join(dir, 'server.log');
  // One directory per process: the main thread and tsx's loader thread each write a profile.
  const prof = options.cpuProfDir
    ? ['--cpu-prof', '--cpu-prof-dir', join(options.cpuProfDir, `broker-${options.label}`)]
    : [];
  const icLog = options.icLogDir ? icLogFlags(join(options.icLogDir, `broker-${options.label}.log`)) : [];
  const proc = new ManagedProcess(
    'vela-broker',
    process.execPath,
    [...prof, ...icLog, '--import', 'tsx', CHILD, join(dir, 'data')],
    { cwd: fileURLToPath(new URL('../../..', import.meta.url)), logFile: log, stdoutPipe: true },
  );
  let ports: [number, number] | undefined;
  createInterface({ input: proc.child.stdout! }).on('line', (line) => {
    const [word, grpc, http, remoting] = line.split(' ');
    if (word === 'READY') ports = [Number(options.remoting ? remoting : grpc), Number(http)];
  });
  try {
    await waitReady(proc, async () => ports !== undefined, 60_000, log);
  } catch (err) {
    await stopAndRemove([proc], dir).catch(() => {});
    throw err;
  }
  return {
    port: ports![0],
    adminPort: ports![1],
    dir,
    usage: () => sumUsage([proc]),
    stop: () => stopAndRemove([proc], dir),
  };
}
