/**
 * One gRPC call on the server: the request's headers, peer and deadline, an AbortSignal that fires when
 * the client cancels (RST_STREAM), the connection drops, the deadline passes or the server shuts down,
 * and the ways to answer — one message, many messages in one write, or a stream of writes that respects
 * HTTP/2 flow control — ending with `grpc-status` trailers.
 */
import type { CancelSignal } from '../../common/cancel-signal.js';
import { HpackEncoder } from '../../common/http2/hpack.js';
import type { TLSSocket } from 'node:tls';
import {
  ACCEPT_ENCODING,
  encodeMessage,
  frameMessage,
  frameMessages,
  GRPC_CONTENT_TYPE,
  GrpcStatus,
} from './grpc-wire.js';
import type { H2Stream } from '../../common/http2/stream.js';

/** Who is calling: enough for logs, sessions and an authenticator. */
export interface PeerInfo {
  /** Unique per connection within one server: ties client sessions to the connection they came on. */
  readonly connectionId: string;
  /** `address:port` of the client. */
  readonly remote: string;
  readonly address: string;
  readonly port: number;
  /** Whether the connection is TLS. */
  readonly secure: boolean;
  /** The TLS socket (peer certificate, protocol, cipher) when secure. */
  readonly tlsSocket?: TLSSocket;
}

/** Why a call's signal fired. */
export type CallAbortReason = 'cancelled' | 'deadline' | 'shutdown';

export class CallAbortedError extends Error {
  override readonly name = 'AbortError';
  constructor(readonly reason: CallAbortReason) {
    super(`the call was aborted (${reason})`);
  }
}

// Raw strings, not Huffman: a few bytes more, but every client reads them without decoding.
const hpack = new HpackEncoder({ huffman: false });
/** The answer's headers, encoded once. */
const RESPONSE_HEADERS = hpack.encode({
  ':status': '200',
  'content-type': GRPC_CONTENT_TYPE,
  'grpc-accept-encoding': ACCEPT_ENCODING,
});
const OK_TRAILERS = hpack.encode({ 'grpc-status': String(GrpcStatus.OK) });

/** Trailers for `code` (OK without a message is encoded once). */
function trailersBlock(code: GrpcStatus, message: string): Buffer {
  if (code === GrpcStatus.OK && !message) return OK_TRAILERS;
  const fields: Record<string, string> = { 'grpc-status': String(code) };
  if (message) fields['grpc-message'] = encodeMessage(message);
  return hpack.encode(fields);
}

/** A trailers-only answer (RFC: gRPC over HTTP/2, "Trailers-Only"): status 200 and the status fields. */
export function trailersOnlyBlock(code: GrpcStatus, message: string, extra?: Record<string, string>): Buffer {
  const fields: Record<string, string> = {
    ':status': '200',
    'content-type': GRPC_CONTENT_TYPE,
    'grpc-accept-encoding': ACCEPT_ENCODING,
    ...extra,
    'grpc-status': String(code),
  };
  if (message) fields['grpc-message'] = encodeMessage(message);
  return hpack.encode(fields);
}

/** Bytes a call may have waiting for the client's flow-control window before `write` says "wait". */
const CALL_HIGH_WATER_MARK = 256 * 1024;

/** What the server tracks for the connection a call belongs to. */
export interface CallOwner {
  callFinished(call: ServerCall): void;
}

export class ServerCall {
  private controller: AbortController | undefined;
  private light: CallSignal | undefined;
  private timer: NodeJS.Timeout | undefined;
  private headersSent = false;
  private finished = false;
  private closed = false;
  private drainWaiters: (() => void)[] = [];
  private messageListener: ((m: Buffer) => void) | undefined;
  private halfCloseListener: (() => void) | undefined;
  private closeListeners: (() => void)[] = [];
  private answeredListeners: (() => void)[] | undefined;
  private answered = false;
  private abortReason: CallAbortReason | undefined;

  constructor(
    readonly stream: H2Stream,
    /** e.g. `/apache.rocketmq.v2.MessagingService/SendMessage` */
    readonly path: string,
    /** The method name (the last path segment). */
    readonly method: string,
    /** The request's headers (lower-case names). */
    readonly headers: Readonly<Record<string, string>>,
    readonly peer: PeerInfo,
    /** ms since the epoch, or Infinity. */
    readonly deadline: number,
    private readonly owner: CallOwner,
  ) {}

  /** A header as one string ('' when absent). */
  header(name: string): string {
    return this.headers[name] ?? '';
  }

