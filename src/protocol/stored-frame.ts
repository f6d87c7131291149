/**
 * A delivered message's wire `Message` written straight from its stored record: the strings the
 * record holds as UTF-8 (message id, tag, keys, message group, born host, user properties) are copied
 * as bytes, not decoded into strings and encoded again, and no wire object is built. The bytes are the
 * ones `toWireMessage` + `frameResponses` write for the same delivery (test/unit/stored-frame.test.ts).
 *
 * `planStored` measures a delivery (undefined when it cannot be written this way: the message carries
 * no record, or a field this writer does not cover, and the caller goes the object way); `writeStored`
 * writes it where the plan's size was reserved.
 */
import { crc32 } from 'node:zlib';
import { copyBytes } from '../common/copy-bytes.js';
import { MessageRecordSpans, type BrokerMessage } from '../broker/message.js';
import { BODY_MD5_PROPERTY, SysFlag, TRACE_CONTEXT_PROPERTY } from '../broker/produce.js';
import { md5Checksum } from './body-digest.js';
import type { DeliveryInfo } from './convert.js';
import { fromInternal } from './namespace.js';
import { vsize, writeVarint } from './varint.js';
import { nested, stringField } from './answer-writer.js';
import { WireDigestType, WireEncoding } from './wire-types.js';

/** A delivery measured for writing. */
export interface StoredPlan {
  m: BrokerMessage;
  info: DeliveryInfo;
  /** Bytes of the `message` field's value (the wire Message). */
  size: number;
  /** Bytes of its `system_properties` value. */
  sys: number;
  topic: Buffer;
  /** The body's CRC-32 when the digest is a CRC (written as 8 hex digits: no string made); -1 otherwise. */
  crc: number;
  /** The body digest's checksum (ASCII) when it is not a CRC. */
  digest: string;
  /** Where the trace context lies in the record (-1: none), and its length. */
  traceAt: number;
  traceLength: number;
}

const spans = new MessageRecordSpans();

/** `__VELA_` and `TRACE_CONTEXT` as bytes: properties the broker keeps for itself. */
const INTERNAL_PREFIX = Buffer.from('__VELA_');
const TRACE_KEY = Buffer.from(TRACE_CONTEXT_PROPERTY);

/** The Resource `{ resource_namespace, name }` of the last topic, encoded: topics repeat. */
let lastTopic = '';
let lastTopicBytes = Buffer.alloc(0);
let lastHost = '';
let lastHostBytes = Buffer.alloc(0);

function topicBytes(internal: string): Buffer {
  if (internal === lastTopic && lastTopicBytes.length > 0) return lastTopicBytes;
  const { namespace, name } = fromInternal(internal);
  const ns = Buffer.from(namespace);
  const nm = Buffer.from(name);
  const out = Buffer.allocUnsafe(stringField(ns.length) + stringField(nm.length));
  let at = 0;
  if (ns.length) at = copyField(out, at, (1 << 3) | 2, ns, 0, ns.length);
  if (nm.length) copyField(out, at, (2 << 3) | 2, nm, 0, nm.length);
  lastTopic = internal;
  lastTopicBytes = out;
  return out;
}

function hostBytes(host: string): Buffer {
  if (host !== lastHost) {
    lastHost = host;
    lastHostBytes = Buffer.from(host);
  }
  return lastHostBytes;
}

/** Length of a Timestamp / Duration value of `ms` milliseconds (non-negative). */
function timeSize(ms: number): number {
  const s = Math.floor(ms / 1000);
  const nanos = (ms - s * 1000) * 1e6;
  return (s ? 1 + vsize(s) : 0) + (nanos ? 1 + vsize(nanos) : 0);
}

const okMs = (v: number) => Number.isSafeInteger(v) && v >= 0;

/** Length of an ASCII string, or -1 if it has anything else (it goes the object way then). */
function asciiLength(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return -1;
  return s.length;
}

function bytesEqual(buf: Buffer, at: number, length: number, what: Buffer, prefix: boolean): boolean {
  if (prefix ? length < what.length : length !== what.length) return false;
  for (let i = 0; i < what.length; i++) if (buf[at + i] !== what[i]) return false;
  return true;
}

/** Upper-case hex digits as bytes. */
const HEX = Buffer.from('0123456789ABCDEF');

/** A CRC as the digest's checksum, at `out[at]`: uppercase hex, 8 digits (as `crc32Checksum` gives it). */
function writeCrcHex(out: Buffer, at: number, v: number): number {
  for (let shift = 28; shift >= 0; shift -= 4) out[at++] = HEX[(v >>> shift) & 15]!;
  return at;
}

