/**
 * A power-cut model for a child process, preloaded with `--import`: it sits on Node's `fs` module and
 * keeps, beside the real files under `VELA_POWER_CUT_DIR`, what a power cut would leave of them:
 *
 * - a file's content as of its last fsync/fdatasync (an O_DSYNC write counts for its own bytes);
 * - a directory's entries as of its last fsync: a file created, renamed or deleted is (un)done by a
 *   power cut unless its directory was fsynced afterwards; a new directory likewise in its parent.
 *
 * On SIGUSR2 the power goes: every file-system call under the directory stops (those in flight never
 * complete, so nothing more is acknowledged), the surviving image is written to
 * `VELA_POWER_CUT_OUT`, and `POWER-CUT <files> <bytes>` is printed. The parent then kills the process
 * and puts the image in place of the directory. Everything not fsynced is lost, the strictest a real
 * disk can be (a real one may keep more, never less). Both the callback and the promise APIs (and
 * FileHandle methods), and `writevSync`, are covered, so any code that uses Node's fs runs under it
 * unchanged.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join, resolve } from 'node:path';

const ROOT = process.env.VELA_POWER_CUT_DIR ? resolve(process.env.VELA_POWER_CUT_DIR) : null;
const OUT = process.env.VELA_POWER_CUT_OUT ? resolve(process.env.VELA_POWER_CUT_OUT) : null;

type Entry = { kind: 'file'; id: number } | { kind: 'dir' };
interface Inode {
  durable: Buffer;
}
interface Open {
  path: string;
  id: number | null; // null: a directory
  dsync: boolean;
}

const inodes = new Map<number, Inode>();
/** Current name → inode of every file under ROOT. */
const names = new Map<string, number>();
/** Durable entries of each directory under ROOT (as of its last fsync). */
const durableDirs = new Map<string, Map<string, Entry>>();
const fds = new Map<number, Open>();
let nextId = 1;
let frozen = false;

const under = (p: unknown): p is string =>
  typeof p === 'string' && ROOT !== null && (resolve(p) === ROOT || resolve(p).startsWith(ROOT + '/'));

function flagsOf(flags: unknown): number {
  if (typeof flags === 'number') return flags;
  const C = fs.constants;
  const map: Record<string, number> = {
    r: C.O_RDONLY,
    'r+': C.O_RDWR,
    rs: C.O_RDONLY | C.O_SYNC,
    'rs+': C.O_RDWR | C.O_SYNC,
    w: C.O_WRONLY | C.O_CREAT | C.O_TRUNC,
    wx: C.O_WRONLY | C.O_CREAT | C.O_TRUNC | C.O_EXCL,
    'w+': C.O_RDWR | C.O_CREAT | C.O_TRUNC,
    'wx+': C.O_RDWR | C.O_CREAT | C.O_TRUNC | C.O_EXCL,
    a: C.O_WRONLY | C.O_CREAT | C.O_APPEND,
    'a+': C.O_RDWR | C.O_CREAT | C.O_APPEND,
  };
  return map[String(flags ?? 'r')] ?? C.O_RDONLY;
}

function newInode(durable = Buffer.alloc(0)): number {
  const id = nextId++;
  inodes.set(id, { durable });
  return id;
}

/** The state at start is durable (the parent made it so). */
function adopt(dir: string): void {
  const entries = new Map<string, Entry>();
  durableDirs.set(dir, entries);
  for (const name of fs.readdirSync(dir)) {
    const path = join(dir, name);
    const st = fs.lstatSync(path);
    if (st.isDirectory()) {
      entries.set(name, { kind: 'dir' });
      adopt(path);
    } else if (st.isFile()) {
      const id = newInode(fs.readFileSync(path));
      names.set(path, id);
      entries.set(name, { kind: 'file', id });
    }
  }
}

/** What a directory holds now, as durable entries would record it. */
function listing(dir: string): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const name of fs.readdirSync(dir)) {
    const path = join(dir, name);
    const id = names.get(path);
    if (id !== undefined) out.set(name, { kind: 'file', id });
    else if (fs.statSync(path, { throwIfNoEntry: false })?.isDirectory()) out.set(name, { kind: 'dir' });
  }
  return out;
}

/** The current bytes of an open file (read through /proc: the descriptor itself may be write-only). */
function contentOf(fd: number): Buffer {
  return fs.readFileSync(`/proc/self/fd/${fd}`);
}

