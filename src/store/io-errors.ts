/**
 * How the store treats a failed file-system call.
 *
 * - **Transient**: out of space (ENOSPC, EDQUOT) or out of descriptors (EMFILE, ENFILE) when opening
 *   or writing. The bytes of the failed call never reached the page cache, so the store rolls the
 *   file back to its last durable byte (truncate + fdatasync) and keeps going; the callers are told
 *   to back off (`STORE_DISK_FULL` / `TOO_MANY_REQUESTS`, both gRPC TOO_MANY_REQUESTS).
 * - **Fatal**: a failed fsync/fdatasync (or an O_DSYNC write, which is one), or any other write
 *   error. After a failed writeback the kernel may already have dropped the dirty pages and marked
 *   them clean, so a later fsync can succeed without the data being on disk (PostgreSQL's
 *   "fsyncgate"). Nothing written since the last good fsync can be trusted: the store fails what is
 *   pending, refuses every further write (`STORE_IO_ERROR`) and logs at `fatal` until a restart
 *   recovers from what is really on disk.
 */
import { VelaError } from '../common/errors.js';
import { errnoOf } from './store-fs.js';

const SPACE = new Set(['ENOSPC', 'EDQUOT']);
const DESCRIPTORS = new Set(['EMFILE', 'ENFILE']);

export function isSpaceError(err: unknown): boolean {
  return SPACE.has(errnoOf(err) ?? '');
}

/** Whether a failed open or write (never an fsync) may be rolled back and retried later. */
export function isTransient(err: unknown): boolean {
  const code = errnoOf(err) ?? '';
  return SPACE.has(code) || DESCRIPTORS.has(code);
}

/** The error callers get for a transient failure: both kinds tell producers to back off. */
export function transientError(err: unknown, what: string): VelaError {
  const code = errnoOf(err) ?? 'EIO';
  return SPACE.has(code)
    ? new VelaError('STORE_DISK_FULL', `${code} ${what}`, { cause: err })
    : new VelaError('TOO_MANY_REQUESTS', `out of file descriptors (${code}) ${what}`, { cause: err });
}

/** The error every write gets once the store has gone read-only after a fatal I/O failure. */
export function readOnlyError(cause: Error): VelaError {
  return new VelaError(
    'STORE_IO_ERROR',
    `the store is read-only after a failed write or fsync (${errnoOf(cause) ?? cause.message}); ` +
      'restart the broker to recover from what is on disk',
    { cause },
  );
}

/** An fsync that failed: never transient, whatever its errno. */
export class SyncFailure extends Error {
  constructor(override readonly cause: unknown) {
    super((cause as Error)?.message ?? String(cause));
    (this as NodeJS.ErrnoException).code = errnoOf(cause);
  }
}

/** Await an fsync, marking its failure as one (`SyncFailure`). */
export async function synced(p: Promise<void>): Promise<void> {
  try {
    await p;
  } catch (err) {
    throw new SyncFailure(err);
  }
}

/** Whether a failure may be rolled back and retried: a transient open or write, never an fsync. */
export function isRetriable(err: unknown): boolean {
  return !(err instanceof SyncFailure) && isTransient(err);
}

/** The underlying error of a `SyncFailure`, or the error itself. */
export function rootCause(err: unknown): Error {
  return (err instanceof SyncFailure ? err.cause : err) as Error;
}
