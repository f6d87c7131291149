/**
 * AckMessage on the broker's side, by hand: the request decoded and the answer written without
 * protobufjs. A push consumer acknowledges every message it receives, and protobufjs's generic
 * decoder (a message object per entry, then `toObject`) and writer (a list of operations and an
 * allocation per field) cost ~1.3 µs per acknowledged message on the broker, a tenth of its CPU in
 * the W2 benchmark (docs/benchmarks.md).
 *
 * `decodeAckRequest` gives the object `decodeRequest` would (fields present on the wire, and only
 * those), or undefined for anything it does not cover (an unknown field, an unexpected wire type,
 * bytes that do not parse, strings that are not UTF-8, an empty string, which encoders leave out
 * and protobufjs drops): protobufjs decides those. `encodeAckResponse` writes the bytes protobufjs
 * writes for the same object, or gives undefined for one it does not cover.
 * test/unit/ack-codec.test.ts checks both against protobufjs, test/unit/hand-decoders-fuzz.test.ts the
 * decoder on damaged requests.
 */
import type { Resource, Status } from './wire-types.js';
import { copyBytes } from '../common/copy-bytes.js';
import { vsize, writeVarint } from './varint.js';
import {
  coveredStatus,
  measureStatus,
  nested,
  stringField,
  utf8Length,
  writeEntriesAnswer,
  writeStatus,
  writeString,
  type StatusSize,
} from './answer-writer.js';

export interface AckRequestWire {
  group?: Resource;
  topic?: Resource;
  entries?: AckEntryWire[];
}

export interface AckEntryWire {
  message_id?: string;
  receipt_handle?: string;
}

export interface AckResponseWire {
  status: Status;
  entries?: { message_id: string; receipt_handle: string; status: Status }[];
  /**
   * Instead of `entries`: the request's entries, each answered with `status`, copied from the
   * request's bytes (`ackEcho`). Only `encodeAckResponse` writes it.
   */
  echo?: AckEcho;
}

/**
 * Where the entries of a decoded AckMessageRequest lie in its bytes, when each is written as
 * protobufjs writes one (message id, then receipt handle, minimal lengths): an answer's entry holds
 * the same two fields and then its status, so an all-OK answer is the request's entries copied with a
 * status after each, with no string decoded again, measured or written per entry.
 */
export interface AckEcho {
  bytes: Buffer;
  /** Start and length of each entry's fields, in request order. */
  spans: number[];
}

const echoes = new WeakMap<AckRequestWire, AckEcho>();

/** The entries of `req` (as `decodeAckRequest` gave it) to copy into an answer, if they can be. */
export function ackEcho(req: object): AckEcho | undefined {
  return echoes.get(req as AckRequestWire);
}

// ---- decoding ----

class Unsupported extends Error {}
const UNSUPPORTED = new Unsupported();

let buf: Buffer = Buffer.alloc(0);
let pos = 0;

/** A varint below 2^28 (lengths and tags here): longer ones are left to protobufjs. */
function small(end: number): number {
  let v = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) throw UNSUPPORTED;
    const b = buf[pos++]!;
    v |= (b & 127) << shift;
    if (b < 128) return v;
  }
  throw UNSUPPORTED;
}

/** Fields the last `twoStrings` read, and where its message's fields begin. */
let fieldsRead = 0;
let fieldsAt = 0;
/** Bytes the varints read by `lengthOf` took past the fewest their values need (0: all minimal). */
let padding = 0;

function lengthOf(end: number): number {
  const from = pos;
  const n = small(end);
  if (n > end - pos) throw UNSUPPORTED;
  padding += pos - from - vsize(n);
  return n;
}

function string(end: number): string {
  const n = lengthOf(end);
  const start = pos;
  pos += n;
  // Every string here is a field without explicit presence: given empty (its default), protobufjs
  // leaves it out of the object, where this would keep ''. Encoders do not write one; protobufjs decides.
  if (n === 0) throw UNSUPPORTED;
  // ASCII (ids, handles) is the rule. protobufjs refuses bytes that are not UTF-8 (the request is
  // malformed) where `toString` makes them U+FFFD: a string with U+FFFD in it is left to protobufjs,
  // which decides.
  const s = buf.toString('utf8', start, pos);
  if (s.indexOf('\uFFFD') >= 0) throw UNSUPPORTED;
  return s;
}

/**
 * A nested message of string fields 1 and 2 only, named `first` and `second` (a Resource: namespace
 * and name; an AckMessageEntry: message id and receipt handle). Anything else (an entry's lite topic,
 * an unknown field) is left to protobufjs.
 */
