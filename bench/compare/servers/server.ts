/** What every server the harness starts looks like from the orchestrator, and small shared helpers. */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ManagedProcess } from './managed-process.js';

export interface RunningServer {
  /** The port clients connect to (Vela: gRPC). */
  port: number;
  /** Vela: admin HTTP port. */
  adminPort?: number;
  /** Where its data and logs are (removed by `stop()`). */
  dir: string;
  /** Vela with `--w3-pauses`: the file its broker writes its pauses to (pauses.ts). */
  pausesFile?: string;
  /** CPU (µs) and RSS (bytes) of all its processes now. */
  usage(): { cpuUs: number; rssBytes: number };
  /** Stop every process it started and remove its directory. */
  stop(): Promise<void>;
}

const dirs = new Set<string>();

/** A fresh private directory under the OS temp dir (removed by `stopAndRemove` or `removeAllDirs`). */
export function privateDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `vela-compare-${prefix}-`));
  dirs.add(dir);
  return dir;
}

/** Remove every directory still registered (from an exit handler, after the processes are gone). */
export function removeAllDirs(): void {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs.clear();
}

/** A port free on 127.0.0.1 right now (the server binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function tcpOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Stop processes in order, then remove the directory (even if a stop failed). */
export async function stopAndRemove(procs: ManagedProcess[], dir: string): Promise<void> {
  const errors: unknown[] = [];
  for (const p of procs) await p.stop().catch((e) => errors.push(e));
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
  if (errors.length) throw errors[0];
}

export function sumUsage(procs: ManagedProcess[]): { cpuUs: number; rssBytes: number } {
  let cpuUs = 0;
  let rssBytes = 0;
  for (const p of procs) {
    const u = p.usage();
    cpuUs += u.cpuUs;
    rssBytes += u.rssBytes;
  }
  return { cpuUs, rssBytes };
}
