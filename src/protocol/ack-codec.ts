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

function lengthOf(end: number): number {
  const n = small(end);
  if (n > end - pos) throw UNSUPPORTED;
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
  while (pos < stop) {
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
  try {
    while (pos < end) {
      const tag = small(end);
      if (tag === ((1 << 3) | 2)) req.group = mergeResource(req.group, resource(end));
      else if (tag === ((2 << 3) | 2)) req.topic = mergeResource(req.topic, resource(end));
      else if (tag === ((3 << 3) | 2)) entries.push(entry(end));
      else return undefined;
    }
  } catch (err) {
    if (err === UNSUPPORTED) return undefined;
    throw err;
  } finally {
    buf = EMPTY;
  }
  if (entries.length > 0) req.entries = entries;
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
  return writeEntriesAnswer('AckMessageResponse', res.status, res.entries ?? [], measureEntry, writeEntry);
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
