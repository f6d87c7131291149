/**
 * The gRPC-over-HTTP/2 wire format, shared by the broker's server and the SDK's client: length-prefixed
 * messages (1 byte compressed flag, 4 bytes big-endian length, the bytes), `grpc-timeout`,
 * `grpc-encoding` (identity and gzip, inflation bounded), and the percent-encoding of `grpc-message`.
 * See https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md. No RocketMQ and no I/O here.
 */
import { gunzip, gzip } from 'node:zlib';
import { GrpcStatus } from '../../common/codes.js';

export { GrpcStatus };

export const GRPC_CONTENT_TYPE = 'application/grpc';
/** What both sides accept (`grpc-accept-encoding`). */
export const ACCEPT_ENCODING = 'identity,gzip';

/** A failure that travels as a gRPC status (trailers), not as a body status. */
export class GrpcError extends Error {
  override readonly name = 'GrpcError';
  constructor(
    readonly code: GrpcStatus,
    message: string,
  ) {
    super(message);
  }
}

/** Why an inbound message was refused before it was decoded. */
export type LimitKind = 'message-too-large' | 'inbound-budget' | 'malformed';

export class LimitError extends Error {
  override readonly name = 'LimitError';
  constructor(
    readonly kind: LimitKind,
    message: string,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------------
// Length-prefixed messages

/** One message with its 5-byte prefix (uncompressed). */
export function frameMessage(payload: Uint8Array): Buffer {
  const out = prefixedBuffer(payload.length);
  out.set(payload, 5);
  return out;
}

/**
 * A message its encoder wrote after its 5-byte prefix (`prefixedBuffer`), sent as it is: one copy
 * of the bytes fewer than `frameMessage` makes (each copy is garbage the collector must account for).
 */
export class PrefixedMessage {
  constructor(readonly bytes: Buffer) {}
}

/** A buffer for a message of `size` bytes, its prefix (uncompressed, `size`) written; the message goes from byte 5. */
export function prefixedBuffer(size: number): Buffer {
  const out = Buffer.allocUnsafe(5 + size);
  out[0] = 0;
  out.writeUInt32BE(size, 1);
  return out;
}

/** Several messages, each with its prefix, in one buffer: one write, as few DATA frames as fit. */
export function frameMessages(payloads: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const p of payloads) total += 5 + p.length;
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const p of payloads) {
    out[at] = 0;
    out.writeUInt32BE(p.length, at + 1);
    out.set(p, at + 5);
    at += 5 + p.length;
  }
  return out;
}

/** A received message: its bytes and whether they are compressed with the stream's encoding. */
export interface RawMessage {
  compressed: boolean;
  bytes: Buffer;
}

/**
 * Splits a stream of DATA chunks into messages. The declared length of each message is checked
 * against `maxMessageBytes` as soon as its 5-byte prefix arrives, and `reserve` is asked for the bytes
 * before any of them is buffered, so an oversized or over-budget message costs nothing to refuse.
 */
export class MessageReader {
  private head = Buffer.alloc(5);
  private headLength = 0;
  private body: Buffer | null = null;
  private bodyLength = 0;
  private failed = false;

  constructor(
    private readonly maxMessageBytes: number,
    private readonly onMessage: (m: RawMessage) => void,
    /** Asked before buffering a message of `bytes`; throws a LimitError to refuse. */
    private readonly reserve: (bytes: number) => void = () => {},
  ) {}

  /** Feed a chunk; throws LimitError (and ignores everything after) when a limit is passed. */
  push(chunk: Buffer): void {
    if (this.failed) return;
    let at = 0;
    const n = chunk.length;
    while (at < n) {
      if (this.body === null) {
        // Fast path: a whole message in this chunk, prefix included.
        if (this.headLength === 0 && n - at >= 5) {
          const length = chunk.readUInt32BE(at + 1);
          const compressed = chunk[at] !== 0;
          this.check(length, chunk[at]!);
          if (n - at - 5 >= length) {
            this.onMessage({ compressed, bytes: chunk.subarray(at + 5, at + 5 + length) });
            at += 5 + length;
            continue;
          }
          this.head[0] = chunk[at]!;
          this.startBody(length);
          at += 5;
          continue;
        }
        const take = Math.min(5 - this.headLength, n - at);
        chunk.copy(this.head, this.headLength, at, at + take);
        this.headLength += take;
        at += take;
        if (this.headLength < 5) return;
        const length = this.head.readUInt32BE(1);
        this.check(length, this.head[0]!);
        this.startBody(length);
        if (length === 0) this.finishBody();
        continue;
      }
      const take = Math.min(this.body.length - this.bodyLength, n - at);
      chunk.copy(this.body, this.bodyLength, at, at + take);
      this.bodyLength += take;
      at += take;
      if (this.bodyLength === this.body.length) this.finishBody();
    }
  }

