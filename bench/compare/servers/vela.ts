/**
 * Vela in a child process (Node, running the sources under tsx like the other benchmarks), sync
 * flush, data in a temp dir. With `cpuProfDir` the broker writes V8 CPU profiles to
 * `cpuProfDir/broker-<label>/` on exit (the largest file is the main thread's).
 */
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ManagedProcess, waitReady } from './managed-process.js';
import { privateDir, stopAndRemove, sumUsage, type RunningServer } from './server.js';
import { PAUSES_FILE_ENV } from '../pauses.js';
import { BROKER_CONFIG_ENV } from './child-settings.js';

const CHILD = fileURLToPath(new URL('./vela-broker-child.ts', import.meta.url));
/** The file the broker child writes its allocation sample to (set: sample; unset: do not). */
export const HEAP_SAMPLE_ENV = 'VELA_COMPARE_HEAP_SAMPLE';

/** Node flags that make V8 log every inline-cache state change of the process to `file`. */
export function icLogFlags(file: string): string[] {
  return ['--log-ic', `--logfile=${file}`, '--no-logfile-per-isolate'];
}

/**
 * The Node flags `npm start` gives the broker of the checkout at `root` (src/cli/broker-heap.ts), so
 * that it runs as users start it; none for a checkout from before there were any.
 */
async function startFlags(root: string): Promise<readonly string[]> {
  const file = join(root, 'src/cli/broker-heap.ts');
  if (!existsSync(file)) return [];
  const mod = (await import(pathToFileURL(file).href)) as { BROKER_NODE_FLAGS?: readonly string[] };
  return mod.BROKER_NODE_FLAGS ?? [];
}

/** What the broker records for a closer look, if asked to. */
export interface BrokerDebug {
  cpuProfDir?: string;
  /** Write V8's inline-cache log to `icLogDir/broker-<label>.log`. */
  icLogDir?: string;
  /**
   * Write a sampled allocation profile to `heapSampleDir/broker-<label>.heapprofile` when the broker
   * stops (`vela-broker-child.ts`).
   */
  heapSampleDir?: string;
  /** Node/V8 flags the broker process starts with (`--node-flags`). */
  nodeFlags?: string[];
  /** Record the broker's pauses to a file in its directory (`--w3-pauses`, pauses.ts). */
  pauses?: boolean;
  /** Broker settings of this broker only, a JSON object (`--broker-config`, child-settings.ts). */
  config?: string;
}

/**
 * With `remoting`, `port` is the broker's Remoting port instead of its gRPC port. With `root`, the
 * broker of that Vela checkout (its sources and node_modules) instead of this one's.
 */
export async function startVela(
  options: BrokerDebug & { label: string; remoting?: boolean; root?: string },
): Promise<RunningServer> {
  const root = options.root ?? fileURLToPath(new URL('../../..', import.meta.url));
  const child = options.root ? join(options.root, 'bench/compare/servers/vela-broker-child.ts') : CHILD;
  const dir = privateDir('vela');
  const log = join(dir, 'server.log');
  const pausesFile = options.pauses ? join(dir, 'pauses.log') : undefined;
  // One directory per process: the main thread and tsx's loader thread each write a profile.
  const prof = options.cpuProfDir
    ? ['--cpu-prof', '--cpu-prof-dir', join(options.cpuProfDir, `broker-${options.label}`)]
    : [];
  const icLog = options.icLogDir ? icLogFlags(join(options.icLogDir, `broker-${options.label}.log`)) : [];
  const proc = new ManagedProcess(
    'vela-broker',
    process.execPath,
    [
      ...(await startFlags(root)),
      ...(options.nodeFlags ?? []),
      ...prof,
      ...icLog,
      '--import',
      'tsx',
      child,
      join(dir, 'data'),
    ],
    {
      cwd: root,
      logFile: log,
      stdoutPipe: true,
      env: {
        // This broker's own settings come from its options only, never from the harness's environment.
        ...withoutKey(process.env, BROKER_CONFIG_ENV),
        ...(options.heapSampleDir
          ? { [HEAP_SAMPLE_ENV]: join(options.heapSampleDir, `broker-${options.label}.heapprofile`) }
          : {}),
        ...(pausesFile ? { [PAUSES_FILE_ENV]: pausesFile } : {}),
        ...(options.config ? { [BROKER_CONFIG_ENV]: options.config } : {}),
      },
    },
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
    ...(pausesFile ? { pausesFile } : {}),
    usage: () => sumUsage([proc]),
    stop: () => stopAndRemove([proc], dir),
  };
}

/** `env` without `key`. */
function withoutKey(env: NodeJS.ProcessEnv, key: string): NodeJS.ProcessEnv {
  const { [key]: _dropped, ...rest } = env;
  return rest;
}
