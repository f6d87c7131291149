/**
 * The SDK's gRPC transport: one HTTP/2 connection (plaintext or TLS with ALPN h2) to one broker endpoint
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
import http2, { constants } from 'node:http2';
import { EventEmitter } from 'node:events';
import type { SecureContextOptions } from 'node:tls';
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
const STREAM_WINDOW = 1024 * 1024;
const CONNECTION_WINDOW = 16 * 1024 * 1024;

type Headers = Record<string, string>;

export class H2Channel {
  private session: http2.ClientHttp2Session | undefined;
  private dialing: Promise<http2.ClientHttp2Session> | undefined;
  private failures = 0;
  private retryAt = 0;
  private lastError: TransportError | undefined;
  private closed = false;
  private readonly sessions = new Set<http2.ClientHttp2Session>();
  private readonly active = new Map<http2.ClientHttp2Session, number>();

  constructor(private readonly o: ChannelOptions) {}

  get isClosed(): boolean {
    return this.closed;
  }

  /** A unary call: the answer message's bytes. */
  unary(
    path: string,
    headers: Headers,
    request: Uint8Array,
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
      (session) => call.attach(this.open(session, path, headers, undefined)),
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
    this.sessions.clear();
    this.session = undefined;
  }

  // ---- connecting -------------------------------------------------------------------------------

  /** The live session, or a dial (unless one failed recently: then UNAVAILABLE at once). */
  private ready(deadline: number, ignoreBackoff = false): Promise<http2.ClientHttp2Session> {
    if (this.closed) return Promise.reject(new TransportError(GrpcStatus.CANCELLED, 'the channel is closed'));
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return Promise.resolve(s);
    if (!this.dialing) {
      if (!ignoreBackoff && Date.now() < this.retryAt && this.lastError)
        return Promise.reject(this.lastError);
      this.dialing = this.dial().finally(() => (this.dialing = undefined));
      this.dialing.catch(() => {}); // each caller handles the failure; none may be left
    }
    if (deadline === Infinity) return this.dialing;
    return withDeadline(this.dialing, deadline);
  }

  private async dial(): Promise<http2.ClientHttp2Session> {
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

  private connect(host: string, port: number): Promise<http2.ClientHttp2Session> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('the channel is closed'));
      const tls = this.o.tls;
      const authority = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
      const options: http2.SecureClientSessionOptions = {
        settings: { initialWindowSize: STREAM_WINDOW, enablePush: false },
        maxSessionMemory: 4096,
      };
      if (tls) {
        Object.assign(options, {
          ALPNProtocols: ['h2'],
          minVersion: 'TLSv1.2',
          ...(typeof tls === 'object' ? tls : {}),
        });
      }
      const session = http2.connect(authority, options);
      this.sessions.add(session);
      let settled = false;
      const timer = setTimeout(() => {
        session.destroy();
        if (!settled) reject(new Error(`no connection within ${DIAL_TIMEOUT_MS} ms`));
        settled = true;
      }, DIAL_TIMEOUT_MS);
      timer.unref();
      const onError = (err: Error) => {
        clearTimeout(timer);
        session.destroy();
        if (!settled) reject(err);
        settled = true;
      };
      session.once('error', onError);
      session.once('close', () => onError(new Error('the connection closed before the broker spoke HTTP/2')));
      // Ready once the broker's SETTINGS arrive (as grpc-js): a port that accepts and drops the
      // connection (a TLS-only broker, a dying one) is a failed dial, subject to backoff.
      session.once('remoteSettings', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        session.off('error', onError);
        session.on('error', () => {}); // 'close' follows; calls fail on their own streams
        try {
          session.setLocalWindowSize(CONNECTION_WINDOW);
        } catch {
          // closing already
        }
        this.keepalive(session);
        resolve(session);
      });
      const forget = () => {
        if (this.session === session) this.session = undefined;
      };
      // After GOAWAY no new streams go to this session; the ones open finish on it.
      session.once('goaway', forget);
      session.once('close', () => {
        clearTimeout(timer);
        forget();
        this.sessions.delete(session);
      });
      // An idle connection does not keep the process alive; one with calls in progress does.
      session.unref();
    });
  }

  private keepalive(session: http2.ClientHttp2Session): void {
    const every = this.o.keepaliveMs ?? 30_000;
    if (every <= 0) return;
    const timeout = this.o.keepaliveTimeoutMs ?? 10_000;
    const timer = setInterval(() => {
      if (session.closed || session.destroyed) return;
      const deadline = setTimeout(() => session.destroy(), timeout);
      deadline.unref();
      try {
        session.ping((err) => {
          clearTimeout(deadline);
          if (err) session.destroy();
        });
      } catch {
        clearTimeout(deadline);
      }
    }, every);
    timer.unref();
    session.once('close', () => clearInterval(timer));
  }

  // ---- calls ------------------------------------------------------------------------------------

  /** Count a stream as in progress on its session (ref'd while any is). */
  private track(session: http2.ClientHttp2Session, stream: http2.ClientHttp2Stream): void {
    const n = this.active.get(session) ?? 0;
    this.active.set(session, n + 1);
    if (n === 0) session.ref();
    stream.once('close', () => {
      const left = (this.active.get(session) ?? 1) - 1;
      if (left > 0) this.active.set(session, left);
      else {
        this.active.delete(session);
        if (!session.destroyed) session.unref();
      }
    });
  }

  private open(
    session: http2.ClientHttp2Session,
    path: string,
    headers: Headers,
    timeoutMs: number | undefined,
  ): http2.ClientHttp2Stream {
    const h: http2.OutgoingHttpHeaders = {
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: path,
      [constants.HTTP2_HEADER_CONTENT_TYPE]: GRPC_CONTENT_TYPE,
      te: 'trailers',
      'grpc-accept-encoding': ACCEPT_ENCODING,
      ...headers,
    };
    if (timeoutMs !== undefined) h['grpc-timeout'] = formatTimeout(timeoutMs);
    const stream = session.request(h);
    this.track(session, stream);
    return stream;
  }

  private call(
    path: string,
    headers: Headers,
    request: Uint8Array,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Buffer[]> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const deadline = Date.now() + timeoutMs;
    const s = this.session;
    if (s && !s.closed && !s.destroyed && !this.closed) {
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
    session: http2.ClientHttp2Session,
    path: string,
    headers: Headers,
    request: Uint8Array,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<Buffer[]> {
    return new Promise<Buffer[]>((resolve, reject) => {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        reject(new TransportError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded'));
        return;
      }
      let stream: http2.ClientHttp2Stream;
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
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(messages!);
      };
      const timer = setTimeout(() => {
        stream.close(constants.NGHTTP2_CANCEL);
        finish(new TransportError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded'));
      }, remaining);
      const onAbort = () => {
        stream.close(constants.NGHTTP2_CANCEL);
        finish(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      reader.bind(stream, (err, messages) => finish(err, messages));
      stream.end(frameMessage(request));
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
  bind(stream: http2.ClientHttp2Stream, done: (err: unknown, messages?: Buffer[]) => void): void {
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
        if (!this.messages.some((m) => m.compressed))
          return done(
            null,
            this.messages.map((m) => m.bytes),
          );
        this.decompress(this.messages).then((out) => done(null, out), done);
      },
    );
  }

  /** Shared by unary and bidi: headers, trailers, data chunks, and the close. */
  listen(stream: http2.ClientHttp2Stream, onChunk: (chunk: Buffer) => void, onClose: () => void): void {
    stream.on('response', (h) => {
      const httpStatus = Number(h[constants.HTTP2_HEADER_STATUS]);
      const contentType = String(h[constants.HTTP2_HEADER_CONTENT_TYPE] ?? '');
      if (httpStatus !== 200) {
        this.failure ??= new TransportError(httpToGrpc(httpStatus), `HTTP status ${httpStatus}`);
      } else if (!contentType.startsWith(GRPC_CONTENT_TYPE)) {
        this.failure ??= new TransportError(GrpcStatus.UNKNOWN, `content-type ${contentType || '(none)'}`);
      }
      this.encoding = h['grpc-encoding'] as string | undefined;
      this.readStatus(h); // trailers-only answers
    });
    stream.on('trailers', (t) => this.readStatus(t));
    stream.on('data', (chunk: Buffer) => {
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
        stream.close(constants.NGHTTP2_CANCEL);
      }
    });
    stream.on('error', () => {}); // 'close' carries the outcome
    stream.once('close', onClose);
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

  private readStatus(h: http2.IncomingHttpHeaders): void {
    const st = h['grpc-status'];
    if (st === undefined || this.status) return;
    const code = Number(st);
    this.status = {
      code: (Number.isInteger(code) ? code : GrpcStatus.UNKNOWN) as GrpcStatus,
      message: decodeMessage(h['grpc-message'] as string | undefined),
    };
  }
}

/** The status of a stream that closed without one. */
function statusOfClose(stream: http2.ClientHttp2Stream): { code: GrpcStatus; message: string } {
  const rst = stream.rstCode;
  if (rst === constants.NGHTTP2_REFUSED_STREAM) {
    return { code: GrpcStatus.UNAVAILABLE, message: 'the broker refused the stream' };
  }
  if (rst === constants.NGHTTP2_CANCEL)
    return { code: GrpcStatus.CANCELLED, message: 'the call was cancelled' };
  if (rst !== undefined && rst !== constants.NGHTTP2_NO_ERROR) {
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
  private stream: http2.ClientHttp2Stream | undefined;
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
    this.stream?.end();
  }

  /** Reset the stream (RST_STREAM CANCEL). */
  cancel(): void {
    this.cancelled = true;
    if (this.stream) this.stream.close(constants.NGHTTP2_CANCEL);
    else this.fail(new TransportError(GrpcStatus.CANCELLED, 'the call was cancelled'));
  }

  /** @internal */
  attach(stream: http2.ClientHttp2Stream): void {
    if (this.cancelled || this.done) {
      stream.close(constants.NGHTTP2_CANCEL);
      return;
    }
    this.stream = stream;
    for (const f of this.pending.splice(0)) stream.write(f);
    if (this.ending) stream.end();
    const response = new ResponseReader(this.maxBytes);
    let chain: Promise<void> = Promise.resolve();
    const deliver = (bytes: Buffer) => {
      if (this.done) return;
      let message: Out;
      try {
        message = this.codec.decode(bytes);
      } catch (err) {
        stream.close(constants.NGHTTP2_CANCEL);
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
            stream.close(constants.NGHTTP2_CANCEL);
            this.fail(err as TransportError);
          },
        ),
      );
    });
    response.listen(
      stream,
      (chunk) => reader.push(chunk),
      () => {
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