  /** Whether a message is partly received (a stream that ends now was cut short). */
  get partial(): boolean {
    return this.headLength > 0 || this.body !== null;
  }

  private check(length: number, flag: number): void {
    if (flag > 1) {
      this.failed = true;
      throw new LimitError('malformed', `invalid compressed flag ${flag}`);
    }
    if (length > this.maxMessageBytes) {
      this.failed = true;
      throw new LimitError(
        'message-too-large',
        `message of ${length} bytes exceeds the limit of ${this.maxMessageBytes} bytes`,
      );
    }
    try {
      this.reserve(length);
    } catch (err) {
      this.failed = true;
      throw err;
    }
  }

  private startBody(length: number): void {
    this.body = Buffer.allocUnsafe(length);
    this.bodyLength = 0;
  }

  private finishBody(): void {
    const bytes = this.body!;
    const compressed = this.head[0] !== 0;
    this.body = null;
    this.headLength = 0;
    this.bodyLength = 0;
    this.onMessage({ compressed, bytes });
  }
}

// ---------------------------------------------------------------------------------------------------
// Compression

/** Whether an encoding named by `grpc-encoding` can be read. */
export function isSupportedEncoding(encoding: string | undefined): boolean {
  return encoding === undefined || encoding === 'identity' || encoding === 'gzip';
}

/**
 * Inflate a gzip-compressed message, never producing more than `maxBytes` (zlib stops there, so a
 * small bomb costs at most `maxBytes` of output and the time to make it, off the event loop).
 */
export function inflate(bytes: Buffer, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // maxOutputLength must be ≥ 1; one byte more than allowed tells "too large" from "exactly full".
    gunzip(bytes, { maxOutputLength: maxBytes + 1 }, (err, out) => {
      if (err) {
        if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
          reject(new LimitError('message-too-large', `inflated message exceeds ${maxBytes} bytes`));
        } else reject(new LimitError('malformed', `cannot inflate the message: ${err.message}`));
      } else if (out.length > maxBytes) {
        reject(new LimitError('message-too-large', `inflated message exceeds ${maxBytes} bytes`));
      } else resolve(out);
    });
  });
}

export function deflate(bytes: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => gzip(bytes, (err, out) => (err ? reject(err) : resolve(out))));
}

// ---------------------------------------------------------------------------------------------------
// grpc-timeout

const TIMEOUT_UNITS: Record<string, number> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000001,
};

/** `grpc-timeout` → milliseconds; undefined when absent; throws GrpcError when malformed. */
export function parseTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (!m) throw new GrpcError(GrpcStatus.INTERNAL, `malformed grpc-timeout "${value}"`);
  return Number(m[1]) * TIMEOUT_UNITS[m[2]!]!;
}

/** The longest delay a timer (`setTimeout`) can hold. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The deadline (ms since the epoch) a `grpc-timeout` gives a call started `now`: Infinity when there
 * is none, and also when it is too far for a timer to hold — the official Java client opens Telemetry
 * with 60 × 365 days (`31536000M`), which must mean "no deadline", never "already expired".
 */
export function deadlineOf(timeoutMs: number | undefined, now: number): number {
  return timeoutMs === undefined || timeoutMs > MAX_TIMER_MS ? Infinity : now + timeoutMs;
}

/** Milliseconds → `grpc-timeout` (at most 8 digits, as the protocol requires). */
export function formatTimeout(ms: number): string {
  const t = Math.max(0, Math.ceil(ms));
  if (t < 1e8) return `${t}m`;
  const s = Math.ceil(t / 1000);
  if (s < 1e8) return `${s}S`;
  return `${Math.min(99_999_999, Math.ceil(s / 3600))}H`;
}

// ---------------------------------------------------------------------------------------------------
// grpc-message

/** Percent-encode a status message as the protocol asks (printable ASCII except '%' stays). */
export function encodeMessage(message: string): string {
  let plain = true;
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return message;
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte < 0x20 || byte > 0x7e || byte === 0x25
        ? `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
        : String.fromCharCode(byte);
  }
  return out;
}

export function decodeMessage(value: string | undefined): string {
  if (!value) return '';
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
