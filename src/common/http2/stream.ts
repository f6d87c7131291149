/**
 * One request stream of an HTTP/2 connection (connection.ts), either side: the DATA received (held
 * back while paused, the window given back as the reader takes it), header blocks after the first
 * (a response and its trailers, on the client), and what this side sends — HEADERS, DATA cut to the
 * peer's frame size and windows (what does not fit waits here), trailers after the last byte of DATA
 * — with the stream's states of RFC 9113 §5.1 reduced to the two ends: the stream closes once both
 * sides ended it, or either reset it. A client's request beyond the server's stream limit waits here
 * (id 0) until the connection opens it.
 */
import {
  Flag,
  FrameType,
  H2Error,
  MAX_WINDOW,
  frame,
  frameHeader,
  rstStreamFrame,
  windowUpdateFrame,
} from './frames.js';
import type { H2Connection } from './connection.js';

const EMPTY = Buffer.alloc(0);

export class H2Stream {
  /** Request bytes (DATA payloads without padding), in order. */
  onData: ((chunk: Buffer) => void) | undefined;
  /** The client ended its side (END_STREAM). */
  onEnd: (() => void) | undefined;
  /** Closed: both sides ended, a reset either way, or the connection went away. */
  onClose: (() => void) | undefined;
  /** Every byte that waited for window has been handed to the socket. */
  onDrain: (() => void) | undefined;
  /** Client: the response's headers, then its trailers (`endStream` set on the last block). */
  onHeaders: ((fields: Record<string, string>, endStream: boolean) => void) | undefined;
  /** The code of the peer's RST_STREAM (REFUSED_STREAM too for requests a GOAWAY left unprocessed). */
  resetCode: number | undefined;

  remoteEnded = false;
  localEnded = false;
  closed = false;
  /** The client reset the stream (or the connection dropped) before both sides ended it. */
  cancelled = false;

  /** The request's content-length (-1: none; -2: not a number, refused at the first DATA or end). */
  expectedLength = -1;
  private receivedBytes = 0;
  private paused = false;
  private held: Buffer[] | undefined;
  private heldEnd = false;
  private recvWindow: number;
  private recvUnacked = 0;
  private sendWindow: number;
  private queue: Buffer[] = [];
  /** DATA bytes waiting for window. */
  queuedBytes = 0;
  private endAfterQueue = false;
  private trailersAfterQueue: Buffer | undefined;
  private opening: { headers: Record<string, string>; endStream: boolean } | undefined;

  constructor(
    private readonly conn: H2Connection,
    /** 0 until a waiting client request is opened. */
    public id: number,
    sendWindow: number,
    recvWindow: number,
  ) {
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
  }

  // ---- reading ----------------------------------------------------------------------------------

