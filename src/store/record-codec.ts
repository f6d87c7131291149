/**
 * The on-disk record format.
 *
 * Every record in a log segment is a frame:
 *
 *   u32 LE  frameLength   bytes of the whole frame, this field included
 *   u32 LE  crc32         CRC-32 (zlib) of bytes [8, frameLength)
 *   u8      recordType    RecordType
 *   ...     payload
 *
 * A message record's payload (all integers little-endian; f64 holds integers below 2^53 exactly):
 *
 *   u8 version (1) | u8 flags | u16 reserved | u32 queueId | f64 queueOffset | f64 bornTimestamp
 *   f64 storeTimestamp | f64 deliveryTimestamp (0 = none) | u32 reconsumeTimes | u32 sysFlag
 *   str topic | str messageId | str tag | str messageGroup | str bornHost      (str = u16 length + UTF-8)
 *   u16 keyCount, str × keyCount
 *   u32 propertyCount, (str key, u32 length + UTF-8 value) × propertyCount
 *   u32 bodyLength, body
 *
 * The record names its topic, queue, queue offset and message id, so the log alone is enough to
 * rebuild every index.
 *
 * Flags: bit 0 (`BATCH_CONTINUES`) is set on every record of an append batch but the last, so
 * recovery can tell a batch cut short by a crash (never acknowledged) and drop it whole: a batch is
 * stored all or nothing.
 */
import { crc32 } from 'node:zlib';
import { VelaError } from '../common/errors.js';
import { crc32Shift } from '../common/crc32-shift.js';
import { SHORT_CRC_MAX, crc32Short } from '../common/crc32-short.js';

export const FRAME_HEADER_SIZE = 9;
/** Upper bound on one frame; a length field above it is treated as corruption. */
export const MAX_FRAME_SIZE = 64 * 1024 * 1024;

