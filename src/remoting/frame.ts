/**
 * The Remoting frame (`RemotingCommand`): a 4-byte big-endian length, a 4-byte word whose top byte is
 * the header's serialization (0 JSON, 1 ROCKETMQ binary) and whose low 24 bits are its length, the
 * header, then the body. Both header forms are read; Vela always answers in JSON, which every client
 * decodes per frame (reference/remoting.md §A1).
 *
 * `FrameDecoder` cuts a TCP byte stream into commands and refuses a frame longer than RocketMQ's
 * 16 MiB limit before buffering it, so a bad or hostile peer cannot exhaust memory.
 */
import { LANGUAGES } from './codes.js';

/** Java's NettyDecoder limit (`com.rocketmq.remoting.frameMaxLength`, 16 MiB). */
export const MAX_FRAME_LENGTH = 16 * 1024 * 1024;

export const SerializeType = { JSON: 0, ROCKETMQ: 1 } as const;

/** Flag bits: bit 0 marks a response, bit 1 a one-way request (never answered). */
export const Flag = { RESPONSE: 1, ONEWAY: 2 } as const;

export interface RemotingCommand {
  code: number;
  language: string;
  version: number;
  opaque: number;
  flag: number;
  remark?: string;
  /** The typed "custom header", as strings. */
  extFields: Record<string, string>;
  body?: Buffer;
}

export class FrameError extends Error {
  override readonly name = 'FrameError';
}

export function isResponse(c: RemotingCommand): boolean {
  return (c.flag & Flag.RESPONSE) !== 0;
}

export function isOneway(c: RemotingCommand): boolean {
  return (c.flag & Flag.ONEWAY) !== 0;
}

/** Decode one frame without its leading length field (`frame` = header word + header + body). */
export function decodeFrame(frame: Buffer): RemotingCommand {
  if (frame.length < 4) throw new FrameError('frame shorter than its header-length word');
  const word = frame.readUInt32BE(0);
  const type = word >>> 24;
  const headerLength = word & 0xffffff;
  if (4 + headerLength > frame.length) {
    throw new FrameError(`header length ${headerLength} exceeds the frame (${frame.length - 4} bytes)`);
  }
  const header = frame.subarray(4, 4 + headerLength);
  const cmd =
    type === SerializeType.JSON
      ? decodeJsonHeader(header)
      : type === SerializeType.ROCKETMQ
        ? decodeBinaryHeader(header)
        : (() => {
            throw new FrameError(`unknown header serialization ${type}`);
          })();
  if (frame.length > 4 + headerLength) cmd.body = frame.subarray(4 + headerLength);
  return cmd;
}

function decodeJsonHeader(header: Buffer): RemotingCommand {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(header.toString('utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new FrameError(`the JSON header does not parse: ${(err as Error).message}`);
  }
  if (!o || typeof o !== 'object' || Array.isArray(o))
    throw new FrameError('the JSON header is not an object');
  const int = (v: unknown, name: string, required: boolean): number => {
    if (v === undefined || v === null) {
      if (required) throw new FrameError(`the header has no ${name}`);
      return 0;
    }
    const n = typeof v === 'string' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n))
      throw new FrameError(`the header's ${name} is not an integer`);
    return n;
  };
  const extFields: Record<string, string> = {};
  const ext = o.extFields;
  if (ext && typeof ext === 'object' && !Array.isArray(ext)) {
    for (const [k, v] of Object.entries(ext as Record<string, unknown>)) {
      // Some clients (ali-ons) send numbers and booleans unquoted; Java sends strings.
      if (v !== null && v !== undefined)
        extFields[k] = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
    }
  }
  const language = o.language;
  return {
    code: int(o.code, 'code', true),
    language:
      typeof language === 'string'
        ? language
        : typeof language === 'number'
          ? (LANGUAGES[language] ?? 'OTHER')
          : 'OTHER',
    version: int(o.version, 'version', false),
    opaque: int(o.opaque, 'opaque', false),
    flag: int(o.flag, 'flag', false),
    ...(typeof o.remark === 'string' ? { remark: o.remark } : {}),
    extFields,
  };
}

