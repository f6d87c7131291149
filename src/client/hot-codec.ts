/**
 * The consumer's hot path on the wire, by hand: ReceiveMessage and PullMessage answer frames decoded
 * straight into flat `DecodedMessage`s, and AckMessage requests and answers. protobufjs builds a
 * nested object per message (topic, system properties, digest, three timestamps) and then the SDK
 * copied it into a MessageView; its generic writer allocates per field. Here one pass reads each field
 * into its place, and an AckMessage is measured and written into one buffer.
 *
 * The decoder follows protobuf's rules as protobufjs applies them: fields in any order, the last
 * occurrence of a scalar wins, repeated and map fields accumulate, unknown fields are skipped by
 * wire type (a group to its end tag). Bytes that do not parse throw, and so does what no encoder
 * writes and protobuf would merge (a time, a status or a message given twice) and a string that is
 * not UTF-8 (protobufjs and protobuf-java refuse those frames). The encoder writes what protobufjs
 * writes for the same request (fields in number order, empty strings left out);
 * test/sdk/hot-codec.test.ts checks both against protobufjs, the decoder also on damaged frames.
 */
import { isUtf8 } from 'node:buffer';
import type { Resource, Status } from '../protocol/wire-types.js';
import { prefixedBuffer } from '../protocol/transport/grpc-wire.js';
import { vsize, writeVarint } from '../protocol/varint.js';
import { RecentString, utf8 } from '../common/utf8-strings.js';

// ---- reading ----------------------------------------------------------------------------------------

class Malformed extends Error {
  override readonly name = 'MalformedFrame';
}

let buf: Buffer = Buffer.alloc(0);
let pos = 0;

function varint(end: number): number {
  if (pos >= end) throw new Malformed('truncated varint');
  let b = buf[pos++]!;
  if (b < 128) return b;
  let lo = b & 127;
  for (let shift = 7; shift < 28; shift += 7) {
    if (pos >= end) throw new Malformed('truncated varint');
    b = buf[pos++]!;
    lo |= (b & 127) << shift;
    if (b < 128) return lo >>> 0;
  }
  if (pos >= end) throw new Malformed('truncated varint');
  b = buf[pos++]!;
  lo |= (b & 15) << 28;
  let hi = (b & 127) >> 4;
  if (b >= 128) {
    for (let shift = 3; ; shift += 7) {
      if (shift > 31 || pos >= end) throw new Malformed('bad varint');
      b = buf[pos++]!;
      hi |= (b & 127) << shift;
      if (b < 128) break;
    }
  }
  // A negative int64 (ten bytes, two's complement); exact down to -2^53.
  if (hi & 0x80000000) return -((~hi >>> 0) * 4294967296 + (4294967296 - (lo >>> 0)));
  return (hi >>> 0) * 4294967296 + (lo >>> 0);
}

/**
 * An int32 or enum field: the low 32 bits of the varint, signed, as protobufjs reads them. Read
 * apart from `varint`: a varint of ten bytes need not be one of a negative int32 (an encoder may pad
 * one), and its value as a number has lost the low bits by then.
 */
function int32(end: number): number {
  let v = 0;
  for (let shift = 0; shift < 70; shift += 7) {
    if (pos >= end) throw new Malformed('truncated varint');
    const b = buf[pos++]!;
    if (shift < 32) v |= (b & 127) << shift;
    if (b < 128) return v | 0;
  }
  throw new Malformed('bad varint');
}

function lengthOf(end: number): number {
  const n = varint(end);
  // A ten-byte varint reads as a negative number: followed, it would move back, and loop for ever.
  if (n < 0 || n > end - pos) throw new Malformed('length past the end');
  return n;
}

/** Read a nested message's length: where it stops. */
function enter(end: number): number {
  const n = lengthOf(end);
  return pos + n;
}

/**
 * `s`, decoded from `buf[start, end)`, if those bytes are UTF-8. The slicer makes U+FFFD of bytes
 * that are not; protobufjs and protobuf-java refuse a frame with such a string, and so does this
 * (the character itself, written as UTF-8, passes).
 */
function wellFormed(s: string, start: number, end: number): string {
  if (s.indexOf('\uFFFD') >= 0 && !isUtf8(buf.subarray(start, end))) {
    throw new Malformed('a string that is not UTF-8');
  }
  return s;
}

function string(end: number): string {
  const n = lengthOf(end);
  const start = pos;
  pos += n;
  return wellFormed(utf8(buf, start, pos), start, pos);
}