function twoStrings<T>(end: number, first: keyof T & string, second: keyof T & string): T {
  const n = lengthOf(end);
  const stop = pos + n;
  const o: Record<string, string> = {};
  fieldsRead = 0;
  fieldsAt = pos;
  while (pos < stop) {
    fieldsRead++;
    const tag = small(stop);
    if (tag === ((1 << 3) | 2)) o[first] = string(stop);
    else if (tag === ((2 << 3) | 2)) o[second] = string(stop);
    else throw UNSUPPORTED;
  }
  return o as T;
}

const resource = (end: number) => twoStrings<Resource>(end, 'resource_namespace', 'name');
const entry = (end: number) => twoStrings<AckEntryWire>(end, 'message_id', 'receipt_handle');

/** An AckMessageRequest as `decodeRequest` gives it, or undefined: decode it with protobufjs. */
export function decodeAckRequest(bytes: Buffer): AckRequestWire | undefined {
  buf = bytes;
  pos = 0;
  const end = bytes.length;
  const req: AckRequestWire = {};
  const entries: AckEntryWire[] = [];
  let spans: number[] | undefined = [];
  try {
    while (pos < end) {
      const tag = small(end);
      if (tag === ((1 << 3) | 2)) req.group = mergeResource(req.group, resource(end));
      else if (tag === ((2 << 3) | 2)) req.topic = mergeResource(req.topic, resource(end));
      else if (tag === ((3 << 3) | 2)) {
        padding = 0;
        const e = entry(end);
        entries.push(e);
        // As protobufjs writes an entry: two fields, the message id first, each length minimal.
        if (
          spans &&
          padding === 0 &&
          fieldsRead === 2 &&
          bytes[fieldsAt] === ((1 << 3) | 2) &&
          e.receipt_handle
        )
          spans.push(fieldsAt, pos - fieldsAt);
        else spans = undefined;
      } else return undefined;
    }
  } catch (err) {
    if (err === UNSUPPORTED) return undefined;
    throw err;
  } finally {
    buf = EMPTY;
  }
  if (entries.length > 0) {
    req.entries = entries;
    if (spans) echoes.set(req, { bytes, spans });
  }
  return req;
}

const EMPTY = Buffer.alloc(0);

/** A message field that occurs twice is merged (protobuf's rule; the later scalar wins). */
function mergeResource(earlier: Resource | undefined, later: Resource): Resource {
  return earlier ? { ...earlier, ...later } : later;
}

// ---- encoding ----

/** An AckMessageResponse as protobufjs writes it, or undefined for an answer this does not cover. */
export function encodeAckResponse(res: AckResponseWire): Buffer | undefined {
  if (res.echo) return encodeEcho(res.status, res.echo);
  return writeEntriesAnswer('AckMessageResponse', res.status, res.entries ?? [], measureEntry, writeEntry);
}

/** The answer to the request `echo` came from, every entry answered with `status`: the bytes protobufjs writes for it. */
function encodeEcho(status: Status, echo: AckEcho): Buffer {
  // Never left to protobufjs, which knows nothing of `echo` and would answer without the entries.
  if (!coveredStatus(status))
    throw new Error('an echoed AckMessage answer with a status this writer does not cover');
  const st = measureStatus(status);
  const statusField = nested(st.size);
  // Each entry's status: the answer's own, under the entry's field number.
  const entryStatus = Buffer.allocUnsafe(statusField);
  writeStatus(entryStatus, 0, (3 << 3) | 2, status, st);
  const { bytes, spans } = echo;
  let total = statusField;
  for (let i = 1; i < spans.length; i += 2) total += nested(spans[i]! + statusField);
  const out = Buffer.allocUnsafe(total);
  let at = writeStatus(out, 0, (1 << 3) | 2, status, st);
  for (let i = 0; i < spans.length; i += 2) {
    const length = spans[i + 1]!;
    out[at++] = (2 << 3) | 2;
    at = writeVarint(out, at, length + statusField);
    bytes.copy(out, at, spans[i]!, spans[i]! + length);
    at += length;
    copyBytes(entryStatus, 0, out, at, statusField);
    at += statusField;
  }
  return out;
}

type AckResultWire = NonNullable<AckResponseWire['entries']>[number];

interface EntrySize {
  id: number;
  handle: number;
  size: number;
  status: StatusSize;
}

function measureEntry(e: AckResultWire): EntrySize | undefined {
  if (!coveredStatus(e.status)) return undefined;
  if (typeof e.message_id !== 'string' || typeof e.receipt_handle !== 'string') return undefined;
  const id = utf8Length(e.message_id);
  const handle = utf8Length(e.receipt_handle);
  const status = measureStatus(e.status);
  return { id, handle, status, size: stringField(id) + stringField(handle) + nested(status.size) };
}

function writeEntry(out: Buffer, at: number, e: AckResultWire, z: EntrySize): number {
  at = writeString(out, at, (1 << 3) | 2, e.message_id, z.id);
  at = writeString(out, at, (2 << 3) | 2, e.receipt_handle, z.handle);
  return writeStatus(out, at, (3 << 3) | 2, e.status, z.status);
}
