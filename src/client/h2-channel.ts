/**
 * The SDK's gRPC transport: one HTTP/2 connection (Vela's own, `common/http2/connection.ts`) (plaintext or TLS with ALPN h2) to one broker endpoint
 * set, dialled on first use and re-dialled after it drops, with exponential backoff between failed
 * dials; unary, server-streaming and bidi calls with `grpc-timeout` deadlines enforced locally too,
 * cancellation by AbortSignal (RST_STREAM), gzip answers inflated within the receive limit, and
 * keepalive pings that close a connection whose peer stopped answering. Failures reject with a
 * `TransportError` carrying the gRPC status, which `errors.ts` turns into the SDK's typed errors.
 *
 * It speaks bytes; `connection.ts` puts RocketMQ's protobuf messages and headers on top.
 *
 * Why one file of ~680 lines: the three call kinds, the response reader and the bidi call all run on
 * the one session this channel dials, share its failure handling (a dropped session fails every call
 * on it with the same status) and its deadline and abort plumbing; the wire format they share is
 * already apart, in protocol/transport/grpc-wire.ts.
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import tls, { type SecureContextOptions } from 'node:tls';
import { onAbort } from '../common/abort-listeners.js';
import { H2Connection } from '../common/http2/connection.js';
import { H2Error } from '../common/http2/frames.js';
import type { H2Stream } from '../common/http2/stream.js';
import { KeptKeyMap } from '../common/kept-key-map.js';
import {
  ACCEPT_ENCODING,
  decodeMessage,
  formatTimeout,
  frameMessage,
  GRPC_CONTENT_TYPE,
  GrpcStatus,
  inflate,
  LimitError,
  MessageReader,
  PrefixedMessage,
  type RawMessage,
} from '../protocol/transport/grpc-wire.js';

/** A call that failed without a body status: the gRPC status and its details (grpc-js's shape). */
export class TransportError extends Error {
  override readonly name = 'TransportError';
  constructor(
    readonly code: GrpcStatus,
    readonly details: string,
  ) {
    super(`${GrpcStatus_name(code)}: ${details}`);
  }
}

function GrpcStatus_name(code: number): string {
  return Object.entries(GrpcStatus).find(([, v]) => v === code)?.[0] ?? String(code);
}

/** TLS towards the broker: `true` verifies against the system's CAs; or give a CA, a client certificate … */
export type ClientTls =
  | boolean
  | (Pick<SecureContextOptions, 'ca' | 'cert' | 'key' | 'passphrase' | 'pfx'> & {
      /** The name checked against the certificate. @defaultValue the endpoint's host */
      servername?: string;
      /** Refuse a certificate that does not verify. @defaultValue true */
      rejectUnauthorized?: boolean;
    });

export interface ChannelOptions {
  /** Addresses to dial, in order (the first that answers is used). */
  addresses: { host: string; port: number }[];
  tls?: ClientTls;
  /** Largest answer message. */
  maxReceiveMessageBytes: number;
  /** Ping the broker this often (0: never). @defaultValue 30000 */
  keepaliveMs?: number;
  /** A connection whose ping is unanswered this long is closed. @defaultValue 10000 */
  keepaliveTimeoutMs?: number;
}

/** Backoff between failed dials: 1 s, ×1.6, at most 120 s, ±20 % jitter (gRPC's connection backoff). */
const BACKOFF = { initialMs: 1000, multiplier: 1.6, maxMs: 120_000, jitter: 0.2 };
/** A dial that takes longer than this fails (calls with a later deadline wait for the next one). */
const DIAL_TIMEOUT_MS = 20_000;
/**
 * What the broker may send on one call before this side reads it. A PullConsumer's answer of 1,024
 * 1 KiB messages is ~1.2 MB: with a 1 MiB window its tail waited for this process to read the head
 * and give the window back, which it does only between batches — the broker then idled while this
 * side worked and the reverse (W2-pull: 79,000 against 98,000 msgs/s with 8 MiB, median of nine
 * alternating runs).
 */
