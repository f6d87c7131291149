/**
 * SendMessage requests decoded by hand on the broker: the object `decodeRequest` (protobufjs, then
 * `toObject`) gives for the same bytes — fields present on the wire and only those, int64 values as
 * numbers, bytes as a view into the request — or undefined for anything this does not cover, which
 * protobufjs then decides: an unknown field or wire type, a message field given twice (protobufjs
 * merges those), a string that is not UTF-8 (protobufjs refuses the request), an integer past what a
 * number holds exactly, a map key `__proto__`, bytes that do not parse, a field without explicit
 * presence written with its default value ('' or 0: encoders leave it out, and protobufjs drops it).
 * Every produced batch is decoded here; protobufjs's decoder and `toObject` took ~11 % of the
 * broker's CPU in W1a (docs/benchmarks.md, fourteenth session). test/unit/send-request-codec.test.ts
 * checks it against protobufjs, test/unit/hand-decoders-fuzz.test.ts on damaged requests.
 */
import type { Resource, SystemProperties, WireMessage } from './wire-types.js';
import { RecentString, utf8 } from '../common/utf8-strings.js';

class Unsupported extends Error {}
const UNSUPPORTED = new Unsupported();

const EMPTY = Buffer.alloc(0);
let buf: Buffer = EMPTY;
let pos = 0;

/** A varint of at most 2^53 - 1 (anything longer is left to protobufjs). */
function varint(end: number): number {
  let v = 0;
  let scale = 1;
  for (let i = 0; i < 8; i++) {
    if (pos >= end) throw UNSUPPORTED;
    const b = buf[pos++]!;
    v += (b & 127) * scale;
    if (b < 128) {
      if (v > Number.MAX_SAFE_INTEGER) throw UNSUPPORTED;
      return v;
    }
    scale *= 128;
  }
  throw UNSUPPORTED;
}

/** An int32 or enum: non-negative and below 2^31 here (negative ones are ten-byte varints). */
function int32(end: number): number {
  const v = varint(end);
  if (v > 0x7fffffff) throw UNSUPPORTED;
  return v;
}

/** The end of a length-delimited field's value starting at `pos`. */
function delimited(end: number): number {
  const n = varint(end);
  if (n > end - pos) throw UNSUPPORTED;
  return pos + n;
}

/** A string field; `repeats`: the field usually repeats from message to message (a topic, a host). */
function string(end: number, repeats?: RecentString): string {
  const stop = delimited(end);
  const start = pos;
  pos = stop;
  const s = repeats ? repeats.of(buf, start, stop) : utf8(buf, start, stop);
  // Not UTF-8 (protobufjs refuses the request), or a U+FFFD protobufjs should judge.
  if (s.indexOf('\uFFFD') >= 0) throw UNSUPPORTED;
  return s;
}

/**
 * A field without explicit presence (proto3's usual kind) given with its default value (here ''):
 * encoders do not write one, and protobufjs leaves it out of the object when one is written, where
 * this would keep it. Such a request is left to protobufjs.
 */
function given(s: string): string {
  if (s === '') throw UNSUPPORTED;
  return s;
}

/** The same for a number (two functions: each sees one type, so V8 keeps both small). */
function givenNumber(n: number): number {
  if (n === 0) throw UNSUPPORTED;
  return n;
}

const recentNamespace = new RecentString();
const recentTopic = new RecentString();
const recentTag = new RecentString();
const recentHost = new RecentString();

/** Wire types. */
const VARINT = 0;
const LEN = 2;

function expect(tag: number, wireType: number): void {
  if ((tag & 7) !== wireType) throw UNSUPPORTED;
}

function resource(end: number): Resource {
  const stop = delimited(end);
  const r: Resource = {};
  while (pos < stop) {
    const tag = varint(stop);
    expect(tag, LEN);
    if (tag >>> 3 === 1) r.resource_namespace = given(string(stop, recentNamespace));
    else if (tag >>> 3 === 2) r.name = given(string(stop, recentTopic));
    else throw UNSUPPORTED;
  }
  return r;
}

/** A Timestamp or Duration: seconds (int64) and nanos (int32). */
function time(end: number): { seconds?: number; nanos?: number } {
  const stop = delimited(end);
  const t: { seconds?: number; nanos?: number } = {};
  while (pos < stop) {
    const tag = varint(stop);
    expect(tag, VARINT);
    if (tag >>> 3 === 1) t.seconds = givenNumber(varint(stop));
    else if (tag >>> 3 === 2) t.nanos = givenNumber(int32(stop));
    else throw UNSUPPORTED;
  }
  return t;
}

function digest(end: number): { type?: number; checksum?: string } {
  const stop = delimited(end);
  const d: { type?: number; checksum?: string } = {};
  while (pos < stop) {
    const tag = varint(stop);
    if (tag === ((1 << 3) | VARINT)) d.type = givenNumber(int32(stop));
    else if (tag === ((2 << 3) | LEN)) d.checksum = given(string(stop));
    else throw UNSUPPORTED;
  }
  return d;
}

