/**
 * The producer's SendMessage requests, written by hand: its messages addressed to one queue, measured,
 * then written into one buffer. The bytes are the ones protobufjs writes for
 * `{ messages: wires.map((w) => wireOnQueue(w, queueId)) }` (test/sdk/send-encoder.test.ts compares
 * them), without a copy of each message per attempt and without the generic writer's object per field:
 * at 5,000 single sends a second those were the largest share of what the SDK's process allocated,
 * and so of its garbage collections, which the end-to-end latency's tail follows (docs/benchmarks.md).
 *
 * It writes what `prepareMessage` sets (message.ts); protobufjs's rules for it: a proto3 field holding
 * its default ('' or 0) is left out unless it is `optional` (tag, message group, delivery timestamp:
 * written whenever set); a message field is written whenever set, even empty; every element of a
 * repeated field and every map entry are written. A timestamp it cannot write as protobufjs would (a
 * negative or fractional part, before 1970 or between milliseconds) makes it return undefined, and the
 * caller encodes that request with protobufjs.
 */
import type { PbTimestamp } from '../protocol/codec.js';
import { prefixedBuffer } from '../protocol/transport/grpc-wire.js';
import { vsize, writeVarint } from '../protocol/varint.js';
import type { Resource, WireMessage } from '../protocol/wire-types.js';
import { utf8Length, writeString } from './hot-codec.js';

// Tags (field number << 3 | wire type) of the fields written.
const REQUEST_MESSAGES = 0x0a; // SendMessageRequest.messages = 1
const TOPIC = 0x0a; // Message.topic = 1
const USER_PROPERTIES = 0x12; // Message.user_properties = 2 (map entries: key = 1, value = 2)
const SYSTEM_PROPERTIES = 0x1a; // Message.system_properties = 3
const BODY = 0x22; // Message.body = 4
const NAMESPACE = 0x0a; // Resource.resource_namespace = 1
const NAME = 0x12; // Resource.name = 2
const TAG = 0x0a; // SystemProperties: tag = 1
const KEYS = 0x12; // keys = 2
const MESSAGE_ID = 0x1a; // message_id = 3
const BODY_ENCODING = 0x28; // body_encoding = 5
const MESSAGE_TYPE = 0x30; // message_type = 6
const BORN_TIMESTAMP = 0x3a; // born_timestamp = 7
const BORN_HOST = 0x42; // born_host = 8
const DELIVERY_TIMESTAMP = 0x5a; // delivery_timestamp = 11
const QUEUE_ID = 0x68; // queue_id = 13
const MESSAGE_GROUP = [0x8a, 0x01] as const; // message_group = 17: a two-byte tag
const SECONDS = 0x08; // Timestamp.seconds = 1
const NANOS = 0x10; // Timestamp.nanos = 2

/**
 * What the measuring pass found, in the order the writing pass needs it: each nested message's size
 * before its fields, each string's UTF-8 length. Reused from call to call (the event loop runs one
 * encode at a time), so a request allocates only its buffer.
 */
let lens: number[] = [];
let count = 0;

const put = (v: number): number => {
  lens[count] = v;
  return count++;
};

/** A string field's bytes after its tag: its length's varint and its UTF-8 (and the length kept). */
function measureString(s: string): number {
  const n = s.length === 0 ? 0 : utf8Length(s);
  put(n);
  return vsize(n) + n;
}

/** Whether every string field is a string (JavaScript callers may pass anything; protobufjs then decides). */
function stringsOnly(w: WireMessage): boolean {
  const sp = w.system_properties;
  if (sp) {
    if (sp.tag != null && typeof sp.tag !== 'string') return false;
    if (sp.message_group != null && typeof sp.message_group !== 'string') return false;
    if (sp.keys) for (const k of sp.keys) if (typeof k !== 'string') return false;
  }
  const props = w.user_properties;
  if (props) for (const k in props) if (typeof props[k] !== 'string') return false;
  return true;
}

/** A nested message's bytes after its tag, given its content's size. */
const nested = (size: number): number => vsize(size) + size;

/** Timestamp content size, or -1 when it is not two non-negative integers. */
function timestampSize(t: PbTimestamp): number {
  const s = t.seconds ?? 0;
  const ns = t.nanos ?? 0;
  if (!Number.isSafeInteger(s) || s < 0 || !Number.isInteger(ns) || ns < 0 || ns > 0x7fffffff) return -1;
  return (s !== 0 ? 1 + vsize(s) : 0) + (ns !== 0 ? 1 + vsize(ns) : 0);
}

function measureResource(r: Resource): number {
  const slot = put(0);
  let size = 0;
  if (r.resource_namespace) size += 1 + measureString(r.resource_namespace);
  if (r.name) size += 1 + measureString(r.name);
  lens[slot] = size;
  return nested(size);
}

