/**
 * A lean gRPC server on `node:http2`: it routes each stream to a registered method, reads the
 * length-prefixed request messages under the size and memory limits (refusing before anything is
 * buffered or decoded), inflates gzip with a bounded output, applies `grpc-timeout`, turns
 * RST_STREAM, dropped connections, deadlines and shutdown into the call's AbortSignal, pings idle
 * peers, and shuts down gracefully (GOAWAY, then a grace period, then closing what is left).
 *
 * One port serves plaintext HTTP/2 and, when a certificate is configured, TLS (ALPN h2): the first
 * byte a client sends tells them apart (a TLS handshake starts with 0x16, an HTTP/2 preface with 'P').
 *
 * It knows nothing of RocketMQ: `protocol/grpc-server.ts` binds MessagingService to it.
 *
 * Why one file of ~550 lines: accepting a socket (first-byte sniffing, TLS), the session's keepalive,
 * routing each stream to its method and the graceful shutdown all read and change the same table of
 * live connections and the same closing state; split apart, each part would have to export that state
 * to the others. What is per call lives in server-call.ts, the wire format in grpc-wire.ts.
 */
import http2, { constants } from 'node:http2';
import net from 'node:net';
import type tls from 'node:tls';
import type { Logger } from '../../common/logger.js';
import {
  ACCEPT_ENCODING,
  GrpcStatus,
  inflate,
  isSupportedEncoding,
  LimitError,
  MessageReader,
  parseTimeout,
  deadlineOf,
  type GrpcError,
} from './grpc-wire.js';
import { ServerCall, type CallOwner, type PeerInfo } from './server-call.js';

export type MethodKind = 'unary' | 'server-stream' | 'bidi';

export interface MethodHandler {
  kind: MethodKind;
  /** Largest inbound message of this method, compressed or inflated (default: the server's). */
  maxMessageBytes?: number;
  /** unary / server-stream: the one request message (inflated). Answer through the call. */
  onRequest?(call: ServerCall, message: Buffer): void;
  /** bidi: the stream opened; messages arrive through `call.onMessage`. */
  onOpen?(call: ServerCall): void;
  /**
   * A limit refused the request (or a bidi message) before it was decoded: answer it in the method's
   * own terms (a body status). Without it the call fails with RESOURCE_EXHAUSTED / INTERNAL.
   */
  onRefused?(call: ServerCall, err: LimitError): void;
}

export interface TransportLimits {
  /** Largest request message, as sent and once inflated. */
  maxMessageBytes: number;
  /** SETTINGS_MAX_CONCURRENT_STREAMS: calls open at once on one connection. */
  maxConcurrentStreams: number;
  /** Request bytes held at once for one connection (received, not yet answered). */
  maxConnectionInboundBytes: number;
  /** Request bytes held at once for all connections. */
  maxInboundBytes: number;
  /** Answer bytes waiting for one client to read them; beyond it new calls are refused. */
  maxConnectionOutboundBytes: number;
}

export interface KeepaliveOptions {
  /** Ping every connection this often (0: never). */
  intervalMs: number;
  /** Close a connection whose ping is not answered within this. */
  timeoutMs: number;
}

export interface TlsMaterial {
  cert: string | Buffer;
  key: string | Buffer;
  /** Whether plaintext connections are still accepted on the same port. @defaultValue true */
  plaintext?: boolean;
}

export interface GrpcServerOptions {
  host: string;
  limits: TransportLimits;
  keepalive: KeepaliveOptions;
  /** When set, the same port also accepts TLS (1.2+, ALPN h2). */
  tls?: TlsMaterial;
  logger: Logger;
}

/** How long a new connection may take to send its first byte. */
const FIRST_BYTE_TIMEOUT_MS = 10_000;
/** HTTP/2 windows: large enough that a 4 MiB request does not wait on window updates per 64 KiB. */
const STREAM_WINDOW = 1024 * 1024;
const CONNECTION_WINDOW = 16 * 1024 * 1024;

class Connection implements CallOwner {
  outbound = 0;
  inbound = 0;
  readonly calls = new Set<ServerCall>();
  pingOutstanding = false;
  pingSentAt = 0;

  constructor(
    readonly session: http2.ServerHttp2Session,
    readonly peer: PeerInfo,
    private readonly server: GrpcServer,
  ) {}

  callFinished(call: ServerCall): void {
    this.calls.delete(call);
  }

  release(bytes: number): void {
    this.inbound -= bytes;
    this.server.releaseInbound(bytes);
  }
}

export class GrpcServer {
  private readonly methods = new Map<string, MethodHandler>();
  private readonly listeners: net.Server[] = [];
  private readonly sockets = new Set<net.Socket>();
  private readonly connections = new Map<http2.ServerHttp2Session, Connection>();
  private readonly plain: http2.Http2Server;
  private readonly secure: http2.Http2SecureServer | undefined;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private nextConnectionId = 1;
  private inbound = 0;
  private closing: Promise<void> | undefined;
  private readonly connectionClosedListeners: ((connectionId: string) => void)[] = [];