const STREAM_WINDOW = 8 * 1024 * 1024;
const CONNECTION_WINDOW = 16 * 1024 * 1024;
/** Answer headers the SDK accepts (SETTINGS_MAX_HEADER_LIST_SIZE). */
const MAX_HEADER_LIST_BYTES = 64 * 1024;
/** SETTINGS_MAX_FRAME_SIZE: a large answer or request goes in a few DATA frames (as windows allow). */
const MAX_FRAME_BYTES = 1024 * 1024;
/** Request headers whose values change with every call: sent as literals, never indexed. */
const VOLATILE_HEADERS: ReadonlySet<string> = new Set([
  'grpc-timeout',
  'x-mq-request-id',
  'x-mq-date-time',
  'authorization',
]);
const EMPTY = Buffer.alloc(0);

type Headers = Record<string, string>;

type Session = H2Connection;

export class H2Channel {
  private session: Session | undefined;
  private dialing: Promise<Session> | undefined;
  private failures = 0;
  private retryAt = 0;
  private lastError: TransportError | undefined;
  private closed = false;
  private readonly sessions = new Set<Session>();
  private readonly sockets = new Set<net.Socket>();
  /** Streams in progress per session (not a Map with deletes: kept-key-map.ts). */
  private readonly active = new KeptKeyMap<Session, number>();
  /** `host:port` each connection was dialled at (its requests' `:authority`). */
  private readonly authorities = new WeakMap<Session, string>();

  constructor(private readonly o: ChannelOptions) {}

  get isClosed(): boolean {
    return this.closed;
  }

