/**
 * Messages on the Remoting wire: the stored-message layout the clients decode (`MessageDecoder`,
 * server-semantics §8.2) for pulls and queries, the batch layout producers send, the property string
 * `k\u0001v\u0002…`, compressed bodies, and RocketMQ's offset message id (store host + commit-log
 * offset; Vela's log position plays the commit-log offset).
 *
 * Stored messages keep their tag, keys, message group and id (the `UNIQ_KEY`) in fields of their
 * own; they are put back into the properties here, as RocketMQ clients expect them.
 */
import { crc32, gunzipSync } from 'node:zlib';
import { VelaError } from '../common/errors.js';
import type { BrokerMessage } from '../broker/message.js';
import { FLAG_PROPERTY, SysFlag } from '../broker/produce.js';

export const NAME_VALUE_SEPARATOR = '\u0001';
export const PROPERTY_SEPARATOR = '\u0002';
/** `MessageDecoder.MESSAGE_MAGIC_CODE` (v1: one-byte topic length). */
const MAGIC_V1 = -626843481;
/** v2: two-byte topic length, for topics over 127 bytes. */
const MAGIC_V2 = -626843477;

/** RocketMQ `MessageSysFlag` bits. */
export const RmqSysFlag = {
  COMPRESSED: 0x1,
  MULTI_TAGS: 0x2,
  TRANSACTION_PREPARED: 0x4,
  TRANSACTION_COMMIT: 0x8,
  TRANSACTION_MASK: 0xc,
  BORNHOST_V6: 0x10,
  STOREHOST_V6: 0x20,
  COMPRESSION_TYPE_MASK: 0x700,
} as const;

/** Property names (`MessageConst`). */
export const Prop = {
  UNIQ_KEY: 'UNIQ_KEY',
  TAGS: 'TAGS',
  KEYS: 'KEYS',
  WAIT: 'WAIT',
  DELAY: 'DELAY',
  SHARDING_KEY: '__SHARDINGKEY',
  TRAN_MSG: 'TRAN_MSG',
  RETRY_TOPIC: 'RETRY_TOPIC',
  ORIGIN_MESSAGE_ID: 'ORIGIN_MESSAGE_ID',
  RECONSUME_TIME: 'RECONSUME_TIME',
  MAX_RECONSUME_TIMES: 'MAX_RECONSUME_TIMES',
  PRODUCER_GROUP: 'PGROUP',
  CHECK_IMMUNITY_TIME: 'CHECK_IMMUNITY_TIME_IN_SECONDS',
} as const;

export function encodeProperties(props: Readonly<Record<string, string>>): string {
  let s = '';
  for (const k in props) s += k + NAME_VALUE_SEPARATOR + props[k] + PROPERTY_SEPARATOR;
  return s;
}

export function decodeProperties(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!s) return out;
  for (const item of s.split(PROPERTY_SEPARATOR)) {
    if (!item) continue;
    const i = item.indexOf(NAME_VALUE_SEPARATOR);
    if (i > 0) out[item.slice(0, i)] = item.slice(i + 1);
  }
  return out;
}

export interface HostAddress {
  /** Four IPv4 bytes. */
  ip: Buffer;
  port: number;
}

/** `a.b.c.d:port` (anything else, e.g. IPv6, becomes 127.0.0.1 with its port: clients only read v4). */
export function parseHostAddress(address: string | undefined): HostAddress {
  const m = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}):(\d{1,5})$/.exec(address ?? '');
  if (m) return { ip: Buffer.from([+m[1]!, +m[2]!, +m[3]!, +m[4]!]), port: +m[5]! };
  const port = Number(/:(\d{1,5})$/.exec(address ?? '')?.[1] ?? 0);
  return { ip: Buffer.from([127, 0, 0, 1]), port };
}

export function formatHostAddress(h: HostAddress): string {
  return `${h.ip[0]}.${h.ip[1]}.${h.ip[2]}.${h.ip[3]}:${h.port}`;
}

/** RocketMQ's offset message id: hex of store host IPv4 (4) + port (4) + commit-log offset (8). */
export function offsetMessageId(storeHost: HostAddress, logPosition: number): string {
  const b = Buffer.allocUnsafe(16);
  storeHost.ip.copy(b, 0);
  b.writeInt32BE(storeHost.port, 4);
  b.writeBigInt64BE(BigInt(logPosition), 8);
  return b.toString('hex').toUpperCase();
}

/** Decode an offset message id (32 hex characters), or null if `id` is not one. */
export function decodeOffsetMessageId(id: string): { address: string; logPosition: number } | null {
  if (!/^[0-9A-Fa-f]{32}$/.test(id)) return null;
  const b = Buffer.from(id, 'hex');
  const logPosition = Number(b.readBigInt64BE(8));
  if (!Number.isSafeInteger(logPosition) || logPosition < 0) return null;
  return { address: formatHostAddress({ ip: b.subarray(0, 4), port: b.readInt32BE(4) }), logPosition };
}