/** A string field that usually repeats (topic, hosts): the last string itself when the bytes are the same. */
function recent(end: number, r: RecentString): string {
  const n = lengthOf(end);
  const start = pos;
  pos += n;
  return r.of(buf, start, pos, wellFormed);
}

const recentTopic = new RecentString();
const recentNamespace = new RecentString();
const recentBornHost = new RecentString();
const recentStoreHost = new RecentString();

/**
 * Skip the value of a field the decoder does not read. A group (wire type 3, long deprecated) is
 * skipped to its end tag, as protobufjs skips one; a stray end tag (4) or an unknown wire type is
 * malformed.
 */
function skip(tag: number, end: number, depth = 0): void {
  switch (tag & 7) {
    case 0:
      varint(end);
      return;
    case 1:
      pos += 8;
      break;
    case 2: {
      const n = lengthOf(end);
      pos += n;
      return;
    }
    case 3: {
      if (depth > 64) throw new Malformed('groups nested too deeply');
      for (;;) {
        const inner = varint(end);
        if ((inner & 7) === 4) return;
        skip(inner, end, depth + 1);
      }
    }
    case 5:
      pos += 4;
      break;
    default:
      throw new Malformed(`wire type ${tag & 7}`);
  }
  if (pos > end) throw new Malformed('field past the end');
}

/**
 * A Timestamp or Duration in ms (seconds × 1000 + whole ms of nanos), as `toMillis` reads it.
 * `earlier`: the same field's value if it came already. Protobuf merges a message field given twice;
 * no encoder writes one twice, so rather than merge two halves of a time, the frame is refused.
 */
function millis(end: number, earlier?: number): number {
  if (earlier !== undefined) throw new Malformed('a time given twice');
  const stop = enter(end);
  let seconds = 0;
  let nanos = 0;
  while (pos < stop) {
    const tag = varint(stop);
    if (tag === 8) seconds = varint(stop);
    else if (tag === 16) nanos = int32(stop);
    else skip(tag, stop);
  }
  return seconds * 1000 + Math.floor(nanos / 1e6);
}

function status(end: number): Status {
  const stop = enter(end);
  let code = 0;
  let message = '';
  while (pos < stop) {
    const tag = varint(stop);
    if (tag === 8) code = int32(stop);
    else if (tag === 18) message = string(stop);
    else skip(tag, stop);
  }
  return { code, message };
}

// ---- delivered messages -----------------------------------------------------------------------------

/** A delivered message, flat: what MessageView is made of (absent fields as protobuf's defaults). */
export class DecodedMessage {
  topic = '';
  namespace = '';
  /** User properties; null when there are none. */
  properties: Record<string, string> | null = null;
  tag = '';
  keys: string[] | null = null;
  messageId = '';
  digestType = 0;
  checksum = '';
  /** Absent: 0 (UNSPECIFIED). */
  bodyEncoding = 0;
  messageType = 0;
  bornTimestamp: number | undefined = undefined;
  bornHost = '';
  storeTimestamp: number | undefined = undefined;
  storeHost = '';
  deliveryTimestamp: number | undefined = undefined;
  receiptHandle = '';
  queueId = 0;
  queueOffset = 0;
  deliveryAttempt = 0;
  messageGroup = '';
  body: Buffer = EMPTY;

  /** Back to the defaults, to decode the next message into (what it held stays with its readers). */
  reset(): this {
    this.topic = '';
    this.namespace = '';
    this.properties = null;
    this.tag = '';
    this.keys = null;
    this.messageId = '';
    this.digestType = 0;
    this.checksum = '';
    this.bodyEncoding = 0;
    this.messageType = 0;
    this.bornTimestamp = undefined;
    this.bornHost = '';
    this.storeTimestamp = undefined;
    this.storeHost = '';
    this.deliveryTimestamp = undefined;
    this.receiptHandle = '';
    this.queueId = 0;
    this.queueOffset = 0;
    this.deliveryAttempt = 0;
    this.messageGroup = '';
    this.body = EMPTY;
    return this;
  }
}

const EMPTY = Buffer.alloc(0);

function resource(end: number, m: DecodedMessage): void {
  const stop = enter(end);
  while (pos < stop) {
    const tag = varint(stop);
    if (tag === 10) m.namespace = recent(stop, recentNamespace);
    else if (tag === 18) m.topic = recent(stop, recentTopic);
    else skip(tag, stop);
  }
}

function property(end: number, m: DecodedMessage): void {
  const stop = enter(end);
  let key = '';
  let value = '';
  while (pos < stop) {
    const tag = varint(stop);
    if (tag === 10) key = string(stop);
    else if (tag === 18) value = string(stop);
    else skip(tag, stop);
  }
  (m.properties ??= {})[key] = value;
}