  /**
   * Fires when the call can no longer be answered usefully. Created on first use, so calls that never
   * look at it pay nothing for it (nor for a deadline timer).
   */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(new CallAbortedError(this.abortReason));
      else if (this.deadline !== Infinity && !this.finished) {
        const ms = this.deadline - Date.now();
        if (ms <= 0) this.abort('deadline');
        else {
          this.timer = setTimeout(() => this.onDeadline(), Math.min(ms, 2 ** 31 - 1));
          this.timer.unref();
        }
      }
    }
    return this.controller.signal;
  }

  /**
   * The same cancellation as `signal` for long polls, without its cost: no AbortController (an
   * EventTarget) and no deadline timer per call. It fires when the call is cancelled, its connection
   * drops or the server shuts down, and reads as aborted once the deadline has passed; a handler that
   * waits must bound its wait by the deadline itself (receives and pulls cut their poll time to it).
   */
  get cancelSignal(): CancelSignal {
    return (this.light ??= new CallSignal(this));
  }

  /** Cancelled, or past its deadline. */
  get aborted(): boolean {
    return this.abortReason !== undefined || (this.deadline !== Infinity && Date.now() >= this.deadline);
  }

  /** Whether the client can still get an answer. */
  get isOpen(): boolean {
    return !this.finished && !this.closed;
  }

  /** bidi: the client's messages, in order (inflated). */
  onMessage(listener: (m: Buffer) => void): void {
    this.messageListener = listener;
  }

  /** bidi: the client finished sending. */
  onHalfClose(listener: () => void): void {
    this.halfCloseListener = listener;
  }

  /** The stream is gone (answered, cancelled or the connection dropped). */
  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  /** Once the status (trailers) has been handed to HTTP/2, or the stream is gone. */
  onAnswered(listener: () => void): void {
    if (this.answered || this.closed) listener();
    else (this.answeredListeners ??= []).push(listener);
  }

  /** Stop reading the client's messages (HTTP/2 flow control then stops the client). */
  pauseReading(): void {
    this.stream.pause();
  }

  resumeReading(): void {
    if (!this.closed) this.stream.resume();
  }

  /** Answer a unary call: one message and OK trailers. */
  sendUnary(payload: Uint8Array): void {
    this.sendFramed(frameMessage(payload));
  }

  /** Answer with every message of a streaming answer in one write, then OK trailers. */
  sendAll(payloads: readonly Uint8Array[]): void {
    this.sendFramed(frameMessages(payloads));
  }

  /** Answer with a streaming answer already gRPC-framed (length-prefixed messages) in one buffer, then OK trailers. */
  sendAllFramed(framed: Buffer): void {
    this.sendFramed(framed);
  }

  /** Streaming: one more message. Returns false when the caller should `await drain()` first. */
  write(payload: Uint8Array): boolean {
    if (!this.isOpen) return false;
    this.sendHeaders();
    this.stream.write(frameMessage(payload));
    return this.stream.queuedBytes < CALL_HIGH_WATER_MARK;
  }

  /** Resolves once this call's unsent bytes fall under the high-water mark (or the call ends). */
  drain(): Promise<void> {
    if (this.stream.queuedBytes < CALL_HIGH_WATER_MARK || !this.isOpen) return Promise.resolve();
    this.stream.onDrain ??= () => this.drained();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** Finish the call with trailers (OK unless told otherwise). */
  end(code: GrpcStatus = GrpcStatus.OK, message = ''): void {
    if (!this.isOpen) return;
    this.finished = true;
    this.clearTimer();
    if (!this.headersSent) {
      this.trailersOnly(code, message);
      return;
    }
    this.stream.trailers(trailersBlock(code, message));
    this.markAnswered();
  }

  /** Fail the call with a gRPC status (trailers-only when nothing was sent yet). */
  fail(code: GrpcStatus, message: string): void {
    this.end(code, message);
  }

  // ---- used by the server ------------------------------------------------------------------------

  /** @internal a message of a bidi call. */
  deliver(m: Buffer): void {
    this.messageListener?.(m);
  }

  /** @internal the client half-closed. */
  halfClosed(): void {
    this.halfCloseListener?.();
  }

  /** @internal the stream closed. */
  streamClosed(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.finished) this.abort('cancelled');
    this.clearTimer();
    for (const w of this.drainWaiters.splice(0)) w();
    for (const l of this.closeListeners.splice(0)) l();
    this.markAnswered();
    this.owner.callFinished(this);
  }

  /** @internal */
  abort(reason: CallAbortReason): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller?.abort(new CallAbortedError(reason));
    this.light?.fire();
    for (const w of this.drainWaiters.splice(0)) w();
  }

  private onDeadline(): void {
    this.timer = undefined;
    this.abort('deadline');
    // The client gave up at its deadline too; answer as gRPC does, and free the stream.
    if (this.isOpen) this.end(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded');
  }

  private sendFramed(framed: Buffer): void {
    if (!this.isOpen) return;
    if (this.deadline !== Infinity && Date.now() > this.deadline) {
      this.end(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded');
      return;
    }
    this.finished = true;
    this.clearTimer();
    this.sendHeaders();
    this.stream.write(framed);
    this.stream.trailers(OK_TRAILERS);
    this.markAnswered();
  }

  private sendHeaders(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.stream.respond(RESPONSE_HEADERS, false);
  }

  private trailersOnly(code: GrpcStatus, message: string): void {
    this.headersSent = true;
    this.stream.respond(trailersOnlyBlock(code, message), true);
    this.markAnswered();
  }

  private markAnswered(): void {
    this.answered = true;
    const ls = this.answeredListeners;
    this.answeredListeners = undefined;
    if (ls) for (const l of ls) l();
  }

  private drained(): void {
    if (this.stream.queuedBytes < CALL_HIGH_WATER_MARK) for (const w of this.drainWaiters.splice(0)) w();
  }

  private clearTimer(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}

/** A call's light cancellation signal (`ServerCall.cancelSignal`). */
class CallSignal implements CancelSignal {
  private listeners: (() => void)[] = [];

  constructor(private readonly call: ServerCall) {}

  get aborted(): boolean {
    return this.call.aborted;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  /** @internal the call was aborted: every listener, once. */
  fire(): void {
    const ls = this.listeners;
    this.listeners = [];
    for (const l of ls) l();
  }
}
