/**
 * HTTP/2 framing (RFC 9113 §4, §6): the frame types, flags, error codes and settings this project's
 * lean HTTP/2 endpoints use, builders for the frames they send, and an incremental reader that cuts
 * a byte stream into frames without copying their payloads.
 */

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  /** DATA, HEADERS */
  END_STREAM: 0x1,
  /** SETTINGS, PING */
  ACK: 0x1,
  /** HEADERS, CONTINUATION */
  END_HEADERS: 0x4,
  /** DATA, HEADERS */
  PADDED: 0x8,
  /** HEADERS */
  PRIORITY: 0x20,
} as const;

export const H2Error = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** What every client sends first. */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FRAME_HEADER_BYTES = 9;
/** The initial SETTINGS_MAX_FRAME_SIZE and its lower bound. */
export const DEFAULT_MAX_FRAME_SIZE = 16_384;
/** SETTINGS_MAX_FRAME_SIZE's upper bound. */
export const MAX_ALLOWED_FRAME_SIZE = 16_777_215;
/** The initial window of a stream and of the connection. */
export const DEFAULT_WINDOW = 65_535;
/** Largest flow-control window (2^31 - 1). */
export const MAX_WINDOW = 2_147_483_647;

/** Write a frame header at `at` of `out`. */
export function writeFrameHeader(
  out: Buffer,
  at: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  out[at] = length >>> 16;
  out[at + 1] = (length >>> 8) & 0xff;
  out[at + 2] = length & 0xff;
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(streamId, at + 5);
}

/** A frame with the payload copied after its header (for small payloads). */
export function frame(type: number, flags: number, streamId: number, payload?: Uint8Array): Buffer {
  const length = payload ? payload.length : 0;
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  writeFrameHeader(out, 0, length, type, flags, streamId);
  if (payload) out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/** Only a frame's header (its payload goes out as a separate chunk). */
export function frameHeader(length: number, type: number, flags: number, streamId: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  writeFrameHeader(out, 0, length, type, flags, streamId);
  return out;
}

export function settingsFrame(settings: readonly (readonly [number, number])[]): Buffer {
  const payload = Buffer.allocUnsafe(settings.length * 6);
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6);
    payload.writeUInt32BE(value, i * 6 + 2);
  });
  return frame(FrameType.SETTINGS, 0, 0, payload);
}

export const SETTINGS_ACK = frame(FrameType.SETTINGS, Flag.ACK, 0);

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 4);
  writeFrameHeader(out, 0, 4, FrameType.WINDOW_UPDATE, 0, streamId);
  out.writeUInt32BE(increment, FRAME_HEADER_BYTES);
  return out;
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 4);
  writeFrameHeader(out, 0, 4, FrameType.RST_STREAM, 0, streamId);
  out.writeUInt32BE(code, FRAME_HEADER_BYTES);
  return out;
}

export function goawayFrame(lastStreamId: number, code: number, debug = ''): Buffer {
  const text = Buffer.from(debug, 'utf8');
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 8 + text.length);
  writeFrameHeader(out, 0, 8 + text.length, FrameType.GOAWAY, 0, 0);
  out.writeUInt32BE(lastStreamId, FRAME_HEADER_BYTES);
  out.writeUInt32BE(code, FRAME_HEADER_BYTES + 4);
  text.copy(out, FRAME_HEADER_BYTES + 8);
  return out;
}

export function pingFrame(payload: Uint8Array, ack: boolean): Buffer {
  return frame(FrameType.PING, ack ? Flag.ACK : 0, 0, payload);
}

/** A connection error found while reading frames: the connection ends with GOAWAY(code). */
export class H2ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export type FrameListener = (type: number, flags: number, streamId: number, payload: Buffer) => void;

/**
 * Cuts bytes into frames. A frame that lies within one received chunk (the usual case for small
 * ones) is handed out as a view of it; one spread over several chunks is copied once, when its last
 * byte arrives, and only its own bytes: the frames after it in that chunk are views again. Node
 * never reuses a chunk it handed out, so a listener may keep a view.
 */
export class FrameReader {
  /** The start of a frame not yet complete, as received (views of the chunks). */
  private parts: Buffer[] = [];
  private partsBytes = 0;
  /** Bytes the frame in `parts` needs in all (header included), once its header is known. */
  private need = 0;

  constructor(
    /** Largest payload accepted (our SETTINGS_MAX_FRAME_SIZE). */
    private readonly maxFrameSize: number,
    private readonly onFrame: FrameListener,
  ) {}

  /** Bytes received that do not yet make a whole frame. */
  get buffered(): number {
    return this.partsBytes;
  }

  /** Feed received bytes; calls the listener once per whole frame. Throws H2ConnectionError. */
  push(chunk: Buffer): void {
    let p = 0;
    if (this.partsBytes > 0) {
      p = this.completeHeld(chunk);
      if (p < 0) return;
    }
    const end = chunk.length;
    while (end - p >= FRAME_HEADER_BYTES) {
      const length = this.lengthAt(chunk, p);
      if (end - p - FRAME_HEADER_BYTES < length) break;
      p = this.emit(chunk, p, length);
    }
    if (p < end) {
      const rest = chunk.subarray(p);
      this.parts = [rest];
      this.partsBytes = rest.length;
      this.need = rest.length >= FRAME_HEADER_BYTES ? FRAME_HEADER_BYTES + this.lengthAt(rest, 0) : 0;
    }
  }

  /**
   * Add `chunk` to the frame begun in `parts`. Once the frame is whole, hand it out (copied from
   * its pieces) and return where the rest of `chunk` begins; -1 while the frame still needs more.
   */
  private completeHeld(chunk: Buffer): number {
    const held = this.partsBytes;
    if (this.need === 0) {
      if (held + chunk.length < FRAME_HEADER_BYTES) {
        this.parts.push(chunk);
        this.partsBytes += chunk.length;
        return -1;
      }
      const head = Buffer.concat([...this.parts, chunk.subarray(0, FRAME_HEADER_BYTES - held)]);
      this.need = FRAME_HEADER_BYTES + this.lengthAt(head, 0);
    }
    if (held + chunk.length < this.need) {
      this.parts.push(chunk);
      this.partsBytes += chunk.length;
      return -1;
    }
    const used = this.need - held;
    this.parts.push(chunk.subarray(0, used));
    const whole = Buffer.concat(this.parts, this.need);
    this.parts = [];
    this.partsBytes = 0;
    this.need = 0;
    this.emit(whole, 0, whole.length - FRAME_HEADER_BYTES);
    return used;
  }

  /** Hand out the frame at `p` of `buf` (its payload `length` bytes); returns where it ends. */
  private emit(buf: Buffer, p: number, length: number): number {
    const type = buf[p + 3]!;
    const flags = buf[p + 4]!;
    const streamId = buf.readUInt32BE(p + 5) & 0x7fffffff;
    const start = p + FRAME_HEADER_BYTES;
    this.onFrame(type, flags, streamId, buf.subarray(start, start + length));
    return start + length;
  }

  /** A frame's payload length, checked against the limit. */
  private lengthAt(buf: Buffer, p: number): number {
    const length = (buf[p]! << 16) | (buf[p + 1]! << 8) | buf[p + 2]!;
    if (length > this.maxFrameSize) {
      throw new H2ConnectionError(
        H2Error.FRAME_SIZE_ERROR,
        `a frame of ${length} bytes (max ${this.maxFrameSize})`,
      );
    }
    return length;
  }
}