function applyWrite(id: number, pos: number, bufs: readonly Uint8Array[], n: number): void {
  const ino = inodes.get(id)!;
  const end = pos + n;
  if (ino.durable.length < end) {
    const bigger = Buffer.alloc(end);
    ino.durable.copy(bigger);
    ino.durable = bigger;
  }
  let at = pos;
  let left = n;
  for (const b of bufs) {
    if (left <= 0) break;
    const take = Math.min(left, b.length);
    ino.durable.set(b.subarray(0, take), at);
    at += take;
    left -= take;
  }
}

/**
 * What to do around one call: `before` runs when it is made, `after` when it succeeded (before the
 * caller hears of it). After the cut nothing is started and nothing completes.
 */
interface Hook {
  before?: () => unknown;
  after?: (result: unknown, state: unknown) => void;
}

function hookFor(op: string, args: unknown[]): Hook | null {
  if (frozen) return { before: () => 'frozen' };
  switch (op) {
    case 'open': {
      const [path, flags] = args;
      if (!under(path)) return null;
      const p = resolve(path);
      const f = flagsOf(flags);
      const C = fs.constants;
      return {
        after: (fd) => {
          const isDir = fs.fstatSync(fd as number).isDirectory();
          let id: number | null = null;
          if (!isDir) {
            id = names.get(p) ?? null;
            if (id === null) {
              id = newInode();
              names.set(p, id);
            }
          }
          fds.set(fd as number, { path: p, id, dsync: (f & (C.O_DSYNC | C.O_SYNC)) !== 0 });
        },
      };
    }
    case 'close': {
      const fd = args[0] as number;
      if (!fds.has(fd)) return null;
      // Forgotten when the close is made, not when it is reported: the kernel may give the number to
      // a file opened meanwhile, whose open can be reported first (its entry must then stay).
      return { before: () => fds.delete(fd) };
    }
    case 'write':
    case 'writev': {
      const o = fds.get(args[0] as number);
      if (!o || o.id === null || !o.dsync) return null;
      const id = o.id;
      return {
        after: (n) => {
          const [, data, a, b, c] = args;
          if (op === 'writev') applyWrite(id, a as number, data as Uint8Array[], n as number);
          else if (typeof data === 'string')
            applyWrite(id, (a as number) ?? 0, [Buffer.from(data)], n as number);
          else
            applyWrite(
              id,
              (c as number) ?? 0,
              [(data as Uint8Array).subarray((a as number) ?? 0)],
              n as number,
            );
          void b;
        },
      };
    }
    case 'fsync':
    case 'fdatasync': {
      const fd = args[0] as number;
      const o = fds.get(fd);
      if (!o) return null;
      return {
        before: () => (o.id === null ? listing(o.path) : contentOf(fd)),
        after: (_r, snapshot) => {
          if (o.id === null) durableDirs.set(o.path, snapshot as Map<string, Entry>);
          else inodes.get(o.id)!.durable = snapshot as Buffer;
        },
      };
    }
    case 'mkdir': {
      const [path] = args;
      if (!under(path)) return null;
      const p = resolve(path);
      // A directory created now holds nothing durable yet (its own entries need its own fsync).
      return {
        before: () => fs.existsSync(p),
        after: (_r, existed) => {
          if (!existed) durableDirs.set(p, new Map());
        },
      };
    }
    case 'rename': {
      const [from, to] = args;
      if (!under(from)) return null;
      return {
        after: () => {
          const id = names.get(resolve(from));
          if (id === undefined) return;
          names.delete(resolve(from));
          names.set(resolve(to as string), id);
        },
      };
    }
    case 'unlink': {
      const [path] = args;
      if (!under(path)) return null;
      return { after: () => names.delete(resolve(path)) };
    }
    default:
      return null;
  }
}

const HOOKED = ['open', 'close', 'write', 'writev', 'fsync', 'fdatasync', 'mkdir', 'rename', 'unlink'];