export const RecordType = {
  MESSAGE: 1,
  /** An opaque payload owned by the layer above (the broker's state journal). */
  STATE: 2,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

const MESSAGE_VERSION = 1;
/** Message flag: another record of the same append batch follows this one. */
export const BATCH_CONTINUES = 1;
const FIXED_MESSAGE_SIZE = 48; // version..sysFlag
const MAX_STR = 0xffff;

export interface MessageInput {
  topic: string;
  queueId: number;
  /** Unique id of the message (RocketMQ's UNIQ_KEY), assigned by the producer or the broker. */
  messageId: string;
  body: Uint8Array;
  tag?: string;
  keys?: readonly string[];
  messageGroup?: string;
  properties?: Readonly<Record<string, string>>;
  /** When the producer created the message (ms). @defaultValue the store time */
  bornTimestamp?: number;
  bornHost?: string;
  /** For delayed messages: when to deliver (ms). 0 or absent: no delay. */
  deliveryTimestamp?: number;
  reconsumeTimes?: number;
  /** Bit flags owned by the broker (message type and the like); opaque to the store. */
  sysFlag?: number;
}

export interface StoredMessage {
  topic: string;
  queueId: number;
  queueOffset: number;
  messageId: string;
  body: Buffer;
  tag: string;
  keys: string[];
  messageGroup: string;
  properties: Record<string, string>;
  bornTimestamp: number;
  bornHost: string;
  storeTimestamp: number;
  deliveryTimestamp: number;
  reconsumeTimes: number;
  sysFlag: number;
  /** Byte position of the record in the log. */
  logPosition: number;
  /** Size of the record's frame in bytes. */
  size: number;
  /**
   * CRC-32 of the body, when the read that produced this message verified the record's checksum
   * (derived from it: `bodyCrcOf`); -1 or absent when not known.
   */
  bodyCrc?: number;
}

/**
 * A message as a store read decoded it, holding the record it came from (in a buffer the read owns),
 * so that an edge can copy the record's fields as they are instead of encoding the decoded strings
 * again (`MessageRecordSpans.readMessage`). The record is a private field: a copy made by spreading
 * the message — a message changed after its read — does not carry it, so no copy can pair changed
 * fields with the record's. Hence the rule: a message as read is never changed in place (only
 * `queueOffset`, set by the read to the index's equal value); a changed message is a copy.
 */
class ReadMessage implements StoredMessage {
  readonly #record: Buffer;
  readonly #recordAt: number;
  bodyCrc = -1;

  constructor(
    record: Buffer,
    recordAt: number,
    public topic: string,
    public queueId: number,
    public queueOffset: number,
    public messageId: string,
    public body: Buffer,
    public tag: string,
    public keys: string[],
    public messageGroup: string,
    public properties: Record<string, string>,
    public bornTimestamp: number,
    public bornHost: string,
    public storeTimestamp: number,
    public deliveryTimestamp: number,
    public reconsumeTimes: number,
    public sysFlag: number,
    public logPosition: number,
    public size: number,
  ) {
    this.#record = record;
    this.#recordAt = recordAt;
  }

  /** Read the spans of `m`'s record, if it is a message as read (not a copy). */
  static spansOf(m: StoredMessage, spans: MessageRecordSpans): boolean {
    return #record in m && spans.read(m.#record, m.#recordAt);
  }
}

/** An upper bound on the encoded frame size of a message, cheap to compute. */
export function messageFrameUpperBound(m: MessageInput): number {
  let n = FRAME_HEADER_SIZE + FIXED_MESSAGE_SIZE + 5 * 2 + 2 + 4 + 4;
  n += (m.topic.length + m.messageId.length + (m.tag?.length ?? 0)) * 3;
  n += ((m.messageGroup?.length ?? 0) + (m.bornHost?.length ?? 0)) * 3;
  if (m.keys) for (const k of m.keys) n += 2 + k.length * 3;
  if (m.properties) for (const k in m.properties) n += 6 + (k.length + m.properties[k]!.length) * 3;
  return n + m.body.length;
}

/** Write UTF-8 bytes; short ASCII strings (ids, tags, topics) skip the native call. */
function writeUtf8(buf: Buffer, off: number, s: string): number {
  const len = s.length;
  if (len <= 64) {
    let i = 0;
    for (; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[off + i] = c;
    }
    if (i === len) return len;
  }
  return buf.write(s, off);
}

function writeStr(buf: Buffer, off: number, s: string | undefined): number {
  if (!s) {
    buf[off] = 0;
    buf[off + 1] = 0;
    return off + 2;
  }
  const n = writeUtf8(buf, off + 2, s);
  if (n > MAX_STR) throw new VelaError('STORE_BAD_ARGUMENT', `string field longer than ${MAX_STR} bytes`);
  buf.writeUInt16LE(n, off);
  return off + 2 + n;
}

/**
 * Encode a message frame into `buf` at `off` (the caller guarantees `messageFrameUpperBound` bytes of
 * room). Returns the frame length.
 */
export function encodeMessageFrame(
  buf: Buffer,
  off: number,
  m: MessageInput,
  queueOffset: number,
  storeTimestamp: number,
  flags = 0,
): number {
  let p = off + FRAME_HEADER_SIZE;
  buf[off + 8] = RecordType.MESSAGE;
  buf[p] = MESSAGE_VERSION;
  buf[p + 1] = flags;
  buf.writeUInt16LE(0, p + 2);
  buf.writeUInt32LE(m.queueId, p + 4);
  buf.writeDoubleLE(queueOffset, p + 8);
  buf.writeDoubleLE(m.bornTimestamp ?? storeTimestamp, p + 16);
  buf.writeDoubleLE(storeTimestamp, p + 24);
  buf.writeDoubleLE(m.deliveryTimestamp ?? 0, p + 32);
  buf.writeUInt32LE(m.reconsumeTimes ?? 0, p + 40);
  buf.writeUInt32LE(m.sysFlag ?? 0, p + 44);
  p += FIXED_MESSAGE_SIZE;
  p = writeStr(buf, p, m.topic);
  p = writeStr(buf, p, m.messageId);
  p = writeStr(buf, p, m.tag);
  p = writeStr(buf, p, m.messageGroup);
  p = writeStr(buf, p, m.bornHost);
  const keys = m.keys ?? [];
  buf.writeUInt16LE(keys.length, p);
  p += 2;
  for (const k of keys) p = writeStr(buf, p, k);
  const countAt = p;
  let count = 0;
  p += 4;
  if (m.properties) {
    for (const k in m.properties) {
      p = writeStr(buf, p, k);
      const n = writeUtf8(buf, p + 4, m.properties[k]!);
      buf.writeUInt32LE(n, p);
      p += 4 + n;
      count++;
    }
  }
  buf.writeUInt32LE(count, countAt);
  const body = m.body;
  buf.writeUInt32LE(body.length, p);
  p += 4;
  buf.set(body, p);
  p += body.length;
  sealFrame(buf, off, p - off);
  return p - off;
}

/** Write a frame around an opaque payload already placed at `off + FRAME_HEADER_SIZE`. */
export function sealFrame(buf: Buffer, off: number, frameLength: number): void {
  buf.writeUInt32LE(frameLength, off);
  buf.writeUInt32LE(crc32(buf.subarray(off + 8, off + frameLength)), off + 4);
}

/** Encode an opaque payload as a frame of the given type. */
export function encodePayloadFrame(type: RecordType, payload: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_SIZE + payload.length);
  frame[8] = type;
  frame.set(payload, FRAME_HEADER_SIZE);
  sealFrame(frame, 0, frame.length);
  return frame;
}

