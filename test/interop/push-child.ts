/**
 * Drives push-consumer-child.ts (the official Node PushConsumer in its own process, which never exits
 * by itself): start it, collect the JSON events it prints, stop it, wait for its exit.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startBroker } from '../../src/server.js';
import { MIN_INVISIBLE_MS, type InteropBroker } from './support.js';

const CHILD = fileURLToPath(new URL('./push-consumer-child.ts', import.meta.url));

/**
 * The push consumer sends no long-polling time and uses the one in the Settings reply (the broker's
 * maxPollMs); its shutdown waits for the ReceiveMessage in flight. With the 20 s default every
 * shutdown would take ~20 s, so brokers of these tests poll for at most 2 s.
 */
export const MAX_POLL_MS = 2000;

export interface ChildEvent {
  event: 'started' | 'consumed' | 'shutdown' | 'error';
  [k: string]: unknown;
}

export interface ChildRun {
  events: ChildEvent[];
  started: Promise<ChildEvent>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** Ask a child started with `expected` 0 to shut down. */
  stop(): void;
  /** Kill it now (clean-up after a failure). */
  kill(): void;
}

/**
 * Start a child: `[endpoints, topic, group, expected, filter?, delayMs?, failures?]` (push-consumer-child.ts). With `expected`
 * 0 it consumes until `stop()`.
 */
export function runChild(args: string[], timeoutMs = 30_000): ChildRun {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const events: ChildEvent[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.on('error', () => {}); // the child may be gone already
  let onStarted: (e: ChildEvent) => void = () => {};
  const started = new Promise<ChildEvent>((resolve) => (onStarted = resolve));
  createInterface({ input: child.stdout }).on('line', (line) => {
    let e: ChildEvent;
    try {
      e = JSON.parse(line) as ChildEvent;
    } catch {
      stderr += `(stdout) ${line}\n`;
      return;
    }
    events.push(e);
    if (e.event === 'started') onStarted(e);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>(
    (resolve) =>
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        // Let the last stdout lines drain.
        setImmediate(() => resolve({ code, signal, stderr }));
      }),
  );
  void exited.then((r) => onStarted({ event: 'error', message: `exited early: ${r.code} ${r.signal}` }));
  return {
    events,
    started,
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.stdin.end('stop\n');
    },
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

export function consumedOf(events: ChildEvent[]): ChildEvent[] {
  return events.filter((e) => e.event === 'consumed');
}

/**
 * The broker of the push-consumer interop tests: loopback, free ports, short minimum invisible time and
 * long polls (`consume` adds to or overrides those).
 */
export async function startPushBroker(
  dataDir: string,
  consume: NonNullable<Parameters<typeof startBroker>[0]>['consume'] = {},
): Promise<InteropBroker> {
  const running = await startBroker({
    dataDir,
    host: '127.0.0.1',
    grpcPort: 0,
    httpPort: 0,
    remotingPort: 0,
    consume: { minInvisibleMs: MIN_INVISIBLE_MS, maxPollMs: MAX_POLL_MS, ...consume },
    shutdownGraceMs: 1000,
  });
  return { running, endpoints: `127.0.0.1:${running.grpcPort}`, close: () => running.close() };
}
