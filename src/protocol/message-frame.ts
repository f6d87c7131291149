/**
 * The hot frame of ReceiveMessage and PullMessage answers — `{ message }`, field 2 of both responses'
 * `content` oneof — encoded by hand into one buffer: its size is computed first, then every field is
 * written in place. protobufjs's generic writer builds a linked list of operations and allocates per
 * field, which cost more than everything else per delivered message on the broker (3–15 µs for a
 * 1 KiB message, against ~1 µs here). The bytes are the same as protobufjs writes for the same object
 * (fields in number order; an implicit-presence field only when it is not its default, an `optional`
 * one when it is not null/undefined; test/unit/message-frame.test.ts checks it).
 * Objects this encoder does not cover (fields toWireMessage never sets, negative or non-integer
 * numbers) give `undefined`, and the caller encodes them with protobufjs.
 */
import type { BrokerMessage } from '../broker/message.js';
import type { PbTimestamp } from './codec.js';
import { toWireMessage, type DeliveryInfo } from './convert.js';
import { planStored, writeStored, type StoredPlan } from './stored-frame.js';
import type { Duration, Resource, SystemProperties, WireMessage } from './wire-types.js';
import { vsize, writeVarint } from './varint.js';

/** Lengths in pre-order (each nested message's length before its fields' string lengths). */
const lens: number[] = [];
let li = 0;

/** A number the fast path writes as protobufjs would: a non-negative safe integer. */
function ok(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

class Unsupported extends Error {}
const UNSUPPORTED = new Unsupported();

function num(v: unknown): number {
  if (!ok(v)) throw UNSUPPORTED;
  return v;
}

// ---- sizes (record string and nested lengths in pre-order) ----

/** Strings up to this many UTF-16 units are measured and written in JavaScript (a native call costs more). */
const SHORT = 64;

function utf8Length(s: string): number {
  if (s.length > SHORT) return Buffer.byteLength(s, 'utf8');
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3; // a lone surrogate becomes U+FFFD (3 bytes), as Buffer writes it
  }
  return n;
}

function utf8Write(buf: Buffer, at: number, s: string, n: number): void {
  if (s.length > SHORT) {
    buf.write(s, at, n, 'utf8');
    return;
  }
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      buf[at++] = c;
    } else if (c < 0x800) {
      buf[at++] = 0xc0 | (c >> 6);
      buf[at++] = 0x80 | (c & 63);
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      c = 0x10000 + ((c & 0x3ff) << 10) + (s.charCodeAt(++i) & 0x3ff);
      buf[at++] = 0xf0 | (c >> 18);
      buf[at++] = 0x80 | ((c >> 12) & 63);
      buf[at++] = 0x80 | ((c >> 6) & 63);
      buf[at++] = 0x80 | (c & 63);
    } else {
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd; // a lone surrogate
      buf[at++] = 0xe0 | (c >> 12);
      buf[at++] = 0x80 | ((c >> 6) & 63);
      buf[at++] = 0x80 | (c & 63);
    }
  }
}

function sStr(tagSize: number, s: string): number {
  const n = utf8Length(s);
  lens.push(n);
  return tagSize + vsize(n) + n;
}

function sTime(tagSize: number, t: PbTimestamp | Duration): number {
  const slot = lens.length;
  lens.push(0);
  let n = 0;
  if (t.seconds) n += 1 + vsize(num(t.seconds));
  if (t.nanos) n += 1 + vsize(num(t.nanos));
  lens[slot] = n;
  return tagSize + vsize(n) + n;
}

function sResource(r: Resource): number {
  const slot = lens.length;
  lens.push(0);
  let n = 0;
  if (r.resource_namespace) n += sStr(1, r.resource_namespace);
  if (r.name) n += sStr(1, r.name);
  lens[slot] = n;
  return 1 + vsize(n) + n;
}