/** Measure a delivery, or undefined when it has to go the object way. */
export function planStored(m: BrokerMessage, info: DeliveryInfo): StoredPlan | undefined {
  if (!spans.readMessage(m)) return undefined;
  const s = spans;
  const buf = s.buf;
  const attempt = info.deliveryAttempt !== undefined && info.deliveryAttempt > 1 ? info.deliveryAttempt : 1;
  if (
    !okMs(m.bornTimestamp) ||
    !okMs(m.storeTimestamp) ||
    !okMs(m.deliveryTimestamp) ||
    !okMs(m.queueId) ||
    !okMs(m.queueOffset) ||
    !okMs(attempt) ||
    (info.invisibleMs !== undefined && !okMs(info.invisibleMs))
  ) {
    return undefined;
  }
  const handle = info.receiptHandle ? asciiLength(info.receiptHandle) : 0;
  if (handle < 0) return undefined;

  // Message: topic, user properties, system properties, body.
  const topic = topicBytes(m.topic);
  let size = nested(topic.length);
  let traceAt = -1;
  let traceLength = 0;
  const props = s.properties;
  for (let i = 0; i < s.propertyCount; i++) {
    const kAt = props[4 * i]!;
    const kLength = props[4 * i + 1]!;
    if (bytesEqual(buf, kAt, kLength, TRACE_KEY, false)) {
      traceAt = props[4 * i + 2]!;
      traceLength = props[4 * i + 3]!;
      continue;
    }
    if (bytesEqual(buf, kAt, kLength, INTERNAL_PREFIX, true)) continue;
    const entry = nested(kLength) + nested(props[4 * i + 3]!);
    size += nested(entry);
  }

  const crc = info.crc32Digest
    ? m.bodyCrc !== undefined && m.bodyCrc >= 0
      ? m.bodyCrc
      : crc32(m.body) >>> 0
    : -1;
  const digest = crc >= 0 ? '' : (m.properties[BODY_MD5_PROPERTY] ?? md5Checksum(m.body));
  const digestLength = crc >= 0 ? 8 : asciiLength(digest);
  if (digestLength < 0) return undefined;

  let sys = 0;
  if (s.tagLength) sys += nested(s.tagLength);
  for (let i = 0; i < s.keyCount; i++) sys += nested(s.keys[2 * i + 1]!);
  if (s.idLength) sys += nested(s.idLength);
  const digestValue = 2 + (digestLength ? nested(digestLength) : 0);
  sys += nested(digestValue);
  sys += 2 + 2; // body_encoding, message_type: never 0
  const born = timeSize(m.bornTimestamp);
  sys += nested(born);
  if (s.hostLength) sys += nested(s.hostLength);
  const stored = timeSize(m.storeTimestamp);
  sys += nested(stored);
  const host = hostBytes(info.storeHost).length;
  if (host) sys += nested(host);
  if (m.deliveryTimestamp) {
    const due = timeSize(m.deliveryTimestamp);
    sys += nested(due);
  }
  if (handle) sys += nested(handle);
  if (m.queueId) sys += 1 + vsize(m.queueId);
  sys += 1 + vsize(m.queueOffset);
  if (info.invisibleMs !== undefined) {
    const invisible = timeSize(info.invisibleMs);
    sys += nested(invisible);
  }
  sys += 2 + vsize(attempt);
  if (s.groupLength) sys += 1 + nested(s.groupLength);
  if (traceLength) sys += 1 + nested(traceLength);
  size += nested(sys);
  if (m.body.length) size += nested(m.body.length);
  return { m, info, size, sys, topic, crc, digest, traceAt, traceLength };
}

function copyField(
  out: Buffer,
  at: number,
  tag: number,
  from: Buffer,
  start: number,
  length: number,
): number {
  out[at++] = tag;
  at = writeVarint(out, at, length);
  // Short fields (ids, tags, keys) without a view of each (copy-bytes.ts).
  if (length <= 64) copyBytes(from, start, out, at, length);
  else from.copy(out, at, start, start + length);
  return at + length;
}

/** Write an ASCII string field (receipt handles, digests: a JS loop beats the native write at their lengths). */
function writeAscii(out: Buffer, at: number, tag: number, s: string): number {
  out[at++] = tag;
  at = writeVarint(out, at, s.length);
  for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  return at + s.length;
}

function writeTime(out: Buffer, at: number, tag: number, ms: number): number {
  const s = Math.floor(ms / 1000);
  const nanos = (ms - s * 1000) * 1e6;
  out[at++] = tag;
  at = writeVarint(out, at, timeSize(ms));
  if (s) {
    out[at++] = 1 << 3;
    at = writeVarint(out, at, s);
  }
  if (nanos) {
    out[at++] = 2 << 3;
    at = writeVarint(out, at, nanos);
  }
  return at;
}

/**
 * Write the `message` field (the response's field 2) of a planned delivery at `at`; returns where it
 * ends (`at` + its tag, length and `plan.size`).
 */