  constructor(private readonly opts: GrpcServerOptions) {
    const h2: http2.ServerOptions = {
      settings: {
        maxConcurrentStreams: opts.limits.maxConcurrentStreams,
        initialWindowSize: STREAM_WINDOW,
      },
      // Our own budgets bound memory and answer with proper statuses; nghttp2's credit (which
      // counts data queued for slow readers) would instead refuse new streams with a bare RST_STREAM.
      maxSessionMemory: 4096,
    };
    this.plain = http2.createServer(h2);
    this.plain.on('session', (s) => this.onSession(s, false));
    if (opts.tls) {
      this.secure = http2.createSecureServer({
        ...h2,
        cert: opts.tls.cert,
        key: opts.tls.key,
        minVersion: 'TLSv1.2',
        ALPNProtocols: ['h2'],
        allowHTTP1: false,
      });
      this.secure.on('session', (s) => this.onSession(s, true));
      this.secure.on('tlsClientError', (err) =>
        opts.logger.debug({ err: err.message }, 'TLS handshake failed'),
      );
    }
    for (const server of [this.plain, this.secure]) {
      server?.on('sessionError', (err) => opts.logger.debug({ err: err.message }, 'HTTP/2 session error'));
    }
  }

  /** Called with each connection's id once it has closed. */
  onConnectionClosed(listener: (connectionId: string) => void): void {
    this.connectionClosedListeners.push(listener);
  }

  register(path: string, handler: MethodHandler): void {
    this.methods.set(path, handler);
  }