  /** A unary call: the answer message's bytes. `request` is the message, or it already prefixed. */
  unary(
    path: string,
    headers: Headers,
    request: Uint8Array | PrefixedMessage,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Buffer> {
    return this.call(path, headers, request, timeoutMs, signal).then((messages) => {
      if (messages.length !== 1) {
        throw new TransportError(
          GrpcStatus.INTERNAL,
          `a unary call was answered with ${messages.length} messages`,
        );
      }
      return messages[0]!;
    });
  }

  /**
   * Run `fn` when the connected session next writes, so that calls it starts go out in the same
   * socket write (H2Connection.beforeFlush). Not connected: nothing happens (callers keep their own
   * timer).
   */
  beforeFlush(fn: () => void): void {
    const s = this.session;
    if (s && s.canRequest && !this.closed) s.beforeFlush(fn);
  }

  /** A server-streaming call read to its end: every answer message's bytes. */
  serverStream(
    path: string,
    headers: Headers,
    request: Uint8Array,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Buffer[]> {
    return this.call(path, headers, request, timeoutMs, signal);
  }

  /** A bidi call (Telemetry): messages both ways until either side ends. */
  bidi<In, Out>(path: string, headers: Headers, codec: BidiCodec<In, Out>): BidiCall<In, Out> {
    const call = new BidiCall<In, Out>(this.o.maxReceiveMessageBytes, codec);
    if (this.closed) {
      process.nextTick(() => call.fail(new TransportError(GrpcStatus.CANCELLED, 'the channel is closed')));
      return call;
    }
    this.ready(Infinity).then(
      (session) => {
        let stream: H2Stream;
        try {
          stream = this.open(session, path, headers, undefined);
        } catch (err) {
          call.fail(new TransportError(GrpcStatus.UNAVAILABLE, (err as Error).message));
          return;
        }
        call.attach(stream, () => this.untrack(session));
      },
      (err: TransportError) => call.fail(err),
    );
    return call;
  }

  /** Resolve once connected, dialling if needed; reject UNAVAILABLE after `timeoutMs`. */
  async waitForReady(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      try {
        await this.ready(deadline, true);
        return;
      } catch (err) {
        const wait = Math.min(this.retryAt, deadline) - Date.now();
        if (this.closed || Date.now() >= deadline) throw err;
        if (wait > 0) await sleep(wait, signal);
      }
    }
  }

  /** Close the connection; calls in progress fail with CANCELLED. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.sessions) s.destroy();
    for (const socket of this.sockets) socket.destroy();
    this.sessions.clear();
    this.session = undefined;
  }

  // ---- connecting -------------------------------------------------------------------------------

  /** The live session, or a dial (unless one failed recently: then UNAVAILABLE at once). */
  private ready(deadline: number, ignoreBackoff = false): Promise<Session> {
    if (this.closed) return Promise.reject(new TransportError(GrpcStatus.CANCELLED, 'the channel is closed'));
    const s = this.session;
    if (s && s.canRequest) return Promise.resolve(s);
    if (!this.dialing) {
      if (!ignoreBackoff && Date.now() < this.retryAt && this.lastError)
        return Promise.reject(this.lastError);
      this.dialing = this.dial().finally(() => (this.dialing = undefined));
      this.dialing.catch(() => {}); // each caller handles the failure; none may be left
    }
    if (deadline === Infinity) return this.dialing;
    return withDeadline(this.dialing, deadline);
  }

  private async dial(): Promise<Session> {
    let last: unknown;
    for (const a of this.o.addresses) {
      try {
        const s = await this.connect(a.host, a.port);
        this.failures = 0;
        this.retryAt = 0;
        this.lastError = undefined;
        this.session = s;
        return s;
      } catch (err) {
        last = err;
      }
    }
    this.failures++;
    const base = Math.min(BACKOFF.maxMs, BACKOFF.initialMs * BACKOFF.multiplier ** (this.failures - 1));
    this.retryAt = Date.now() + base * (1 + BACKOFF.jitter * (Math.random() * 2 - 1));
    this.lastError = new TransportError(
      GrpcStatus.UNAVAILABLE,
      `cannot connect to ${this.o.addresses.map((a) => `${a.host}:${a.port}`).join(', ')}: ${(last as Error)?.message ?? last}`,
    );
    throw this.lastError;
  }

  private connect(host: string, port: number): Promise<Session> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('the channel is closed'));
      const secure = this.o.tls;
      const socket: net.Socket = secure
        ? tls.connect({
            host,
            port,
            ALPNProtocols: ['h2'],
            minVersion: 'TLSv1.2',
            ...(net.isIP(host) ? {} : { servername: host }),
            ...(typeof secure === 'object' ? secure : {}),
          })
        : net.connect({ host, port });
      socket.setNoDelay(true);
      this.sockets.add(socket);
      let settled = false;
      let session: Session | undefined;
      const fail = (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        if (!settled) reject(err);
        settled = true;
      };
      const timer = setTimeout(
        () => fail(new Error(`no connection within ${DIAL_TIMEOUT_MS} ms`)),
        DIAL_TIMEOUT_MS,
      );
      timer.unref();
      socket.once('error', fail);
      socket.once('close', () => {
        this.sockets.delete(socket);
        fail(new Error('the connection closed before the broker spoke HTTP/2'));
      });
      const forget = () => {
        if (this.session === session) this.session = undefined;
      };
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        if (secure && (socket as tls.TLSSocket).alpnProtocol !== 'h2') {
          fail(new Error('the broker did not negotiate HTTP/2 (ALPN h2)'));
          return;
        }
        const s = new H2Connection(
          socket,
          {
            role: 'client',
            maxConcurrentStreams: 0,
            streamWindow: STREAM_WINDOW,
            connectionWindow: CONNECTION_WINDOW,
            maxHeaderListSize: MAX_HEADER_LIST_BYTES,
            maxFrameSize: MAX_FRAME_BYTES,
            volatileHeaders: VOLATILE_HEADERS,
          },
          {
            // Ready once the broker's SETTINGS arrive (as grpc-js): a port that accepts and drops the
            // connection (a TLS-only broker, a dying one) is a failed dial, subject to backoff.
            onReady: () => {
              if (settled) return;
              settled = true;
              clearTimeout(timer);
              socket.off('error', fail);
              this.sessions.add(s);
              this.keepalive(s);
              resolve(s);
            },
            // After GOAWAY no new streams go to this connection; the ones open finish on it.
            onGoaway: forget,
            onClose: () => {
              forget();
              this.sessions.delete(s);
            },
            onProtocolError: () => {},
          },
        );
        session = s;
        this.authorities.set(s, `${host.includes(':') ? `[${host}]` : host}:${port}`);
      });
      // An idle connection does not keep the process alive; one with calls in progress does.
      socket.unref();
    });
  }

  private keepalive(session: Session): void {
    const every = this.o.keepaliveMs ?? 30_000;
    if (every <= 0) return;
    const timeout = this.o.keepaliveTimeoutMs ?? 10_000;
    const timer = setInterval(() => {
      if (session.closed) return;
      const deadline = setTimeout(() => session.destroy(), timeout);
      deadline.unref();
      session.ping((err) => {
        clearTimeout(deadline);
        if (err) session.destroy();
      });
    }, every);
    timer.unref();
    session.socket.once('close', () => clearInterval(timer));
  }

  // ---- calls ------------------------------------------------------------------------------------

  /** Count a stream as in progress on its connection (ref'd while any is). */
  private track(session: Session): void {
    const n = this.active.get(session) ?? 0;
    this.active.set(session, n + 1);
    if (n === 0) session.socket.ref();
  }

  private untrack(session: Session): void {
    const left = (this.active.get(session) ?? 1) - 1;
    if (left > 0) this.active.set(session, left);
    else {
      this.active.delete(session);
      if (!session.socket.destroyed) session.socket.unref();
    }
  }

  /** Open a call's stream; `onClose` runs once it closes (after the stream's own close listener). */
  private open(session: Session, path: string, headers: Headers, timeoutMs: number | undefined): H2Stream {
    const h: Headers = {
      ':method': 'POST',
      ':scheme': this.o.tls ? 'https' : 'http',
      ':path': path,
      ':authority': this.authorities.get(session) ?? 'localhost',
      'content-type': GRPC_CONTENT_TYPE,
      te: 'trailers',
      'grpc-accept-encoding': ACCEPT_ENCODING,
      ...headers,
    };
    if (timeoutMs !== undefined) h['grpc-timeout'] = formatTimeout(timeoutMs);
    const stream = session.request(h);
    this.track(session);
    return stream;
  }

  private call(
    path: string,
    headers: Headers,
    request: Uint8Array | PrefixedMessage,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Buffer[]> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const deadline = Date.now() + timeoutMs;
    const s = this.session;
    if (s && s.canRequest && !this.closed) {
      return this.run(s, path, headers, request, deadline, signal);
    }
    return this.ready(deadline).then(
      (session) => this.run(session, path, headers, request, deadline, signal),
      (err: unknown) => {
        if (signal?.aborted) throw signal.reason;
        throw err instanceof TransportError
          ? err
          : new TransportError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded while connecting');
      },
    );
  }

  private run(
    session: Session,
    path: string,
    headers: Headers,
    request: Uint8Array | PrefixedMessage,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<Buffer[]> {
    return new Promise<Buffer[]>((resolve, reject) => {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        reject(new TransportError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded'));
        return;
      }
      let stream: H2Stream;
      try {
        stream = this.open(session, path, headers, remaining);
      } catch (err) {
        if (this.session === session) this.session = undefined;
        reject(new TransportError(GrpcStatus.UNAVAILABLE, (err as Error).message));
        return;
      }
      const reader = new ResponseReader(this.o.maxReceiveMessageBytes);
      let settled = false;
      const finish = (err: unknown, messages?: Buffer[]) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        unlisten?.();
        if (err) reject(err);
        else resolve(messages!);
      };
      // Settled before the reset: resetting closes the stream at once, which would settle it too.
      const timer = setTimeout(() => {
        finish(new TransportError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded'));
        stream.reset(H2Error.CANCEL);
      }, remaining);
      // Not addEventListener: the signal (a receive loop's, a caller's) outlives its calls (abort-listeners.ts).
      const unlisten = signal
        ? onAbort(signal, () => {
            finish(signal.reason);
            stream.reset(H2Error.CANCEL);
          })
        : undefined;
      reader.bind(stream, (err, messages) => {
        this.untrack(session);
        finish(err, messages);
      });
      stream.write(request instanceof PrefixedMessage ? request.bytes : frameMessage(request), true);
    });
  }
}