function sSystem(sp: SystemProperties): number {
  if (
    sp.orphaned_transaction_recovery_duration != null ||
    sp.dead_letter_queue != null ||
    sp.lite_topic != null ||
    sp.priority != null
  ) {
    throw UNSUPPORTED;
  }
  const slot = lens.length;
  lens.push(0);
  let n = 0;
  if (sp.tag != null) n += sStr(1, sp.tag);
  if (sp.keys != null) for (const k of sp.keys) n += sStr(1, k);
  if (sp.message_id) n += sStr(1, sp.message_id);
  if (sp.body_digest != null) {
    const d = sp.body_digest;
    const dslot = lens.length;
    lens.push(0);
    let dn = 0;
    if (d.type) dn += 1 + vsize(num(d.type));
    if (d.checksum) dn += sStr(1, d.checksum);
    lens[dslot] = dn;
    n += 1 + vsize(dn) + dn;
  }
  if (sp.body_encoding) n += 1 + vsize(num(sp.body_encoding));
  if (sp.message_type) n += 1 + vsize(num(sp.message_type));
  if (sp.born_timestamp != null) n += sTime(1, sp.born_timestamp);
  if (sp.born_host) n += sStr(1, sp.born_host);
  if (sp.store_timestamp != null) n += sTime(1, sp.store_timestamp);
  if (sp.store_host) n += sStr(1, sp.store_host);
  if (sp.delivery_timestamp != null) n += sTime(1, sp.delivery_timestamp);
  if (sp.receipt_handle != null) n += sStr(1, sp.receipt_handle);
  if (sp.queue_id) n += 1 + vsize(num(sp.queue_id));
  if (sp.queue_offset != null) n += 1 + vsize(num(sp.queue_offset));
  if (sp.invisible_duration != null) n += sTime(1, sp.invisible_duration);
  if (sp.delivery_attempt != null) n += 2 + vsize(num(sp.delivery_attempt));
  if (sp.message_group != null) n += sStr(2, sp.message_group);
  if (sp.trace_context != null) n += sStr(2, sp.trace_context);
  lens[slot] = n;
  return 1 + vsize(n) + n;
}

function sMessage(m: WireMessage): number {
  const slot = lens.length;
  lens.push(0);
  let n = 0;
  if (m.topic != null) n += sResource(m.topic);
  if (m.user_properties != null) {
    const props = m.user_properties;
    for (const k of Object.keys(props)) {
      const eslot = lens.length;
      lens.push(0);
      const en = sStr(1, k) + sStr(1, props[k]!);
      lens[eslot] = en;
      n += 1 + vsize(en) + en;
    }
  }
  if (m.system_properties != null) n += sSystem(m.system_properties);
  if (m.body?.length) n += 1 + vsize(m.body.length) + m.body.length;
  lens[slot] = n;
  return 1 + vsize(n) + n;
}

// ---- writes (consume the recorded lengths in the same order) ----

function wStr(buf: Buffer, at: number, tag: number, s: string): number {
  at = writeVarint(buf, at, tag);
  const n = lens[li++]!;
  at = writeVarint(buf, at, n);
  if (n > 0) utf8Write(buf, at, s, n);
  return at + n;
}

function wLen(buf: Buffer, at: number, tag: number): number {
  at = writeVarint(buf, at, tag);
  return writeVarint(buf, at, lens[li++]!);
}

function wTime(buf: Buffer, at: number, tag: number, t: PbTimestamp | Duration): number {
  at = wLen(buf, at, tag);
  if (t.seconds) at = wVarintField(buf, at, 1 << 3, t.seconds);
  if (t.nanos) at = wVarintField(buf, at, 2 << 3, t.nanos);
  return at;
}

function wVarintField(buf: Buffer, at: number, tag: number, v: number): number {
  return writeVarint(buf, writeVarint(buf, at, tag), v);
}

function wSystem(buf: Buffer, at: number, sp: SystemProperties): number {
  at = wLen(buf, at, (3 << 3) | 2);
  if (sp.tag != null) at = wStr(buf, at, (1 << 3) | 2, sp.tag);
  if (sp.keys != null) for (const k of sp.keys) at = wStr(buf, at, (2 << 3) | 2, k);
  if (sp.message_id) at = wStr(buf, at, (3 << 3) | 2, sp.message_id);
  if (sp.body_digest != null) {
    const d = sp.body_digest;
    at = wLen(buf, at, (4 << 3) | 2);
    if (d.type) at = wVarintField(buf, at, 1 << 3, d.type);
    if (d.checksum) at = wStr(buf, at, (2 << 3) | 2, d.checksum);
  }
  if (sp.body_encoding) at = wVarintField(buf, at, 5 << 3, sp.body_encoding);
  if (sp.message_type) at = wVarintField(buf, at, 6 << 3, sp.message_type);
  if (sp.born_timestamp != null) at = wTime(buf, at, (7 << 3) | 2, sp.born_timestamp);
  if (sp.born_host) at = wStr(buf, at, (8 << 3) | 2, sp.born_host);
  if (sp.store_timestamp != null) at = wTime(buf, at, (9 << 3) | 2, sp.store_timestamp);
  if (sp.store_host) at = wStr(buf, at, (10 << 3) | 2, sp.store_host);
  if (sp.delivery_timestamp != null) at = wTime(buf, at, (11 << 3) | 2, sp.delivery_timestamp);
  if (sp.receipt_handle != null) at = wStr(buf, at, (12 << 3) | 2, sp.receipt_handle);
  if (sp.queue_id) at = wVarintField(buf, at, 13 << 3, sp.queue_id);
  if (sp.queue_offset != null) at = wVarintField(buf, at, 14 << 3, sp.queue_offset);
  if (sp.invisible_duration != null) at = wTime(buf, at, (15 << 3) | 2, sp.invisible_duration);
  if (sp.delivery_attempt != null) at = wVarintField(buf, at, 16 << 3, sp.delivery_attempt);
  if (sp.message_group != null) at = wStr(buf, at, (17 << 3) | 2, sp.message_group);
  if (sp.trace_context != null) at = wStr(buf, at, (18 << 3) | 2, sp.trace_context);
  return at;
}

