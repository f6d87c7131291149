/**
 * Fault injection at Node's `fs` module, for one test process: every call on a path under `root`
 * (or on a descriptor opened there) goes through the rules first, and a matching rule fails the call
 * with its error code (ENOSPC, EIO, EMFILE …) before the disk is touched. `maxOpen` caps the
 * descriptors open under `root`, so opens past it fail with EMFILE as the kernel's limit would.
 *
 * Patching the module (callback API, `fs/promises` and FileHandle methods; `syncBuiltinESMExports`
 * refreshes named imports) reaches every file-system call the store makes, whatever layer it goes
 * through. `node --test` runs each test file in its own process, so nothing else is affected.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { resolve } from 'node:path';

export type FsOp =
  | 'open'
  | 'close'
  | 'read'
  | 'write'
  | 'writev'
  | 'fdatasync'
  | 'fsync'
  | 'ftruncate'
  | 'mkdir'
  | 'rmdir'
  | 'readdir'
  | 'stat'
  | 'lstat'
  | 'unlink'
  | 'rename';

export interface FaultRule {
  /** Calls this rule applies to. */
  ops: FsOp[];
  /** Matches the path (for calls on a descriptor: the path it was opened with). */
  path?: RegExp;
  /** The error code the call fails with. */
  code: string;
  /** How many calls fail before the rule is spent. @defaultValue unlimited */
  times?: number;
  /** Only while this says so. */
  when?: () => boolean;
}