/** The message's content size, its lengths recorded; -1 when protobufjs must encode it. */
function measureMessage(w: WireMessage, queueId: number): number {
  if (!stringsOnly(w)) return -1;
  const slot = put(0);
  let size = 0;
  if (w.topic) size += 1 + measureResource(w.topic);
  const props = w.user_properties; // prepareMessage's copy: own properties only, as Object.keys sees
  if (props) {
    for (const k in props) {
      const entry = put(0);
      const entrySize = 1 + measureString(k) + 1 + measureString(props[k]!);
      lens[entry] = entrySize;
      size += 1 + nested(entrySize);
    }
  }
  const sp = w.system_properties;
  if (sp) {
    const spSlot = put(0);
    let spSize = 0;
    if (sp.tag != null) spSize += 1 + measureString(sp.tag);
    if (sp.keys) for (const k of sp.keys) spSize += 1 + measureString(k);
    if (sp.message_id) spSize += 1 + measureString(sp.message_id);
    if (sp.body_encoding) spSize += 1 + vsize(sp.body_encoding);
    if (sp.message_type) spSize += 1 + vsize(sp.message_type);
    if (sp.born_timestamp) {
      const t = timestampSize(sp.born_timestamp);
      if (t < 0) return -1;
      put(t);
      spSize += 1 + nested(t);
    }
    if (sp.born_host) spSize += 1 + measureString(sp.born_host);
    if (sp.delivery_timestamp != null) {
      const t = timestampSize(sp.delivery_timestamp);
      if (t < 0) return -1;
      put(t);
      spSize += 1 + nested(t);
    }
    if (queueId !== 0) spSize += 1 + vsize(queueId);
    if (sp.message_group != null) spSize += 2 + measureString(sp.message_group);
    lens[spSlot] = spSize;
    size += 1 + nested(spSize);
  }
  if (w.body && w.body.length > 0) size += 1 + nested(w.body.length);
  lens[slot] = size;
  return size;
}

/** The next recorded length. */
let at = 0;
const next = (): number => lens[at++]!;

function writeStr(out: Buffer, p: number, tag: number, s: string): number {
  return writeString(out, p, tag, s, next());
}

/** A one-byte tag and a varint: a scalar field, or a nested message's (or the body's) length. */
function tagged(out: Buffer, p: number, tag: number, v: number): number {
  out[p++] = tag;
  return writeVarint(out, p, v);
}

function writeTimestamp(out: Buffer, p: number, tag: number, t: PbTimestamp): number {
  p = tagged(out, p, tag, next());
  if (t.seconds) p = tagged(out, p, SECONDS, t.seconds);
  if (t.nanos) p = tagged(out, p, NANOS, t.nanos);
  return p;
}

function writeMessage(out: Buffer, p: number, w: WireMessage, queueId: number): number {
  p = tagged(out, p, REQUEST_MESSAGES, next());
  if (w.topic) {
    const r = w.topic;
    p = tagged(out, p, TOPIC, next());
    if (r.resource_namespace) p = writeStr(out, p, NAMESPACE, r.resource_namespace);
    if (r.name) p = writeStr(out, p, NAME, r.name);
  }
  const props = w.user_properties;
  if (props) {
    for (const k in props) {
      p = tagged(out, p, USER_PROPERTIES, next());
      p = writeStr(out, p, 0x0a, k);
      p = writeStr(out, p, 0x12, props[k]!);
    }
  }
  const sp = w.system_properties;
  if (sp) {
    p = tagged(out, p, SYSTEM_PROPERTIES, next());
    if (sp.tag != null) p = writeStr(out, p, TAG, sp.tag);
    if (sp.keys) for (const k of sp.keys) p = writeStr(out, p, KEYS, k);
    if (sp.message_id) p = writeStr(out, p, MESSAGE_ID, sp.message_id);
    if (sp.body_encoding) p = tagged(out, p, BODY_ENCODING, sp.body_encoding);
    if (sp.message_type) p = tagged(out, p, MESSAGE_TYPE, sp.message_type);
    if (sp.born_timestamp) p = writeTimestamp(out, p, BORN_TIMESTAMP, sp.born_timestamp);
    if (sp.born_host) p = writeStr(out, p, BORN_HOST, sp.born_host);
    if (sp.delivery_timestamp != null) p = writeTimestamp(out, p, DELIVERY_TIMESTAMP, sp.delivery_timestamp);
    if (queueId !== 0) p = tagged(out, p, QUEUE_ID, queueId);
    if (sp.message_group != null) {
      out[p++] = MESSAGE_GROUP[0];
      p = writeStr(out, p, MESSAGE_GROUP[1], sp.message_group);
    }
  }
  const body = w.body;
  if (body && body.length > 0) {
    p = tagged(out, p, BODY, body.length);
    p += body.copy(out, p);
  }
  return p;
}

/**
 * A SendMessageRequest carrying `wires` (as `prepareMessage` made them) addressed to queue `queueId`;
 * undefined when one of them needs protobufjs (see the module's comment). With `prefixed`, the bytes
 * start with the gRPC message prefix (`PrefixedMessage`).
 */
export function encodeSendRequest(
  wires: readonly WireMessage[],
  queueId: number,
  prefixed = false,
): Buffer | undefined {
  if (queueId < 0 || !Number.isInteger(queueId) || queueId > 0x7fffffff) return undefined;
  count = 0;
  let size = 0;
  for (const w of wires) {
    const m = measureMessage(w, queueId);
    if (m < 0) return undefined;
    size += 1 + nested(m);
  }
  const start = prefixed ? 5 : 0;
  const out = prefixed ? prefixedBuffer(size) : Buffer.allocUnsafe(size);
  at = 0;
  let p = start;
  for (const w of wires) p = writeMessage(out, p, w, queueId);
  if (p !== start + size || at !== count) throw new Error(`SendMessage: wrote ${p - start} of ${size} bytes`);
  if (lens.length > 65_536 && count < 4096) lens = []; // a huge batch has passed
  return out;
}