export function writeStored(out: Buffer, at: number, plan: StoredPlan): number {
  const { m, info } = plan;
  spans.readMessage(m);
  const s = spans;
  const buf = s.buf;
  out[at++] = (2 << 3) | 2;
  at = writeVarint(out, at, plan.size);
  out[at++] = (1 << 3) | 2;
  at = writeVarint(out, at, plan.topic.length);
  plan.topic.copy(out, at);
  at += plan.topic.length;
  const props = s.properties;
  for (let i = 0; i < s.propertyCount; i++) {
    const kAt = props[4 * i]!;
    const kLength = props[4 * i + 1]!;
    if (bytesEqual(buf, kAt, kLength, TRACE_KEY, false)) continue;
    if (bytesEqual(buf, kAt, kLength, INTERNAL_PREFIX, true)) continue;
    const vLength = props[4 * i + 3]!;
    out[at++] = (2 << 3) | 2;
    at = writeVarint(out, at, nested(kLength) + nested(vLength));
    at = copyField(out, at, (1 << 3) | 2, buf, kAt, kLength);
    at = copyField(out, at, (2 << 3) | 2, buf, props[4 * i + 2]!, vLength);
  }

  out[at++] = (3 << 3) | 2;
  at = writeVarint(out, at, plan.sys);
  if (s.tagLength) at = copyField(out, at, (1 << 3) | 2, buf, s.tagAt, s.tagLength);
  for (let i = 0; i < s.keyCount; i++)
    at = copyField(out, at, (2 << 3) | 2, buf, s.keys[2 * i]!, s.keys[2 * i + 1]!);
  if (s.idLength) at = copyField(out, at, (3 << 3) | 2, buf, s.idAt, s.idLength);
  const digest = plan.digest;
  out[at++] = (4 << 3) | 2;
  if (plan.crc >= 0) {
    out[at++] = 2 + nested(8);
    out[at++] = 1 << 3;
    out[at++] = WireDigestType.CRC32;
    out[at++] = (2 << 3) | 2;
    out[at++] = 8;
    at = writeCrcHex(out, at, plan.crc);
  } else {
    at = writeVarint(out, at, 2 + (digest.length ? nested(digest.length) : 0));
    out[at++] = 1 << 3;
    out[at++] = WireDigestType.MD5;
    if (digest.length) at = writeAscii(out, at, (2 << 3) | 2, digest);
  }
  out[at++] = 5 << 3;
  out[at++] = m.sysFlag & SysFlag.GZIP ? WireEncoding.GZIP : WireEncoding.IDENTITY;
  out[at++] = 6 << 3;
  const type = m.sysFlag & SysFlag.TYPE_MASK;
  out[at++] = type >= 1 && type <= 4 ? type : 1; // NORMAL, FIFO, DELAY, TRANSACTION; else NORMAL
  at = writeTime(out, at, (7 << 3) | 2, m.bornTimestamp);
  if (s.hostLength) at = copyField(out, at, (8 << 3) | 2, buf, s.hostAt, s.hostLength);
  at = writeTime(out, at, (9 << 3) | 2, m.storeTimestamp);
  const host = hostBytes(info.storeHost);
  if (host.length) at = copyField(out, at, (10 << 3) | 2, host, 0, host.length);
  if (m.deliveryTimestamp) at = writeTime(out, at, (11 << 3) | 2, m.deliveryTimestamp);
  if (info.receiptHandle) at = writeAscii(out, at, (12 << 3) | 2, info.receiptHandle);
  if (m.queueId) {
    out[at++] = 13 << 3;
    at = writeVarint(out, at, m.queueId);
  }
  out[at++] = 14 << 3;
  at = writeVarint(out, at, m.queueOffset);
  if (info.invisibleMs !== undefined) at = writeTime(out, at, (15 << 3) | 2, info.invisibleMs);
  out[at++] = 0x80; // field 16, varint: a two-byte tag
  out[at++] = 0x01;
  at = writeVarint(
    out,
    at,
    info.deliveryAttempt !== undefined && info.deliveryAttempt > 1 ? info.deliveryAttempt : 1,
  );
  if (s.groupLength) {
    out[at++] = 0x8a; // field 17, length-delimited
    at = copyField(out, at, 0x01, buf, s.groupAt, s.groupLength);
  }
  if (plan.traceLength) {
    out[at++] = 0x92; // field 18, length-delimited
    at = copyField(out, at, 0x01, buf, plan.traceAt, plan.traceLength);
  }
  const body = m.body;
  if (body.length) {
    out[at++] = (4 << 3) | 2;
    at = writeVarint(out, at, body.length);
    out.set(body, at);
    at += body.length;
  }
  return at;
}