export const FrameCheck = {
  OK: 0,
  /** Not enough bytes for the frame (a torn tail, or the read was short). */
  INCOMPLETE: 1,
  /** Length out of range or checksum mismatch. */
  CORRUPT: 2,
} as const;
export type FrameCheck = (typeof FrameCheck)[keyof typeof FrameCheck];

/** Check the frame at `off` within `buf[0, end)`. */
export function checkFrame(buf: Buffer, off: number, end: number): FrameCheck {
  if (end - off < FRAME_HEADER_SIZE) return FrameCheck.INCOMPLETE;
  const len = buf.readUInt32LE(off);
  if (len < FRAME_HEADER_SIZE || len > MAX_FRAME_SIZE) return FrameCheck.CORRUPT;
  if (off + len > end) return FrameCheck.INCOMPLETE;
  return crc32(buf.subarray(off + 8, off + len)) === buf.readUInt32LE(off + 4)
    ? FrameCheck.OK
    : FrameCheck.CORRUPT;
}

export function frameLength(buf: Buffer, off: number): number {
  return buf.readUInt32LE(off);
}

export function frameType(buf: Buffer, off: number): number {
  return buf[off + 8]!;
}

/**
 * Decode UTF-8. Short strings too: `toString('utf8', …)` takes ~70 ns for the 10–34 bytes of a topic,
 * id or host, against ~140 ns for building an ASCII string in JavaScript from a subarray
 * (`String.fromCharCode.apply`), which this used before (measured on Node 20).
 */
function readUtf8(b: Buffer, start: number, end: number): string {
  return b.toString('utf8', start, end);
}

/**
 * Whether `b[start, start + n)` is the UTF-8 of `s`, judged for ASCII only (anything else: false, and
 * the caller decodes; byte-per-char equality would take the UTF-8 of "é" for the string "Ã©").
 */
function holds(b: Buffer, start: number, n: number, s: string): boolean {
  if (n !== s.length) return false;
  for (let i = 0; i < n; i++) {
    const c = b[start + i]!;
    if (c >= 0x80 || c !== s.charCodeAt(i)) return false;
  }
  return true;
}

class Reader {
  constructor(
    readonly buf: Buffer,
    public p: number,
  ) {}
  str(): string {
    const b = this.buf;
    const n = b[this.p]! | (b[this.p + 1]! << 8);
    const start = this.p + 2;
    this.p = start + n;
    return n === 0 ? '' : readUtf8(b, start, start + n);
  }
  /** A string the caller expects (a read's topic, the last born host): that one if it is, not a new one. */
  strLike(expected: string): string {
    const b = this.buf;
    const n = b[this.p]! | (b[this.p + 1]! << 8);
    const start = this.p + 2;
    this.p = start + n;
    if (n === 0) return '';
    return holds(b, start, n, expected) ? expected : readUtf8(b, start, start + n);
  }
}

/** The born host of the last message decoded: messages of one producer repeat it. */
let lastBornHost = '';

/**
 * Decode a message frame (already checked). The body is a view into `buf`, not a copy. `topic`: the
 * topic the caller expects (the queue's), kept instead of decoding its equal from the record.
 */