export function fsError(code: string, op: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected fault, ${op} '${path}'`), { code, syscall: op, path });
}

type Fn = (...args: unknown[]) => unknown;
const CALLBACK_OPS: FsOp[] = ['read', 'write', 'writev', 'fdatasync', 'fsync', 'ftruncate', 'close'];
const PATH_OPS: FsOp[] = ['mkdir', 'rmdir', 'readdir', 'stat', 'lstat', 'unlink', 'rename'];
const HANDLE_OPS: Record<string, FsOp> = {
  writeFile: 'write',
  write: 'write',
  writev: 'writev',
  datasync: 'fdatasync',
  sync: 'fsync',
  truncate: 'ftruncate',
  read: 'read',
  close: 'close',
};

export class NodeFaults {
  readonly rules: FaultRule[] = [];
  readonly calls: { op: FsOp; path: string }[] = [];
  /** Descriptors open under `root`, with their paths. */
  readonly openFds = new Map<number, string>();
  maxOpen: number | null = null;
  private readonly root: string;
  private readonly restore: (() => void)[] = [];

  constructor(root: string) {
    this.root = resolve(root);
  }

  fail(rule: FaultRule): FaultRule {
    this.rules.push(rule);
    return rule;
  }

  clear(): void {
    this.rules.length = 0;
    this.maxOpen = null;
  }

  count(op: FsOp, path?: RegExp): number {
    return this.calls.filter((c) => c.op === op && (!path || path.test(c.path))).length;
  }

  /** Whether a call fails, and with what. */
  private fault(op: FsOp, path: string): NodeJS.ErrnoException | null {
    this.calls.push({ op, path });
    for (const r of this.rules) {
      if (!r.ops.includes(op) || (r.path && !r.path.test(path)) || (r.when && !r.when())) continue;
      if (r.times !== undefined) {
        if (r.times <= 0) continue;
        r.times--;
      }
      return fsError(r.code, op, path);
    }
    if (op === 'open' && this.maxOpen !== null && this.openFds.size >= this.maxOpen)
      return fsError('EMFILE', op, path);
    return null;
  }

  private mine(path: unknown): path is string {
    return typeof path === 'string' && resolve(path).startsWith(this.root);
  }

  private patch(obj: Record<string, unknown>, name: string, make: (orig: Fn) => Fn): void {
    const orig = obj[name] as Fn;
    obj[name] = make(orig);
    this.restore.push(() => (obj[name] = orig));
  }

  async install(): Promise<this> {
    const fault = (op: FsOp, path: string) => this.fault(op, path);
    const mine = (path: unknown): path is string => this.mine(path);
    const openFds = this.openFds;
    const F = fs as unknown as Record<string, unknown>;
    // Callback API.
    this.patch(
      F,
      'open',
      (orig) =>
        function (this: unknown, path: unknown, ...rest: unknown[]) {
          if (!mine(path)) return orig.call(this, path, ...rest);
          const cb = rest.pop() as (err: Error | null, fd?: number) => void;
          const err = fault('open', path);
          if (err) return process.nextTick(cb, err);
          return orig.call(this, path, ...rest, (e: Error | null, fd: number) => {
            if (!e) openFds.set(fd, path);
            cb(e, fd);
          });
        },
    );
    for (const op of CALLBACK_OPS) {
      this.patch(
        F,
        op,
        (orig) =>
          function (this: unknown, fd: unknown, ...rest: unknown[]) {
            const path = openFds.get(fd as number);
            if (path === undefined) return orig.call(this, fd, ...rest);
            const cb = rest.at(-1) as (err: Error | null) => void;
            const err = fault(op, path);
            if (err) return process.nextTick(cb, err);
            if (op === 'close') openFds.delete(fd as number);
            return orig.call(this, fd, ...rest);
          },
      );
    }
    // The store's reads of bytes expected in the page cache (`StoreFs.readSync`) count and fail as
    // reads, its small writes on the event loop (`StoreFs.writevSync`) as writes.
    for (const [name, op] of [
      ['readSync', 'read'],
      ['writevSync', 'writev'],
    ] as const) {
      this.patch(
        F,
        name,
        (orig) =>
          function (this: unknown, fd: unknown, ...rest: unknown[]) {
            const path = openFds.get(fd as number);
            if (path === undefined) return orig.call(this, fd, ...rest);
            const err = fault(op, path);
            if (err) throw err;
            return orig.call(this, fd, ...rest);
          },
      );
    }
    for (const op of PATH_OPS) {
      this.patch(
        F,
        op,
        (orig) =>
          function (this: unknown, path: unknown, ...rest: unknown[]) {
            if (!mine(path)) return orig.call(this, path, ...rest);
            const err = fault(op, path);
            if (err) return process.nextTick(rest.at(-1) as (e: Error) => void, err);
            return orig.call(this, path, ...rest);
          },
      );
    }
    // Promise API.
    const P = fsp as unknown as Record<string, unknown>;
    for (const op of PATH_OPS) {
      this.patch(
        P,
        op,
        (orig) =>
          async function (this: unknown, path: unknown, ...rest: unknown[]) {
            if (mine(path)) {
              const err = fault(op, path);
              if (err) throw err;
            }
            return orig.call(this, path, ...rest);
          },
      );
    }
    const handles = new WeakMap<object, string>();
    this.patch(
      P,
      'open',
      (orig) =>
        async function (this: unknown, path: unknown, ...rest: unknown[]) {
          if (!mine(path)) return orig.call(this, path, ...rest);
          const err = fault('open', path);
          if (err) throw err;
          const fh = (await orig.call(this, path, ...rest)) as { fd: number };
          handles.set(fh, path);
          openFds.set(fh.fd, path);
          return fh;
        },
    );
    for (const fileOp of ['readFile', 'writeFile'] as const) {
      this.patch(
        P,
        fileOp,
        (orig) =>
          async function (this: unknown, path: unknown, ...rest: unknown[]) {
            if (mine(path)) {
              const err = fault(fileOp === 'readFile' ? 'read' : 'write', path);
              if (err) throw err;
            }
            return orig.call(this, path, ...rest);
          },
      );
    }
    // FileHandle methods (one prototype for all handles: found by opening a file once).
    const fh = (await (fsp.open as unknown as (p: string, f: string) => Promise<object>)(
      process.execPath,
      'r',
    )) as {
      close(): Promise<void>;
    };
    const hp = Object.getPrototypeOf(fh) as Record<string, unknown>;
    await fh.close();
    for (const [name, op] of Object.entries(HANDLE_OPS)) {
      this.patch(
        hp,
        name,
        (orig) =>
          async function (this: object, ...args: unknown[]) {
            const path = handles.get(this);
            if (path !== undefined) {
              const err = fault(op, path);
              if (err) throw err;
              if (op === 'close') openFds.delete((this as { fd: number }).fd);
            }
            return orig.apply(this, args);
          },
      );
    }
    syncBuiltinESMExports();
    return this;
  }

  uninstall(): void {
    while (this.restore.length > 0) this.restore.pop()!();
    syncBuiltinESMExports();
  }
}

/** Install faults under `root` for the duration of `fn`. */
export async function withFaults<T>(root: string, fn: (f: NodeFaults) => Promise<T>): Promise<T> {
  const f = await new NodeFaults(root).install();
  try {
    return await fn(f);
  } finally {
    f.uninstall();
  }
}