function install(): void {
  const F = fs as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const op of [...HOOKED, 'read', 'ftruncate', 'rmdir', 'readdir', 'stat', 'lstat']) {
    const orig = F[op]!;
    F[op] = function (this: unknown, ...args: unknown[]) {
      const touchesRoot = under(args[0]) || (typeof args[0] === 'number' && fds.has(args[0]));
      if (!touchesRoot) return orig.apply(this, args);
      if (frozen) return undefined; // the power is off: the call never completes
      const hook = hookFor(op, args);
      const cb = args.at(-1) as (err: Error | null, ...r: unknown[]) => void;
      const state = hook?.before?.();
      return orig.apply(this, [
        ...args.slice(0, -1),
        (err: Error | null, ...r: unknown[]) => {
          if (frozen) return;
          if (!err) hook?.after?.(r[0], state);
          cb(err, ...r);
        },
      ]);
    };
  }
  // The store's small writes on the event loop (`StoreFs.writevSync`). A call cannot hang once the
  // power is off: it fails instead, which acknowledges nothing either.
  const origWritevSync = F.writevSync!;
  F.writevSync = function (this: unknown, ...args: unknown[]) {
    const o = fds.get(args[0] as number);
    if (!o) return origWritevSync.apply(this, args);
    if (frozen) throw Object.assign(new Error('EIO: the power is off'), { code: 'EIO' });
    const n = origWritevSync.apply(this, args) as number;
    if (o.id !== null && o.dsync) applyWrite(o.id, args[2] as number, args[1] as Uint8Array[], n);
    return n;
  };
  const P = fsp as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  for (const op of [
    'mkdir',
    'rename',
    'unlink',
    'rmdir',
    'readdir',
    'stat',
    'lstat',
    'readFile',
    'writeFile',
  ]) {
    const orig = P[op]!;
    P[op] = async function (this: unknown, ...args: unknown[]) {
      if (!under(args[0])) return orig.apply(this, args);
      if (frozen) return new Promise(() => {});
      const hook: Hook | null =
        op === 'writeFile'
          ? {
              after: () =>
                void (
                  names.has(resolve(args[0] as string)) || names.set(resolve(args[0] as string), newInode())
                ),
            }
          : hookFor(op, args);
      const state = hook?.before?.();
      const r = await orig.apply(this, args);
      if (frozen) return new Promise(() => {});
      hook?.after?.(r, state);
      return r;
    };
  }
  // FileHandles: fs.promises.open, and the methods of the handles it returns.
  const handles = new WeakMap<object, number>();
  const origOpen = P.open!;
  P.open = async function (this: unknown, ...args: unknown[]) {
    if (!under(args[0])) return origOpen.apply(this, args);
    if (frozen) return new Promise(() => {});
    const hook = hookFor('open', args);
    const fh = (await origOpen.apply(this, args)) as { fd: number };
    if (frozen) return new Promise(() => {});
    hook?.after?.(fh.fd, undefined);
    handles.set(fh, fh.fd);
    return fh;
  };
  syncBuiltinESMExports();
}

/** FileHandle methods need a handle to find their prototype: patched on first use of fs.promises.open. */
async function installHandles(): Promise<void> {
  const fh = await (fsp.open as (p: string, f: string) => Promise<object & { close(): Promise<void> }>)(
    process.execPath,
    'r',
  );
  const proto = Object.getPrototypeOf(fh) as Record<string, (...a: unknown[]) => Promise<unknown>>;
  await fh.close();
  const map: Record<string, string> = {
    writeFile: 'write',
    datasync: 'fdatasync',
    sync: 'fsync',
    close: 'close',
  };
  for (const [method, op] of Object.entries(map)) {
    const orig = proto[method]!;
    proto[method] = async function (this: { fd: number }, ...args: unknown[]) {
      const o = fds.get(this.fd);
      if (!o) return orig.apply(this, args);
      if (frozen) return new Promise(() => {});
      const fd = this.fd;
      const hook =
        op === 'write'
          ? o.id !== null && o.dsync
            ? {
                after: () =>
                  applyWrite(o.id!, 0, [Buffer.from(args[0] as Uint8Array)], (args[0] as Uint8Array).length),
              }
            : null
          : hookFor(op, [fd]);
      const state = hook && 'before' in hook ? (hook as Hook).before?.() : undefined;
      const r = await orig.apply(this, args);
      if (frozen) return new Promise(() => {});
      (hook as Hook | null)?.after?.(r, state);
      return r;
    };
  }
  // `writeFile` on a handle without O_DSYNC: the bytes are in the file, durable at its next sync.
}

/** Write what survives the cut into OUT. */
function materialize(): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const emit = (dir: string, out: string) => {
    fs.mkdirSync(out, { recursive: true });
    for (const [name, e] of durableDirs.get(dir) ?? new Map<string, Entry>()) {
      if (e.kind === 'dir') emit(join(dir, name), join(out, name));
      else {
        const data = inodes.get(e.id)!.durable;
        fs.writeFileSync(join(out, name), data, { mode: 0o600 });
        files++;
        bytes += data.length;
      }
    }
  };
  emit(ROOT!, OUT!);
  return { files, bytes };
}

if (ROOT && OUT) {
  fs.mkdirSync(ROOT, { recursive: true });
  adopt(ROOT);
  install();
  await installHandles();
  process.on('SIGUSR2', () => {
    frozen = true;
    const { files, bytes } = materialize();
    fs.writeSync(1, `POWER-CUT ${files} ${bytes}\n`);
  });
}