export function decodeMessageFrame(buf: Buffer, off: number, logPosition: number, topic = ''): StoredMessage {
  const size = buf.readUInt32LE(off);
  if (buf[off + 8] !== RecordType.MESSAGE) {
    throw new VelaError('STORE_CORRUPT_RECORD', `record at ${logPosition} is not a message`);
  }
  const p = off + FRAME_HEADER_SIZE;
  if (buf[p] !== MESSAGE_VERSION) {
    throw new VelaError('STORE_CORRUPT_RECORD', `unknown message record version ${buf[p]} at ${logPosition}`);
  }
  const r = new Reader(buf, p + FIXED_MESSAGE_SIZE);
  topic = r.strLike(topic);
  const messageId = r.str();
  const tag = r.str();
  const messageGroup = r.str();
  const bornHost = (lastBornHost = r.strLike(lastBornHost));
  const keyCount = buf.readUInt16LE(r.p);
  r.p += 2;
  const keys: string[] = new Array(keyCount);
  for (let i = 0; i < keyCount; i++) keys[i] = r.str();
  const propCount = buf.readUInt32LE(r.p);
  r.p += 4;
  const properties: Record<string, string> = {};
  for (let i = 0; i < propCount; i++) {
    const k = r.str();
    const n = buf.readUInt32LE(r.p);
    properties[k] = buf.toString('utf8', r.p + 4, r.p + 4 + n);
    r.p += 4 + n;
  }
  const bodyLength = buf.readUInt32LE(r.p);
  const body = buf.subarray(r.p + 4, r.p + 4 + bodyLength);
  return new ReadMessage(
    buf,
    off,
    topic,
    buf.readUInt32LE(p + 4),
    buf.readDoubleLE(p + 8),
    messageId,
    body,
    tag,
    keys,
    messageGroup,
    properties,
    buf.readDoubleLE(p + 16),
    bornHost,
    buf.readDoubleLE(p + 24),
    buf.readDoubleLE(p + 32),
    buf.readUInt32LE(p + 40),
    buf.readUInt32LE(p + 44),
    logPosition,
    size,
  );
}

const NO_BYTES = Buffer.alloc(0);

/**
 * Where the variable fields of a message record lie in its buffer (start and length of each), read
 * without decoding a string: for copying them into another encoding as they are (a delivered message
 * on the gRPC edge). One instance is reused: `read` overwrites it.
 */
export class MessageRecordSpans {
  buf: Buffer = NO_BYTES;
  /** Start and length of the topic, message id, tag, message group and born host, in record order. */
  private readonly strings = new Int32Array(10);
  get topicAt(): number {
    return this.strings[0]!;
  }
  get topicLength(): number {
    return this.strings[1]!;
  }
  get idAt(): number {
    return this.strings[2]!;
  }
  get idLength(): number {
    return this.strings[3]!;
  }
  get tagAt(): number {
    return this.strings[4]!;
  }
  get tagLength(): number {
    return this.strings[5]!;
  }
  get groupAt(): number {
    return this.strings[6]!;
  }
  get groupLength(): number {
    return this.strings[7]!;
  }
  get hostAt(): number {
    return this.strings[8]!;
  }
  get hostLength(): number {
    return this.strings[9]!;
  }
  keyCount = 0;
  /** Start and length of each key. */
  keys = new Int32Array(16);
  propertyCount = 0;
  /** Key start, key length, value start, value length of each property. */
  properties = new Int32Array(32);
  bodyAt = 0;
  bodyLength = 0;

  /**
   * Read the record a message was decoded from: false for a message that holds none (built, or
   * copied and changed, after its read).
   */
  readMessage(m: StoredMessage): boolean {
    return ReadMessage.spansOf(m, this);
  }