/** Reads one call's answer: headers, length-prefixed messages (inflating gzip) and the status. */
class ResponseReader {
  private readonly messages: RawMessage[] = [];
  private encoding: string | undefined;
  private status: { code: GrpcStatus; message: string } | undefined;
  private failure: TransportError | undefined;

  constructor(private readonly maxBytes: number) {}

  /** Collect the whole answer; `done` once the stream closes. */
  bind(stream: H2Stream, done: (err: unknown, messages?: Buffer[]) => void): void {
    const reader = new MessageReader(this.maxBytes, (m) => this.messages.push(m));
    this.listen(
      stream,
      (chunk) => reader.push(chunk),
      () => {
        if (this.failure) return done(this.failure);
        const st = this.status ?? statusOfClose(stream);
        if (st.code !== GrpcStatus.OK) return done(new TransportError(st.code, st.message));
        if (reader.partial) return done(new TransportError(GrpcStatus.INTERNAL, 'the answer was cut short'));
        // The usual answer is not compressed: no promise turn for it.
        // The reader may be old (it lived through a full collection): it keeps none of the answer.
        const messages = this.messages.splice(0);
        if (!messages.some((m) => m.compressed))
          return done(
            null,
            messages.map((m) => m.bytes),
          );
        this.decompress(messages).then((out) => done(null, out), done);
      },
    );
  }

