/** Shared test helpers: temp directories, log capture, child processes. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createLogger, type Logger } from '../src/common/logger.js';

export function tempDir(prefix = 'vela-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** A logger whose JSON lines are kept for assertions. */
export function captureLogger(): {
  logger: Logger;
  lines: { level: number; msg: string; [k: string]: unknown }[];
} {
  const lines: { level: number; msg: string }[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: { write: (s: string) => void lines.push(JSON.parse(s)) },
  });
  return { logger, lines };
}

/** Spawn a TypeScript script under tsx, with each stdout line handed to `onLine`. */
export function spawnTs(script: string, args: string[], onLine: (line: string) => void): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  createInterface({ input: child.stdout! }).on('line', onLine);
  return child;
}

export function waitExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

/** Wait until the child has exited and its output has been read to the end (every line handled). */
export function waitClosed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.stdout ? child.stdout.closed && child.exitCode !== null : child.exitCode !== null) resolve();
    else child.once('close', () => resolve());
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Deterministic body for a message id, of a length derived from it (so corruption is detectable). */
export function bodyFor(id: string): Buffer {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (Math.imul(h, 31) + id.charCodeAt(i)) >>> 0;
  const len = 64 + (h % 2000);
  const out = Buffer.allocUnsafe(len);
  for (let i = 0; i < len; i++) out[i] = (h + i * 7) & 0xff;
  return out;
}

/**
 * A random integer in [0, n) from a fixed seed (xorshift32): the same sequence on every run, so
 * that a test over generated inputs reproduces its failure.
 */
export function seededRandom(seed: number): (n: number) => number {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}