  /** Stop handing DATA to `onData`; the client stops once the stream's window is used up. */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const held = this.held;
    this.held = undefined;
    if (held) {
      for (let i = 0; i < held.length; i++) {
        if (this.paused || this.closed) {
          this.held = held.slice(i).concat(this.held ?? []);
          return;
        }
        this.take(held[i]!);
      }
    }
    if (this.heldEnd && !this.paused && !this.closed) {
      this.heldEnd = false;
      this.onEnd?.();
      if (this.localEnded) this.close(false);
    }
  }

  /** @internal a header block after the first. */
  receiveHeaders(fields: Record<string, string>, endStream: boolean): void {
    this.onHeaders?.(fields, endStream);
    if (endStream && !this.closed) this.receive(EMPTY, true);
  }

  /** @internal received DATA is within this stream's window. */
  takeWindow(bytes: number): boolean {
    this.recvWindow -= bytes;
    return this.recvWindow >= 0;
  }

  /** @internal DATA (maybe empty) and whether it ends the client's side. */
  receive(data: Buffer, end: boolean): void {
    if (this.expectedLength !== -1) {
      this.receivedBytes += data.length;
      if (this.receivedBytes > this.expectedLength || (end && this.receivedBytes !== this.expectedLength)) {
        this.reset(H2Error.PROTOCOL_ERROR); // RFC 9113 §8.1.1: content-length must match the DATA
        return;
      }
    }
    if (end) this.remoteEnded = true;
    if (this.paused) {
      if (data.length > 0) (this.held ??= []).push(data);
      if (end) this.heldEnd = true;
      return;
    }
    if (data.length > 0) this.take(data);
    if (end && !this.closed) {
      this.onEnd?.();
      if (this.localEnded) this.close(false);
    }
  }

  private take(data: Buffer): void {
    this.conn.consumed(data.length);
    this.recvUnacked += data.length;
    if (!this.remoteEnded && this.recvUnacked >= this.conn.streamWindow / 2) {
      this.conn.push(windowUpdateFrame(this.id, this.recvUnacked));
      this.recvWindow += this.recvUnacked;
      this.recvUnacked = 0;
    }
    this.onData?.(data);
  }

  // ---- answering --------------------------------------------------------------------------------

  /** The answer's headers (an encoded block); `endStream` for a headers-only answer. */
  respond(block: Buffer, endStream: boolean): void {
    if (this.localEnded) return;
    this.writeHeaders(block, endStream);
    if (endStream) this.endLocal();
  }

  /** Bytes to send; with `end`, the last (this side of the stream ends with them). */
  write(data: Buffer, end = false): void {
    if (this.localEnded) return;
    if (this.queuedBytes > 0 || this.id === 0) {
      this.enqueue(data);
      if (end) this.endAfterQueue = true;
      return;
    }
    const sent = this.sendData(data, end);
    if (sent < data.length) {
      this.enqueue(data.subarray(sent));
      if (end) this.endAfterQueue = true;
      this.conn.block(this);
    } else if (end) this.endLocal();
  }

  /** Trailers (an encoded block), after every byte written: they end this side. */
  trailers(block: Buffer): void {
    if (this.localEnded) return;
    if (this.queuedBytes > 0) {
      this.trailersAfterQueue = block;
      this.endAfterQueue = false;
      return;
    }
    this.writeHeaders(block, true);
    this.endLocal();
  }

  /** Reset the stream (RST_STREAM with `code`) and close it. */
  reset(code: number): void {
    if (this.closed) return;
    if (this.id !== 0) {
      this.conn.push(rstStreamFrame(this.id, code));
      if (!this.remoteEnded) this.conn.resetSent(this.id);
    }
    this.close(true);
  }

  /** @internal a client request that waits for the server's stream limit. */
  awaitOpen(headers: Record<string, string>, endStream: boolean): void {
    this.opening = { headers, endStream };
  }

  /** @internal */
  takeOpening(): { headers: Record<string, string>; endStream: boolean } {
    const o = this.opening!;
    this.opening = undefined;
    return o;
  }

  /** @internal the request got its id: its headers, then whatever was written meanwhile. */
  opened(block: Buffer, endStream: boolean): void {
    this.writeHeaders(block, endStream);
    if (endStream) this.endLocal();
    else if (this.queue.length > 0 || this.endAfterQueue) this.sendQueued();
  }

  /** @internal the window to send grew by `delta` (may be negative: SETTINGS); false on overflow. */
  addSendWindow(delta: number): boolean {
    this.sendWindow += delta;
    return this.sendWindow <= MAX_WINDOW;
  }

  /** @internal window opened: send what waits. */
  sendQueued(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      const last = this.queue.length === 1;
      const n = this.sendData(head, last && this.endAfterQueue);
      this.queuedBytes -= n;
      this.conn.queuedBytes -= n;
      if (n < head.length) {
        this.queue[0] = head.subarray(n);
        return;
      }
      this.queue.shift();
    }
    this.conn.unblock(this);
    if (this.endAfterQueue) this.endLocal();
    else if (this.trailersAfterQueue) {
      const block = this.trailersAfterQueue;
      this.trailersAfterQueue = undefined;
      this.writeHeaders(block, true);
      this.endLocal();
    }
    this.onDrain?.();
  }

  /** @internal the peer reset the stream. */
  remoteReset(code: number): void {
    this.resetCode ??= code;
    this.close(true);
  }

  /** @internal the connection closed under the stream. */
  connectionGone(): void {
    if (this.closed) return;
    this.closed = true;
    this.cancelled = !(this.localEnded && this.remoteEnded);
    this.release();
    this.detach();
  }

  /** DATA frames within both windows and the peer's frame size; returns the bytes sent. */
  private sendData(data: Buffer, end: boolean): number {
    const conn = this.conn;
    const length = data.length;
    if (length === 0) {
      if (end) conn.push(frameHeader(0, FrameType.DATA, Flag.END_STREAM, this.id));
      return 0;
    }
    let p = 0;
    while (p < length) {
      const room = Math.min(this.sendWindow, conn.sendWindow, conn.peerMaxFrameSize);
      if (room <= 0) break;
      const n = Math.min(room, length - p);
      const flags = end && p + n === length ? Flag.END_STREAM : 0;
      conn.push(frameHeader(n, FrameType.DATA, flags, this.id));
      conn.push(p === 0 && n === length ? data : data.subarray(p, p + n));
      p += n;
      this.sendWindow -= n;
      conn.sendWindow -= n;
    }
    return p;
  }

  private enqueue(data: Buffer): void {
    this.queue.push(data);
    this.queuedBytes += data.length;
    this.conn.queuedBytes += data.length;
  }

  private writeHeaders(block: Buffer, endStream: boolean): void {
    const max = this.conn.peerMaxFrameSize;
    const end = endStream ? Flag.END_STREAM : 0;
    if (block.length <= max) {
      this.conn.push(frame(FrameType.HEADERS, Flag.END_HEADERS | end, this.id, block));
      return;
    }
    this.conn.push(frame(FrameType.HEADERS, end, this.id, block.subarray(0, max)));
    for (let p = max; p < block.length; p += max) {
      const last = p + max >= block.length;
      this.conn.push(
        frame(FrameType.CONTINUATION, last ? Flag.END_HEADERS : 0, this.id, block.subarray(p, p + max)),
      );
    }
  }

  private endLocal(): void {
    this.localEnded = true;
    // Answered and the client is done sending: anything it sent still held back is moot.
    if (this.remoteEnded) this.close(false);
  }

  private close(cancelled: boolean): void {
    if (this.closed) return;
    this.closed = true;
    this.cancelled = cancelled;
    this.localEnded = true;
    this.remoteEnded = true;
    this.release();
    this.conn.streamClosed(this);
    this.detach();
  }

  /**
   * Closed: let go of the handlers, and through them of what they collected (an answer's messages),
   * then call the close handler. A stream that lived through a full collection is old; its handlers
   * would keep everything they reach past every young collection until the next full one
   * (docs/benchmarks.md, twenty-fourth session).
   */
  private detach(): void {
    const onClose = this.onClose;
    this.onData = undefined;
    this.onEnd = undefined;
    this.onHeaders = undefined;
    this.onDrain = undefined;
    this.onClose = undefined;
    onClose?.();
  }

  private release(): void {
    this.conn.queuedBytes -= this.queuedBytes;
    this.queuedBytes = 0;
    this.queue = [];
    // DATA held back while paused was never read: give its bytes back to the connection's window.
    if (this.held) for (const d of this.held) this.conn.consumed(d.length);
    this.held = undefined;
  }
}