  /** Shared by unary and bidi: headers, trailers, data chunks, and the close. */
  listen(stream: H2Stream, onChunk: (chunk: Buffer) => void, onClose: () => void): void {
    let responded = false;
    stream.onHeaders = (h) => {
      if (responded) {
        this.readStatus(h); // trailers
        return;
      }
      responded = true;
      const httpStatus = Number(h[':status']);
      const contentType = h['content-type'] ?? '';
      if (httpStatus !== 200) {
        this.failure ??= new TransportError(httpToGrpc(httpStatus), `HTTP status ${httpStatus}`);
      } else if (!contentType.startsWith(GRPC_CONTENT_TYPE)) {
        this.failure ??= new TransportError(GrpcStatus.UNKNOWN, `content-type ${contentType || '(none)'}`);
      }
      this.encoding = h['grpc-encoding'];
      this.readStatus(h); // trailers-only answers
    };
    stream.onData = (chunk: Buffer) => {
      if (this.failure) return;
      try {
        onChunk(chunk);
      } catch (err) {
        this.failure = new TransportError(
          err instanceof LimitError && err.kind === 'message-too-large'
            ? GrpcStatus.RESOURCE_EXHAUSTED
            : GrpcStatus.INTERNAL,
          (err as Error).message,
        );
        stream.reset(H2Error.CANCEL);
      }
    };
    stream.onClose = onClose;
  }

  decompress(messages: RawMessage[]): Promise<Buffer[]> {
    if (!messages.some((m) => m.compressed)) return Promise.resolve(messages.map((m) => m.bytes));
    if (this.encoding !== 'gzip') {
      return Promise.reject(
        new TransportError(
          GrpcStatus.INTERNAL,
          `compressed answer with grpc-encoding ${this.encoding ?? 'none'}`,
        ),
      );
    }
    return Promise.all(
      messages.map((m) => (m.compressed ? inflate(m.bytes, this.maxBytes) : Promise.resolve(m.bytes))),
    ).catch((err: unknown) => {
      throw new TransportError(GrpcStatus.RESOURCE_EXHAUSTED, (err as Error).message);
    });
  }

  get answerEncoding(): string | undefined {
    return this.encoding;
  }

  get finalStatus(): { code: GrpcStatus; message: string } | undefined {
    return this.status;
  }

  get error(): TransportError | undefined {
    return this.failure;
  }

  private readStatus(h: Record<string, string>): void {
    const st = h['grpc-status'];
    if (st === undefined || this.status) return;
    const code = Number(st);
    this.status = {
      code: (Number.isInteger(code) ? code : GrpcStatus.UNKNOWN) as GrpcStatus,
      message: decodeMessage(h['grpc-message']),
    };
  }
}

/** The status of a stream that closed without one. */
function statusOfClose(stream: H2Stream): { code: GrpcStatus; message: string } {
  const rst = stream.resetCode;
  if (rst === H2Error.REFUSED_STREAM) {
    return { code: GrpcStatus.UNAVAILABLE, message: 'the broker refused the stream' };
  }
  if (rst === H2Error.CANCEL) return { code: GrpcStatus.CANCELLED, message: 'the call was cancelled' };
  if (rst !== undefined && rst !== H2Error.NO_ERROR) {
    return { code: GrpcStatus.INTERNAL, message: `the stream was reset (HTTP/2 error ${rst})` };
  }
  return { code: GrpcStatus.UNAVAILABLE, message: 'the connection closed before the call was answered' };
}

