/**
 * The one error catalogue. Each entry names a failure once: the `apache.rocketmq.v2.Code` the gRPC edge
 * answers with, whether a client may retry, and a default message. Layers throw `VelaError`s built
 * from it; the protocol edge and the SDK map codes through it in one place.
 */
import { Code } from './codes.js';

interface CatalogueEntry {
  readonly code: Code;
  readonly retriable: boolean;
  readonly message: string;
}

function entry(code: Code, retriable: boolean, message: string): CatalogueEntry {
  return { code, retriable, message };
}

export const ErrorCatalogue = {
  // Storage
  STORE_DISK_FULL: entry(
    Code.TOO_MANY_REQUESTS,
    true,
    'storage is above its disk-use refusal threshold; writes are refused until space is freed',
  ),
  STORE_CLOSED: entry(Code.INTERNAL_SERVER_ERROR, true, 'the store is closed'),
  STORE_IO_ERROR: entry(Code.INTERNAL_SERVER_ERROR, true, 'a storage I/O operation failed'),
  STORE_CORRUPT_RECORD: entry(Code.MESSAGE_CORRUPTED, false, 'a stored record failed its checksum'),
  STORE_RECORD_TOO_LARGE: entry(Code.PAYLOAD_TOO_LARGE, false, 'the record exceeds the maximum record size'),
  STORE_LOCKED: entry(Code.INTERNAL_SERVER_ERROR, false, 'the data directory is locked by another process'),
  STORE_BAD_ARGUMENT: entry(Code.BAD_REQUEST, false, 'invalid argument to the store'),
  // Generic
  INTERNAL: entry(Code.INTERNAL_SERVER_ERROR, true, 'internal error'),
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorKind = keyof typeof ErrorCatalogue;

export class VelaError extends Error {
  override readonly name = 'VelaError';
  readonly kind: ErrorKind;
  readonly code: Code;
  readonly retriable: boolean;

  constructor(kind: ErrorKind, detail?: string, options?: { cause?: unknown }) {
    const e = ErrorCatalogue[kind];
    super(detail ? `${e.message}: ${detail}` : e.message, options);
    this.kind = kind;
    this.code = e.code;
    this.retriable = e.retriable;
  }
}

export function isVelaError(err: unknown, kind?: ErrorKind): err is VelaError {
  return err instanceof VelaError && (kind === undefined || err.kind === kind);
}