function decodeBinaryHeader(h: Buffer): RemotingCommand {
  let pos = 0;
  const need = (n: number) => {
    if (pos + n > h.length) throw new FrameError('the binary header is truncated');
  };
  need(2 + 1 + 2 + 4 + 4 + 4);
  const code = h.readInt16BE(pos);
  const languageByte = h[pos + 2]!;
  const version = h.readInt16BE(pos + 3);
  const opaque = h.readInt32BE(pos + 5);
  const flag = h.readInt32BE(pos + 9);
  pos += 13;
  const remarkLength = h.readInt32BE(pos);
  pos += 4;
  let remark: string | undefined;
  if (remarkLength > 0) {
    need(remarkLength);
    remark = h.toString('utf8', pos, pos + remarkLength);
    pos += remarkLength;
  }
  need(4);
  const extLength = h.readInt32BE(pos);
  pos += 4;
  const extFields: Record<string, string> = {};
  if (extLength > 0) {
    need(extLength);
    const end = pos + extLength;
    while (pos < end) {
      if (pos + 2 > end) throw new FrameError('the binary header is truncated');
      const kl = h.readInt16BE(pos);
      pos += 2;
      if (kl < 0 || pos + kl + 4 > end) throw new FrameError('the binary header is truncated');
      const key = h.toString('utf8', pos, pos + kl);
      pos += kl;
      const vl = h.readInt32BE(pos);
      pos += 4;
      if (vl < 0 || pos + vl > end) throw new FrameError('the binary header is truncated');
      extFields[key] = h.toString('utf8', pos, pos + vl);
      pos += vl;
    }
  }
  return {
    code,
    language: LANGUAGES[languageByte] ?? 'OTHER',
    version,
    opaque,
    flag,
    ...(remark !== undefined ? { remark } : {}),
    extFields,
  };
}

/** Encode a command as a whole frame (length field included), with a JSON header. */
export function encodeFrame(c: RemotingCommand): Buffer {
  const header = Buffer.from(
    JSON.stringify({
      code: c.code,
      extFields: c.extFields,
      flag: c.flag,
      language: c.language,
      opaque: c.opaque,
      ...(c.remark !== undefined ? { remark: c.remark } : {}),
      serializeTypeCurrentRPC: 'JSON',
      version: c.version,
    }),
    'utf8',
  );
  const bodyLength = c.body?.length ?? 0;
  const out = Buffer.allocUnsafe(8 + header.length + bodyLength);
  out.writeUInt32BE(4 + header.length + bodyLength, 0);
  out.writeUInt32BE((SerializeType.JSON << 24) | header.length, 4);
  header.copy(out, 8);
  if (c.body) c.body.copy(out, 8 + header.length);
  return out;
}

/** Encode with a ROCKETMQ binary header (what some clients send; used by tests of the decoder). */
export function encodeBinaryFrame(c: RemotingCommand): Buffer {
  const remark = c.remark !== undefined ? Buffer.from(c.remark, 'utf8') : null;
  const entries = Object.entries(c.extFields).map(([k, v]) => [Buffer.from(k), Buffer.from(v)] as const);
  const extLength = entries.reduce((n, [k, v]) => n + 2 + k.length + 4 + v.length, 0);
  const headerLength = 13 + 4 + (remark?.length ?? 0) + 4 + extLength;
  const h = Buffer.alloc(headerLength);
  let p = h.writeInt16BE(c.code, 0);
  h[p++] = Math.max(0, LANGUAGES.indexOf(c.language as (typeof LANGUAGES)[number]));
  p = h.writeInt16BE(c.version, p);
  p = h.writeInt32BE(c.opaque, p);
  p = h.writeInt32BE(c.flag, p);
  p = h.writeInt32BE(remark?.length ?? 0, p);
  if (remark) p += remark.copy(h, p);
  p = h.writeInt32BE(extLength, p);
  for (const [k, v] of entries) {
    p = h.writeInt16BE(k.length, p);
    p += k.copy(h, p);
    p = h.writeInt32BE(v.length, p);
    p += v.copy(h, p);
  }
  const bodyLength = c.body?.length ?? 0;
  const out = Buffer.allocUnsafe(8 + headerLength + bodyLength);
  out.writeUInt32BE(4 + headerLength + bodyLength, 0);
  out.writeUInt32BE((SerializeType.ROCKETMQ << 24) | headerLength, 4);
  h.copy(out, 8);
  if (c.body) c.body.copy(out, 8 + headerLength);
  return out;
}

/**
 * Cuts a byte stream into frames. `push` returns the complete frames (without their length field);
 * a length over `maxFrameLength` or under 4 throws `FrameError` (the connection is then closed).
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly maxFrameLength = MAX_FRAME_LENGTH) {}

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: Buffer[] = [];
    for (;;) {
      if (this.buffered < 4) break;
      const head = this.peek(4);
      const length = head.readUInt32BE(0);
      if (length > this.maxFrameLength) {
        throw new FrameError(`frame of ${length} bytes exceeds the limit of ${this.maxFrameLength}`);
      }
      if (length < 4) throw new FrameError(`frame length ${length} is too small`);
      if (this.buffered < 4 + length) break;
      const all = this.take(4 + length);
      frames.push(all.subarray(4));
    }
    return frames;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n) return this.chunks[0]!;
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined;
  }

  private take(n: number): Buffer {
    let first = this.chunks[0]!;
    if (first.length < n) {
      first = Buffer.concat(this.chunks);
      this.chunks = [first];
    }
    const out = first.subarray(0, n);
    const rest = first.subarray(n);
    if (rest.length > 0) this.chunks[0] = rest;
    else this.chunks.shift();
    this.buffered -= n;
    return out;
  }
}
