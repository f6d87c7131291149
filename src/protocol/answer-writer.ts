/**
 * Pieces for writing hot unary answers by hand, byte for byte as protobufjs writes them: fields in
 * number order, each left out at its default (0, '') as protobufjs leaves them out. Used by the
 * AckMessage and SendMessage answers (ack-codec.ts, send-codec.ts).
 */
import type { Status } from './wire-types.js';
import { vsize, writeVarint } from './varint.js';

/** A string's UTF-8 length (equal to its length exactly when it is ASCII). */
export function utf8Length(s: string): number {
  if (s.length >= 8) return Buffer.byteLength(s, 'utf8');
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

/** Bytes of a string field with a one-byte tag (its UTF-8 length `n`); 0 for an empty string. */
export const stringField = (n: number): number => (n ? 1 + vsize(n) + n : 0);

/** Write a string field (tag, length `n`, UTF-8) at `at`; returns where it ends. Nothing for ''. */
export function writeString(out: Buffer, at: number, tag: number, s: string, n: number): number {
  if (n === 0) return at;
  out[at++] = tag;
  at = writeVarint(out, at, n);
  if (n < 8 && n === s.length) for (let i = 0; i < n; i++) out[at + i] = s.charCodeAt(i);
  else out.write(s, at, n, n === s.length ? 'latin1' : 'utf8');
  return at + n;
}

/** A status this writer covers: a code protobufjs writes as a plain varint, a string message. */
export const coveredStatus = (s: Status | undefined): s is Status =>
  s !== undefined &&
  typeof s.code === 'number' &&
  Number.isSafeInteger(s.code) &&
  s.code >= 0 &&
  s.code < 2 ** 31 &&
  typeof s.message === 'string';

/** A Status measured: its value's bytes and its message's UTF-8 length. */
export interface StatusSize {
  size: number;
  message: number;
}

export function measureStatus(s: Status): StatusSize {
  const message = utf8Length(s.message);
  return { size: (s.code ? 1 + vsize(s.code) : 0) + stringField(message), message };
}

/** Write a Status field (always present: a message field) with tag `tag`. */
export function writeStatus(out: Buffer, at: number, tag: number, s: Status, m: StatusSize): number {
  out[at++] = tag;
  at = writeVarint(out, at, m.size);
  if (s.code) {
    out[at++] = 1 << 3;
    at = writeVarint(out, at, s.code);
  }
  return writeString(out, at, (2 << 3) | 2, s.message, m.message);
}

/** Bytes of a length-delimited field holding `size` bytes (one-byte tag). */
export const nested = (size: number): number => 1 + vsize(size) + size;

/**
 * An answer of the shape `{ status = 1; repeated Entry entries = 2 }` (AckMessage's, SendMessage's):
 * `measure` sizes an entry (undefined: not covered, and the whole answer goes to protobufjs), `write`
 * writes its fields where they go. Undefined when anything is not covered.
 */
export function writeEntriesAnswer<E, Z extends { size: number }>(
  what: string,
  status: Status,
  entries: readonly E[],
  measure: (e: E) => Z | undefined,
  write: (out: Buffer, at: number, e: E, z: Z) => number,
): Buffer | undefined {
  if (!coveredStatus(status)) return undefined;
  const top = measureStatus(status);
  let total = nested(top.size);
  const sizes: Z[] = new Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const z = measure(entries[i]!);
    if (z === undefined) return undefined;
    sizes[i] = z;
    total += nested(z.size);
  }
  const out = Buffer.allocUnsafe(total);
  let at = writeStatus(out, 0, (1 << 3) | 2, status, top);
  for (let i = 0; i < entries.length; i++) {
    const z = sizes[i]!;
    out[at++] = (2 << 3) | 2;
    at = writeVarint(out, at, z.size);
    at = write(out, at, entries[i]!, z);
  }
  if (at !== total) throw new Error(`${what}: wrote ${at} of ${total} bytes`);
  return out;
}