function digest(end: number, m: DecodedMessage): void {
  const stop = enter(end);
  while (pos < stop) {
    const tag = varint(stop);
    if (tag === 8) m.digestType = int32(stop);
    else if (tag === 18) m.checksum = string(stop);
    else skip(tag, stop);
  }
}

function systemProperties(end: number, m: DecodedMessage): void {
  const stop = enter(end);
  while (pos < stop) {
    const tag = varint(stop);
    switch (tag) {
      case (1 << 3) | 2:
        m.tag = string(stop);
        break;
      case (2 << 3) | 2:
        (m.keys ??= []).push(string(stop));
        break;
      case (3 << 3) | 2:
        m.messageId = string(stop);
        break;
      case (4 << 3) | 2:
        digest(stop, m);
        break;
      case 5 << 3:
        m.bodyEncoding = int32(stop);
        break;
      case 6 << 3:
        m.messageType = int32(stop);
        break;
      case (7 << 3) | 2:
        m.bornTimestamp = millis(stop, m.bornTimestamp);
        break;
      case (8 << 3) | 2:
        m.bornHost = recent(stop, recentBornHost);
        break;
      case (9 << 3) | 2:
        m.storeTimestamp = millis(stop, m.storeTimestamp);
        break;
      case (10 << 3) | 2:
        m.storeHost = recent(stop, recentStoreHost);
        break;
      case (11 << 3) | 2:
        m.deliveryTimestamp = millis(stop, m.deliveryTimestamp);
        break;
      case (12 << 3) | 2:
        m.receiptHandle = string(stop);
        break;
      case 13 << 3:
        m.queueId = int32(stop);
        break;
      case 14 << 3:
        m.queueOffset = varint(stop);
        break;
      case 16 << 3:
        m.deliveryAttempt = int32(stop);
        break;
      case (17 << 3) | 2:
        m.messageGroup = string(stop);
        break;
      default:
        skip(tag, stop);
    }
  }
}

function message(end: number, into: DecodedMessage | undefined): DecodedMessage {
  const m = into ? into.reset() : new DecodedMessage();
  const stop = enter(end);
  while (pos < stop) {
    const tag = varint(stop);
    switch (tag) {
      case (1 << 3) | 2:
        resource(stop, m);
        break;
      case (2 << 3) | 2:
        property(stop, m);
        break;
      case (3 << 3) | 2:
        systemProperties(stop, m);
        break;
      case (4 << 3) | 2: {
        const n = lengthOf(stop);
        m.body = n === 0 ? EMPTY : buf.subarray(pos, pos + n);
        pos += n;
        break;
      }
      default:
        skip(tag, stop);
    }
  }
  return m;
}

/** One frame of a ReceiveMessage or PullMessage answer (a oneof: at most one of these is set). */
export interface DeliveryFrame {
  status?: Status;
  message?: DecodedMessage;
  /** PullMessage only. */
  nextOffset?: number;
}

/**
 * Decode one answer frame: `pull` for PullMessageResponse (field 3 is `next_offset`), else
 * ReceiveMessageResponse (field 3 is the delivery timestamp, which the SDK does not use). With
 * `into`, a message is decoded into that object (reset first) instead of a new one: a caller that
 * copies each message out before decoding the next saves an object per message.
 */
export function decodeDeliveryFrame(bytes: Buffer, pull: boolean, into?: DecodedMessage): DeliveryFrame {
  buf = bytes;
  pos = 0;
  const end = bytes.length;
  const frame: DeliveryFrame = {};
  try {
    while (pos < end) {
      const tag = varint(end);
      // Protobuf merges a message field given twice; no encoder writes one twice: refused.
      if (tag === 10) {
        if (frame.status) throw new Malformed('a status given twice');
        frame.status = status(end);
      } else if (tag === 18) {
        if (frame.message) throw new Malformed('a message given twice');
        frame.message = message(end, into);
      } else if (tag === 24 && pull) {
        frame.nextOffset = varint(end);
      } else skip(tag, end);
    }
  } finally {
    buf = EMPTY;
  }
  return frame;
}

// ---- AckMessage -------------------------------------------------------------------------------------

export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** A string field: its tag (one byte), its length `n` (its UTF-8 bytes) and the bytes. */
export function writeString(out: Buffer, at: number, tag: number, s: string, n: number): number {
  out[at++] = tag;
  at = writeVarint(out, at, n);
  // As many bytes as characters: ASCII, which latin1 writes the same, faster.
  out.write(s, at, n, n === s.length ? 'latin1' : 'utf8');
  return at + n;
}