  /** Listen on `port` (0: a free one); resolves with the bound port. */
  listen(port: number): Promise<number> {
    const { host } = this.opts;
    return new Promise((resolve, reject) => {
      const server = net.createServer({ noDelay: true }, (socket) => this.onSocket(socket));
      server.once('error', (err: NodeJS.ErrnoException) => {
        reject(
          new Error(
            err.code === 'EADDRINUSE'
              ? `gRPC port ${host}:${port} is already in use`
              : `cannot listen on ${host}:${port}: ${err.message}`,
          ),
        );
      });
      server.listen(port, host, () => {
        server.removeAllListeners('error');
        server.on('error', (err) => this.opts.logger.error({ err }, 'gRPC listener error'));
        this.listeners.push(server);
        if (!this.keepaliveTimer && this.opts.keepalive.intervalMs > 0) {
          this.keepaliveTimer = setInterval(() => this.keepalive(), this.opts.keepalive.intervalMs);
          this.keepaliveTimer.unref();
        }
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  }

  /** Connections open now (for tests and metrics). */
  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * Stop accepting connections, abort every call's signal (handlers answer what they can), send
   * GOAWAY so clients open no new streams, and wait up to `graceMs` for calls in progress before
   * closing what is left. Idempotent.
   */
  close(graceMs: number): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.keepaliveTimer);
      // Stop accepting now; `close` calls back once every connection is gone (awaited last).
      const unlistened = Promise.all(this.listeners.map((l) => new Promise<void>((r) => l.close(() => r()))));
      const sessions = [...this.connections.values()];
      for (const c of sessions) for (const call of c.calls) call.abort('shutdown');
      const closed = sessions.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.session.closed || c.session.destroyed) return resolve();
            c.session.once('close', () => resolve());
            c.session.close();
          }),
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(closed),
        new Promise<void>((r) => {
          timer = setTimeout(r, graceMs);
        }),
      ]);
      clearTimeout(timer);
      for (const c of this.connections.values()) c.session.destroy();
      for (const s of this.sockets) s.destroy();
      await unlistened;
    })();
    return this.closing;
  }

  // ---- connections ------------------------------------------------------------------------------

  private onSocket(socket: net.Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => {});
    socket.setTimeout(FIRST_BYTE_TIMEOUT_MS, () => socket.destroy());
    socket.once('data', (chunk: Buffer) => {
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(chunk);
      if (chunk[0] === 0x16) {
        if (!this.secure) {
          this.opts.logger.debug({ remote: socket.remoteAddress }, 'TLS handshake on a plaintext-only port');
          socket.destroy();
          return;
        }
        this.secure.emit('connection', socket);
      } else if (this.opts.tls && this.opts.tls.plaintext === false) {
        this.opts.logger.debug({ remote: socket.remoteAddress }, 'plaintext connection refused (TLS only)');
        socket.destroy();
      } else this.plain.emit('connection', socket);
    });
  }

  private onSession(session: http2.ServerHttp2Session, secure: boolean): void {
    const socket = session.socket as net.Socket | tls.TLSSocket;
    const address = socket.remoteAddress ?? '';
    const port = socket.remotePort ?? 0;
    const peer: PeerInfo = {
      connectionId: `grpc-${this.nextConnectionId++}`,
      address,
      port,
      remote: address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`,
      secure,
      ...(secure ? { tlsSocket: socket as tls.TLSSocket } : {}),
    };
    const conn = new Connection(session, peer, this);
    this.connections.set(session, conn);
    try {
      session.setLocalWindowSize(CONNECTION_WINDOW);
    } catch {
      // the session is already closing
    }
    session.on('stream', (stream, headers) => this.onStream(conn, stream, headers));
    session.on('error', (err) =>
      this.opts.logger.debug({ err: err.message, remote: peer.remote }, 'connection error'),
    );
    session.once('close', () => {
      this.connections.delete(session);
      for (const call of conn.calls) call.streamClosed();
      for (const l of this.connectionClosedListeners) l(peer.connectionId);
    });
    if (this.closing) session.close();
  }

  private keepalive(): void {
    const now = Date.now();
    for (const c of this.connections.values()) {
      const s = c.session;
      if (s.closed || s.destroyed) continue;
      if (c.pingOutstanding) {
        if (now - c.pingSentAt > this.opts.keepalive.timeoutMs) {
          this.opts.logger.debug(
            { remote: c.peer.remote },
            'keepalive ping unanswered: closing the connection',
          );
          s.destroy();
        }
        continue;
      }
      c.pingOutstanding = true;
      c.pingSentAt = now;
      try {
        s.ping((err) => {
          c.pingOutstanding = false;
          if (err) s.destroy();
        });
      } catch {
        c.pingOutstanding = false;
      }
    }
  }

  /** Run a handler; a throw is a programming error: logged, and the call fails with INTERNAL. */
  private guard(call: ServerCall, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.opts.logger.error({ err, method: call.method }, 'a gRPC handler threw');
      call.fail(GrpcStatus.INTERNAL, 'internal error');
    }
  }

  /** @internal */
  releaseInbound(bytes: number): void {
    this.inbound -= bytes;
  }

  private reserve(conn: Connection, held: { bytes: number }, bytes: number): void {
    const l = this.opts.limits;
    if (conn.inbound + bytes > l.maxConnectionInboundBytes || this.inbound + bytes > l.maxInboundBytes) {
      throw new LimitError(
        'inbound-budget',
        conn.inbound + bytes > l.maxConnectionInboundBytes
          ? `this connection already has ${conn.inbound} request bytes in progress`
          : `the broker already holds ${this.inbound} request bytes in progress`,
      );
    }
    conn.inbound += bytes;
    this.inbound += bytes;
    held.bytes += bytes;
  }

  // ---- calls ------------------------------------------------------------------------------------

  private onStream(
    conn: Connection,
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
  ): void {
    stream.on('error', () => {});
    const path = String(headers[constants.HTTP2_HEADER_PATH] ?? '');
    const contentType = String(headers[constants.HTTP2_HEADER_CONTENT_TYPE] ?? '');
    if (headers[constants.HTTP2_HEADER_METHOD] !== 'POST' || !contentType.startsWith('application/grpc')) {
      respondPlain(stream, contentType.startsWith('application/grpc') ? 405 : 415);
      return;
    }
    const method = this.methods.get(path);
    if (!method) return answerEarly(stream, GrpcStatus.UNIMPLEMENTED, `unknown method ${encodeURI(path)}`);
    const encoding = headers['grpc-encoding'] as string | undefined;
    if (!isSupportedEncoding(encoding)) {
      return answerEarly(
        stream,
        GrpcStatus.UNIMPLEMENTED,
        `unsupported grpc-encoding ${encodeURI(encoding ?? '')}`,
        { 'grpc-accept-encoding': ACCEPT_ENCODING },
      );
    }
    let timeoutMs: number | undefined;
    try {
      timeoutMs = parseTimeout(headers['grpc-timeout'] as string | undefined);
    } catch (err) {
      return answerEarly(stream, (err as GrpcError).code, (err as GrpcError).message);
    }
    const deadline = deadlineOf(timeoutMs, Date.now());
    const name = path.slice(path.lastIndexOf('/') + 1);
    const call = new ServerCall(stream, path, name, headers, conn.peer, deadline, conn);
    conn.calls.add(call);
    const held = { bytes: 0 };
    stream.once('close', () => {
      if (held.bytes > 0) conn.release(held.bytes);
      held.bytes = 0;
      call.streamClosed();
    });
    if (this.closing) call.abort('shutdown');

    const maxBytes = method.maxMessageBytes ?? this.opts.limits.maxMessageBytes;
    const refuse = (err: unknown) => {
      stream.removeAllListeners('data');
      stream.resume(); // discard whatever is still arriving until the reset below stops it
      if (!(err instanceof LimitError)) {
        this.opts.logger.error({ err, method: name }, 'failed to read a request');
        call.fail(GrpcStatus.INTERNAL, 'failed to read the request');
      } else if (method.onRefused && call.isOpen) {
        method.onRefused(call, err);
      } else {
        call.fail(
          err.kind === 'malformed' ? GrpcStatus.INTERNAL : GrpcStatus.RESOURCE_EXHAUSTED,
          err.message,
        );
      }
      // Once answered, tell the client to stop sending the rest of the request (RFC 9113 §8.1).
      call.onAnswered(() =>
        setImmediate(() => {
          if (!stream.closed && !stream.destroyed) stream.close(constants.NGHTTP2_NO_ERROR);
        }),
      );
    };

    if (conn.outbound > this.opts.limits.maxConnectionOutboundBytes) {
      refuse(
        new LimitError(
          'inbound-budget',
          `the client has not read ${conn.outbound} bytes of earlier answers on this connection`,
        ),
      );
      return;
    }

    const compressed = (bytes: Buffer): Promise<Buffer> => {
      if (encoding !== 'gzip') {
        return Promise.reject(new LimitError('malformed', 'compressed message without grpc-encoding'));
      }
      return inflate(bytes, maxBytes).then((out) => {
        this.reserve(conn, held, out.length);
        return out;
      });
    };

    if (method.kind === 'bidi') {
      // Messages in order even when some must be inflated; each one's bytes are released once its
      // handler has taken it.
      let chain: Promise<void> = RESOLVED;
      let failed = false;
      const reader = new MessageReader(
        maxBytes,
        (m) => {
          const size = m.bytes.length;
          const deliver = (bytes: Buffer) => {
            if (failed || !call.isOpen) return;
            try {
              this.guard(call, () => call.deliver(bytes));
            } finally {
              const n = Math.min(held.bytes, size + (bytes === m.bytes ? 0 : bytes.length));
              held.bytes -= n;
              conn.release(n);
            }
          };
          if (!m.compressed) {
            if (chain === RESOLVED) deliver(m.bytes);
            else chain = chain.then(() => deliver(m.bytes));
          } else {
            chain = chain.then(() =>
              compressed(m.bytes).then(deliver, (err: unknown) => {
                failed = true;
                refuse(err);
              }),
            );
          }
        },
        (n) => this.reserve(conn, held, n),
      );
      stream.on('data', (chunk: Buffer) => {
        try {
          reader.push(chunk);
        } catch (err) {
          failed = true;
          refuse(err);
        }
      });
      stream.once('end', () => {
        void chain.then(() => {
          if (!failed) call.halfClosed();
        });
      });
      this.guard(call, () => method.onOpen?.(call));
      return;
    }

    let request: { compressed: boolean; bytes: Buffer } | undefined;
    let extra = false;
    const reader = new MessageReader(
      maxBytes,
      (m) => {
        if (request) extra = true;
        else request = m;
      },
      (n) => this.reserve(conn, held, n),
    );
    const onData = (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (err) {
        refuse(err);
      }
    };
    stream.on('data', onData);
    stream.once('end', () => {
      if (!call.isOpen || stream.listenerCount('data') === 0) return;
      if (!request || reader.partial || extra) {
        call.fail(
          GrpcStatus.INTERNAL,
          !request || reader.partial
            ? 'the request message is missing or incomplete'
            : 'a unary request carries more than one message',
        );
        return;
      }
      const r = request;
      if (!r.compressed) this.guard(call, () => method.onRequest!(call, r.bytes));
      else
        compressed(r.bytes).then(
          (bytes) => {
            if (call.isOpen) this.guard(call, () => method.onRequest!(call, bytes));
          },
          (err: unknown) => refuse(err),
        );
    });
  }
}

const RESOLVED: Promise<void> = Promise.resolve();

/** A call refused before it reached its method: trailers-only, then the stream is closed. */
function answerEarly(
  stream: http2.ServerHttp2Stream,
  code: GrpcStatus,
  message: string,
  extra: Record<string, string> = {},
): void {
  try {
    stream.respond(
      {
        [constants.HTTP2_HEADER_STATUS]: 200,
        [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
        'grpc-status': String(code),
        'grpc-message': message,
        ...extra,
      },
      { endStream: true },
    );
  } catch {
    // reset meanwhile
  }
  stream.close(constants.NGHTTP2_NO_ERROR);
}

function respondPlain(stream: http2.ServerHttp2Stream, status: number): void {
  try {
    stream.respond({ [constants.HTTP2_HEADER_STATUS]: status }, { endStream: true });
  } catch {
    // reset meanwhile
  }
}