function mapEntry(end: number, into: Record<string, string>): void {
  const stop = delimited(end);
  let key = '';
  let value = '';
  while (pos < stop) {
    const tag = varint(stop);
    expect(tag, LEN);
    if (tag >>> 3 === 1) key = string(stop);
    else if (tag >>> 3 === 2) value = string(stop);
    else throw UNSUPPORTED;
  }
  if (key === '__proto__') throw UNSUPPORTED;
  into[key] = value;
}

/** A message field may come once here; given twice, protobufjs merges the two. */
function first(current: unknown): void {
  if (current !== undefined) throw UNSUPPORTED;
}

function systemProperties(end: number): SystemProperties {
  const stop = delimited(end);
  const sp: SystemProperties = {};
  while (pos < stop) {
    const tag = varint(stop);
    const field = tag >>> 3;
    switch (field) {
      case 1:
        expect(tag, LEN);
        sp.tag = string(stop, recentTag);
        break;
      case 2:
        expect(tag, LEN);
        (sp.keys ??= []).push(string(stop));
        break;
      case 3:
        expect(tag, LEN);
        sp.message_id = given(string(stop));
        break;
      case 4:
        expect(tag, LEN);
        // Typed with both fields; present here only as given, as protobufjs gives it.
        first(sp.body_digest);
        sp.body_digest = digest(stop) as NonNullable<SystemProperties['body_digest']>;
        break;
      case 5:
        expect(tag, VARINT);
        sp.body_encoding = givenNumber(int32(stop));
        break;
      case 6:
        expect(tag, VARINT);
        sp.message_type = givenNumber(int32(stop));
        break;
      case 7:
        expect(tag, LEN);
        first(sp.born_timestamp);
        sp.born_timestamp = time(stop);
        break;
      case 8:
        expect(tag, LEN);
        sp.born_host = given(string(stop, recentHost));
        break;
      case 9:
        expect(tag, LEN);
        first(sp.store_timestamp);
        sp.store_timestamp = time(stop);
        break;
      case 10:
        expect(tag, LEN);
        sp.store_host = given(string(stop));
        break;
      case 11:
        expect(tag, LEN);
        first(sp.delivery_timestamp);
        sp.delivery_timestamp = time(stop);
        break;
      case 12:
        expect(tag, LEN);
        sp.receipt_handle = string(stop);
        break;
      case 13:
        expect(tag, VARINT);
        sp.queue_id = givenNumber(int32(stop));
        break;
      case 14:
        expect(tag, VARINT);
        sp.queue_offset = varint(stop);
        break;
      case 15:
        expect(tag, LEN);
        first(sp.invisible_duration);
        sp.invisible_duration = time(stop);
        break;
      case 16:
        expect(tag, VARINT);
        sp.delivery_attempt = int32(stop);
        break;
      case 17:
        expect(tag, LEN);
        sp.message_group = string(stop);
        break;
      case 18:
        expect(tag, LEN);
        sp.trace_context = string(stop);
        break;
      case 19:
        expect(tag, LEN);
        first(sp.orphaned_transaction_recovery_duration);
        sp.orphaned_transaction_recovery_duration = time(stop);
        break;
      default:
        throw UNSUPPORTED;
    }
  }
  return sp;
}

function message(end: number): WireMessage {
  const stop = delimited(end);
  const m: WireMessage = {};
  while (pos < stop) {
    const tag = varint(stop);
    expect(tag, LEN);
    switch (tag >>> 3) {
      case 1:
        first(m.topic);
        m.topic = resource(stop);
        break;
      case 2:
        mapEntry(stop, (m.user_properties ??= {}));
        break;
      case 3:
        first(m.system_properties);
        m.system_properties = systemProperties(stop);
        break;
      case 4: {
        const bodyEnd = delimited(stop);
        if (bodyEnd === pos) throw UNSUPPORTED; // an empty body given (see `given`)
        m.body = buf.subarray(pos, bodyEnd);
        pos = bodyEnd;
        break;
      }
      default:
        throw UNSUPPORTED;
    }
  }
  return m;
}

/** A SendMessageRequest as `decodeRequest` gives it, or undefined: decode it with protobufjs. */
export function decodeSendRequest(bytes: Buffer): { messages?: WireMessage[] } | undefined {
  buf = bytes;
  pos = 0;
  const end = bytes.length;
  const messages: WireMessage[] = [];
  try {
    while (pos < end) {
      const tag = varint(end);
      if (tag !== ((1 << 3) | LEN)) return undefined;
      messages.push(message(end));
    }
  } catch (err) {
    if (err === UNSUPPORTED) return undefined;
    throw err;
  } finally {
    buf = EMPTY;
  }
  return messages.length > 0 ? { messages } : {};
}