  /**
   * Read the record at `buf[off]` (a message frame whose checksum was verified, or that this process
   * wrote). False if it is not a message record of a version this knows.
   */
  read(buf: Buffer, off: number): boolean {
    const p = off + FRAME_HEADER_SIZE;
    if (buf[off + 8] !== RecordType.MESSAGE || buf[p] !== MESSAGE_VERSION) return false;
    this.buf = buf;
    let at = p + FIXED_MESSAGE_SIZE;
    let n: number;
    const strings = this.strings;
    for (let i = 0; i < 10; i += 2) {
      n = buf[at]! | (buf[at + 1]! << 8);
      strings[i] = at + 2;
      strings[i + 1] = n;
      at += 2 + n;
    }
    const keyCount = buf[at]! | (buf[at + 1]! << 8);
    at += 2;
    if (this.keys.length < keyCount * 2) this.keys = new Int32Array(keyCount * 2);
    for (let i = 0; i < keyCount; i++) {
      n = buf[at]! | (buf[at + 1]! << 8);
      this.keys[2 * i] = at + 2;
      this.keys[2 * i + 1] = n;
      at += 2 + n;
    }
    this.keyCount = keyCount;
    const propertyCount = buf.readUInt32LE(at);
    at += 4;
    if (this.properties.length < propertyCount * 4) this.properties = new Int32Array(propertyCount * 4);
    for (let i = 0; i < propertyCount; i++) {
      n = buf[at]! | (buf[at + 1]! << 8);
      this.properties[4 * i] = at + 2;
      this.properties[4 * i + 1] = n;
      at += 2 + n;
      n = buf.readUInt32LE(at);
      this.properties[4 * i + 2] = at + 4;
      this.properties[4 * i + 3] = n;
      at += 4 + n;
    }
    this.propertyCount = propertyCount;
    this.bodyLength = buf.readUInt32LE(at);
    this.bodyAt = at + 4;
    return true;
  }
}

/**
 * Bodies at least this long get their CRC from `bodyCrcOf`; below it a pass over the body costs no
 * more (`node --import tsx bench/body-crc.ts`: ~85 ns derived against ~115 for a 128-byte body).
 */
export const DERIVE_BODY_CRC_FROM = 128;

/**
 * The CRC-32 of the body of the message frame at `buf[off]` (`size` bytes, its checksum already
 * verified): the body ends the frame, so its CRC follows from the frame's checksum and the CRC of the
 * bytes between the checksum and the body (crc32-shift.ts) — one pass over the header, none over the
 * body.
 */
export function bodyCrcOf(buf: Buffer, off: number, size: number, bodyLength: number): number {
  const bodyStart = off + size - bodyLength;
  const head =
    bodyStart - off - 8 <= SHORT_CRC_MAX
      ? crc32Short(buf, off + 8, bodyStart)
      : crc32(buf.subarray(off + 8, bodyStart));
  return (buf.readUInt32LE(off + 4) ^ crc32Shift(head, bodyLength)) >>> 0;
}

/** The fields recovery needs to rebuild indexes, without decoding the body or properties. */
export interface MessageIndexFields {
  /** Record flags (`BATCH_CONTINUES`). */
  flags: number;
  topic: string;
  queueId: number;
  queueOffset: number;
  storeTimestamp: number;
  tag: string;
  messageId: string;
  keys: string[];
}

export function decodeMessageIndexFields(buf: Buffer, off: number): MessageIndexFields {
  const p = off + FRAME_HEADER_SIZE;
  const r = new Reader(buf, p + FIXED_MESSAGE_SIZE);
  const topic = r.str();
  const messageId = r.str();
  const tag = r.str();
  r.str(); // messageGroup
  r.str(); // bornHost
  const keyCount = buf.readUInt16LE(r.p);
  r.p += 2;
  const keys: string[] = new Array(keyCount);
  for (let i = 0; i < keyCount; i++) keys[i] = r.str();
  return {
    flags: buf[p + 1]!,
    topic,
    queueId: buf.readUInt32LE(p + 4),
    queueOffset: buf.readDoubleLE(p + 8),
    storeTimestamp: buf.readDoubleLE(p + 24),
    tag,
    messageId,
    keys,
  };
}

/** Java's `String.hashCode` of a tag (RocketMQ's tagsCode), 0 for no tag. */
export function tagHash(tag: string | undefined): number {
  if (!tag) return 0;
  let h = 0;
  for (let i = 0; i < tag.length; i++) h = (Math.imul(31, h) + tag.charCodeAt(i)) | 0;
  return h;
}

/** A 32-bit FNV-1a hash of a string, for the message-id/key index. */
export function keyHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