function resourceSize(r: Resource, lens: number[]): number {
  const ns = r.resource_namespace ? utf8Length(r.resource_namespace) : 0;
  const name = r.name ? utf8Length(r.name) : 0;
  lens.push(ns, name);
  return (ns ? 1 + vsize(ns) + ns : 0) + (name ? 1 + vsize(name) + name : 0);
}

function writeResource(
  out: Buffer,
  at: number,
  tag: number,
  r: Resource,
  size: number,
  ns: number,
  name: number,
) {
  out[at++] = tag;
  at = writeVarint(out, at, size);
  if (ns) at = writeString(out, at, 10, r.resource_namespace!, ns);
  if (name) at = writeString(out, at, 18, r.name!, name);
  return at;
}

export interface AckEntry {
  messageId: string;
  receiptHandle: string;
}

/** An AckMessageRequest, byte for byte as protobufjs encodes `{ group, topic, entries }`. */
export function encodeAckRequest(
  group: Resource,
  topic: Resource,
  entries: readonly AckEntry[],
  /** Start with the gRPC message prefix (`PrefixedMessage`). */
  prefixed = false,
): Buffer {
  const lens: number[] = [];
  const groupSize = resourceSize(group, lens);
  const topicSize = resourceSize(topic, lens);
  let size = 1 + vsize(groupSize) + groupSize + 1 + vsize(topicSize) + topicSize;
  const entryLens: number[] = new Array(entries.length * 3);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const id = e.messageId ? utf8Length(e.messageId) : 0;
    const handle = e.receiptHandle ? utf8Length(e.receiptHandle) : 0;
    const n = (id ? 1 + vsize(id) + id : 0) + (handle ? 1 + vsize(handle) + handle : 0);
    entryLens[i * 3] = n;
    entryLens[i * 3 + 1] = id;
    entryLens[i * 3 + 2] = handle;
    size += 1 + vsize(n) + n;
  }
  const start = prefixed ? 5 : 0;
  const out = prefixed ? prefixedBuffer(size) : Buffer.allocUnsafe(size);
  let at = writeResource(out, start, 10, group, groupSize, lens[0]!, lens[1]!);
  at = writeResource(out, at, 18, topic, topicSize, lens[2]!, lens[3]!);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    out[at++] = 26;
    at = writeVarint(out, at, entryLens[i * 3]!);
    const id = entryLens[i * 3 + 1]!;
    const handle = entryLens[i * 3 + 2]!;
    if (id) at = writeString(out, at, 10, e.messageId, id);
    if (handle) at = writeString(out, at, 18, e.receiptHandle, handle);
  }
  if (at !== start + size) throw new Error(`AckMessage: wrote ${at - start} of ${size} bytes`);
  return out;
}

/**
 * An AckMessageResponse, as far as the SDK reads it: the status, and each entry's status in order.
 * Read-only: entries with the same status as the one before them are that same object.
 */
export interface AckAnswer {
  status?: Status;
  entries: readonly { readonly status?: Status }[];
}

/** The last entry decoded, and its status's message bytes: most answers repeat one status (OK). */
let lastAckEntry: { readonly status?: Status } = Object.freeze({});
const lastAckMessage = new RecentString();

/** Decode an AckMessageResponse, skipping the ids and receipt handles it echoes. */
export function decodeAckResponse(bytes: Buffer): AckAnswer {
  buf = bytes;
  pos = 0;
  const end = bytes.length;
  const entries: { readonly status?: Status }[] = [];
  const answer: AckAnswer = { entries };
  try {
    while (pos < end) {
      const tag = varint(end);
      if (tag === 10) {
        answer.status = status(end);
      } else if (tag === 18) {
        const stop = enter(end);
        let code: number | undefined;
        let message = '';
        while (pos < stop) {
          const t = varint(stop);
          if (t === 26) {
            // The entry's status, read in place: one object per distinct status, not per entry.
            const sEnd = enter(stop);
            code = 0;
            message = '';
            while (pos < sEnd) {
              const st = varint(sEnd);
              if (st === 8) code = int32(sEnd);
              else if (st === 18) message = recent(sEnd, lastAckMessage);
              else skip(st, sEnd);
            }
          } else skip(t, stop);
        }
        const last = lastAckEntry.status;
        if (code === undefined ? last !== undefined : last?.code !== code || last.message !== message) {
          lastAckEntry = Object.freeze(
            code === undefined ? {} : { status: Object.freeze({ code, message }) },
          );
        }
        entries.push(lastAckEntry);
      } else skip(tag, end);
    }
  } finally {
    buf = EMPTY;
  }
  return answer;
}