function wMessage(buf: Buffer, at: number, m: WireMessage): number {
  at = wLen(buf, at, (2 << 3) | 2); // the response's `message`
  if (m.topic != null) {
    at = wLen(buf, at, (1 << 3) | 2);
    if (m.topic.resource_namespace) at = wStr(buf, at, (1 << 3) | 2, m.topic.resource_namespace);
    if (m.topic.name) at = wStr(buf, at, (2 << 3) | 2, m.topic.name);
  }
  if (m.user_properties != null) {
    const props = m.user_properties;
    for (const k of Object.keys(props)) {
      at = wLen(buf, at, (2 << 3) | 2);
      at = wStr(buf, at, (1 << 3) | 2, k);
      at = wStr(buf, at, (2 << 3) | 2, props[k]!);
    }
  }
  if (m.system_properties != null) at = wSystem(buf, at, m.system_properties);
  if (m.body?.length) {
    at = writeVarint(buf, at, (4 << 3) | 2);
    at = writeVarint(buf, at, m.body.length);
    buf.set(m.body, at);
    at += m.body.length;
  }
  return at;
}

/** Sizes one frame's message into `lens`; undefined (and `lens` as it was) when not covered. */
function trySize(m: WireMessage): number | undefined {
  const mark = lens.length;
  try {
    return sMessage(m);
  } catch (err) {
    if (err !== UNSUPPORTED) throw err;
    lens.length = mark;
    return undefined;
  }
}

/**
 * `{ message: m }` as a ReceiveMessageResponse / PullMessageResponse, or undefined when `m` has
 * something this encoder does not cover (encode it with protobufjs then).
 */
export function encodeMessageResponse(m: WireMessage): Buffer | undefined {
  lens.length = 0;
  li = 0;
  const size = trySize(m);
  if (size === undefined) return undefined;
  const buf = Buffer.allocUnsafe(size);
  const end = wMessage(buf, 0, m);
  if (end !== size) throw new Error(`message frame: wrote ${end} of ${size} bytes`);
  return buf;
}

/** A delivered message as a frame of an answer, written from its stored record where it can be. */
export interface DeliveredFrame {
  delivered: { message: BrokerMessage; info: DeliveryInfo };
}

/**
 * A whole streamed answer, gRPC-framed (a 5-byte prefix per message), in one buffer. Delivered
 * messages (`{ delivered }`) are written from their stored records (stored-frame.ts), or else as wire
 * messages; frames with a wire `message` are written in place; the others (status, trailing offset or
 * timestamp, and anything the hand-written encoders do not cover) are encoded with `encodeOther`.
 * One allocation per answer instead of one per message plus a copy into the frame.
 */
export function frameResponses(
  frames: readonly unknown[],
  encodeOther: (frame: unknown) => Uint8Array,
): Buffer {
  lens.length = 0;
  li = 0;
  const n = frames.length;
  const sizes: number[] = new Array(n);
  const plans: (StoredPlan | undefined)[] = new Array(n);
  const wires: (WireMessage | undefined)[] = new Array(n);
  const others: (Uint8Array | undefined)[] = new Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const frame = frames[i] as { message?: WireMessage; delivered?: DeliveredFrame['delivered'] };
    let message = frame.message;
    const delivered = frame.delivered;
    if (delivered !== undefined) {
      const plan = planStored(delivered.message, delivered.info);
      if (plan !== undefined) {
        plans[i] = plan;
        sizes[i] = 1 + vsize(plan.size) + plan.size;
        total += 5 + sizes[i]!;
        continue;
      }
      message = toWireMessage(delivered.message, delivered.info);
    }
    const size = message ? trySize(message) : undefined;
    if (size === undefined) {
      const bytes = encodeOther(delivered !== undefined ? { message } : frame);
      others[i] = bytes;
      sizes[i] = bytes.length;
    } else {
      wires[i] = message;
      sizes[i] = size;
    }
    total += 5 + sizes[i]!;
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < n; i++) {
    out[at] = 0;
    out.writeUInt32BE(sizes[i]!, at + 1);
    at += 5;
    const plan = plans[i];
    const wire = wires[i];
    let end: number;
    if (plan !== undefined) end = writeStored(out, at, plan);
    else if (wire !== undefined) end = wMessage(out, at, wire);
    else {
      out.set(others[i]!, at);
      end = at + others[i]!.length;
    }
    if (end !== at + sizes[i]!) throw new Error(`message frame: wrote ${end - at} of ${sizes[i]} bytes`);
    at = end;
  }
  return out;
}