function httpToGrpc(status: number): GrpcStatus {
  switch (status) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

export interface BidiCodec<In, Out> {
  encode(message: In): Uint8Array;
  decode(bytes: Buffer): Out;
}

/**
 * A bidi call, with the events of a grpc-js duplex stream: 'data' (a decoded message), 'status'
 * (the final status), 'error' (a non-OK status as a TransportError), 'end' and 'close'.
 */
export class BidiCall<In, Out> extends EventEmitter {
  private stream: H2Stream | undefined;
  private pending: Buffer[] = [];
  private ending = false;
  private cancelled = false;
  private done = false;

  constructor(
    private readonly maxBytes: number,
    private readonly codec: BidiCodec<In, Out>,
  ) {
    super();
  }

  write(message: In): void {
    if (this.done) return;
    const framed = frameMessage(this.codec.encode(message));
    if (this.stream) this.stream.write(framed);
    else if (!this.done) this.pending.push(framed);
  }

  /** Half-close: no more messages from this side. */
  end(): void {
    this.ending = true;
    this.stream?.write(EMPTY, true);
  }

  /** Reset the stream (RST_STREAM CANCEL). */
  cancel(): void {
    this.cancelled = true;
    if (this.stream) this.stream.reset(H2Error.CANCEL);
    else this.fail(new TransportError(GrpcStatus.CANCELLED, 'the call was cancelled'));
  }

  /** @internal */
  attach(stream: H2Stream, onClosed: () => void): void {
    if (this.cancelled || this.done) {
      stream.reset(H2Error.CANCEL);
      onClosed();
      return;
    }
    this.stream = stream;
    for (const f of this.pending.splice(0)) stream.write(f);
    if (this.ending) stream.write(EMPTY, true);
    const response = new ResponseReader(this.maxBytes);
    let chain: Promise<void> = Promise.resolve();
    const deliver = (bytes: Buffer) => {
      if (this.done) return;
      let message: Out;
      try {
        message = this.codec.decode(bytes);
      } catch (err) {
        stream.reset(H2Error.CANCEL);
        this.fail(
          new TransportError(GrpcStatus.INTERNAL, `cannot decode a message: ${(err as Error).message}`),
        );
        return;
      }
      this.emit('data', message);
    };
    const reader = new MessageReader(this.maxBytes, (m) => {
      if (!m.compressed) {
        chain = chain.then(() => deliver(m.bytes));
        return;
      }
      chain = chain.then(() =>
        response.decompress([m]).then(
          ([b]) => deliver(b!),
          (err: unknown) => {
            stream.reset(H2Error.CANCEL);
            this.fail(err as TransportError);
          },
        ),
      );
    });
    response.listen(
      stream,
      (chunk) => reader.push(chunk),
      () => {
        onClosed();
        void chain.then(() => {
          if (this.done) return;
          const st =
            response.error ??
            (response.finalStatus
              ? response.finalStatus.code === GrpcStatus.OK
                ? undefined
                : new TransportError(response.finalStatus.code, response.finalStatus.message)
              : this.cancelled
                ? new TransportError(GrpcStatus.CANCELLED, 'the call was cancelled')
                : new TransportError(statusOfClose(stream).code, statusOfClose(stream).message));
          this.finish(st);
        });
      },
    );
  }

  /** @internal */
  fail(err: TransportError): void {
    this.finish(err);
  }

  private finish(err: TransportError | undefined): void {
    if (this.done) return;
    this.done = true;
    this.pending = [];
    this.emit('status', { code: err?.code ?? GrpcStatus.OK, details: err?.details ?? '' });
    if (err) this.emit('error', err);
    else this.emit('end');
    this.emit('close');
  }
}

function withDeadline<T>(p: Promise<T>, deadline: number): Promise<T> {
  const ms = deadline - Date.now();
  if (ms <= 0)
    return Promise.reject(
      new TransportError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded while connecting'),
    );
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(
      () => reject(new TransportError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded while connecting')),
      ms,
    );
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