/** The properties a Remoting client sees: stored ones (internal `__VELA_*` left out) plus the fields. */
export function deliveryProperties(m: BrokerMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const p = m.properties;
  for (const k in p) if (!k.startsWith('__VELA_')) out[k] = p[k]!;
  if (m.tag) out[Prop.TAGS] = m.tag;
  if (m.keys.length > 0) out[Prop.KEYS] = m.keys.join(' ');
  if (m.messageGroup) out[Prop.SHARDING_KEY] = m.messageGroup;
  out[Prop.UNIQ_KEY] = m.messageId;
  return out;
}

/** The body a Remoting client gets: stored bodies are plain, except gRPC GZIP bodies, inflated here. */
function plainBody(m: BrokerMessage): Buffer {
  if (m.sysFlag & SysFlag.GZIP) {
    try {
      return gunzipSync(m.body);
    } catch {
      return m.body;
    }
  }
  return m.body;
}

/** Encode a stored message in `MessageDecoder` layout (what PULL_MESSAGE and queries return). */
export function encodeMessageExt(m: BrokerMessage, storeHost: HostAddress): Buffer {
  const body = plainBody(m);
  const topic = Buffer.from(m.topic, 'utf8');
  const props = Buffer.from(encodeProperties(deliveryProperties(m)), 'utf8');
  if (props.length > 0x7fff)
    throw new VelaError('BAD_REQUEST', `the properties of ${m.messageId} exceed 32767 bytes`);
  const v2 = topic.length > 127;
  const born = parseHostAddress(m.bornHost);
  const size =
    4 +
    4 +
    4 +
    4 +
    4 +
    8 +
    8 +
    4 +
    8 +
    8 +
    8 +
    8 +
    4 +
    8 +
    4 +
    body.length +
    (v2 ? 2 : 1) +
    topic.length +
    2 +
    props.length;
  const b = Buffer.allocUnsafe(size);
  let p = 0;
  p = b.writeInt32BE(size, p);
  p = b.writeInt32BE(v2 ? MAGIC_V2 : MAGIC_V1, p);
  // The body as stored: its CRC is known when the read verified the record (record-codec.ts bodyCrcOf).
  const known = body === m.body ? (m.bodyCrc ?? -1) : -1;
  p = b.writeInt32BE((known >= 0 ? known : crc32(body)) | 0, p);
  p = b.writeInt32BE(m.queueId, p);
  p = b.writeInt32BE(Number(m.properties[FLAG_PROPERTY] ?? 0) | 0, p);
  p = b.writeBigInt64BE(BigInt(m.queueOffset), p);
  p = b.writeBigInt64BE(BigInt(m.logPosition), p);
  p = b.writeInt32BE(0, p); // sysFlag: bodies go out plain, hosts as IPv4
  p = b.writeBigInt64BE(BigInt(Math.trunc(m.bornTimestamp)), p);
  p += born.ip.copy(b, p);
  p = b.writeInt32BE(born.port, p);
  p = b.writeBigInt64BE(BigInt(Math.trunc(m.storeTimestamp)), p);
  p += storeHost.ip.copy(b, p);
  p = b.writeInt32BE(storeHost.port, p);
  p = b.writeInt32BE(m.reconsumeTimes, p);
  p = b.writeBigInt64BE(0n, p); // prepared transaction offset
  p = b.writeInt32BE(body.length, p);
  p += body.copy(b, p);
  if (v2) p = b.writeInt16BE(topic.length, p);
  else b[p++] = topic.length;
  p += topic.copy(b, p);
  p = b.writeInt16BE(props.length, p);
  props.copy(b, p);
  return b;
}

export function encodeMessages(messages: readonly BrokerMessage[], storeHost: HostAddress): Buffer {
  return Buffer.concat(messages.map((m) => encodeMessageExt(m, storeHost)));
}

export interface BatchEntry {
  flag: number;
  body: Buffer;
  properties: Record<string, string>;
}

/** Decode a SEND_BATCH_MESSAGE body (`MessageDecoder.encodeMessages`). */
export function decodeBatch(body: Buffer): BatchEntry[] {
  const out: BatchEntry[] = [];
  let p = 0;
  const bad = (why: string) => new VelaError('MESSAGE_CORRUPTED', `batch body: ${why}`);
  while (p < body.length) {
    if (p + 20 > body.length) throw bad('truncated record');
    const total = body.readInt32BE(p);
    if (total < 22 || p + total > body.length) throw bad(`record size ${total} out of range`);
    const flag = body.readInt32BE(p + 12);
    const bodyLength = body.readInt32BE(p + 16);
    if (bodyLength < 0 || 20 + bodyLength + 2 > total) throw bad('body length out of range');
    const b = body.subarray(p + 20, p + 20 + bodyLength);
    const propsLength = body.readInt16BE(p + 20 + bodyLength);
    if (propsLength < 0 || 22 + bodyLength + propsLength > total) throw bad('properties length out of range');
    const props = body.toString('utf8', p + 22 + bodyLength, p + 22 + bodyLength + propsLength);
    out.push({ flag, body: Buffer.from(b), properties: decodeProperties(props) });
    p += total;
  }
  if (out.length === 0) throw bad('no message');
  return out;
}
