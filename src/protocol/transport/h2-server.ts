/**
 * A lean gRPC server on its own HTTP/2 connections (h2-connection.ts): it routes each stream to a registered method, reads the
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
import net from 'node:net';
import tls from 'node:tls';
import { H2Error } from '../../common/http2/frames.js';
import { HpackEncoder } from '../../common/http2/hpack.js';
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
import { H2Connection, type H2Stream } from '../../common/http2/connection.js';
import { IdMap } from '../../common/id-map.js';
import { ServerCall, trailersOnlyBlock, type CallOwner, type PeerInfo } from './server-call.js';

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
/** SETTINGS_MAX_HEADER_LIST_SIZE: request metadata beyond it is refused (431). */
const MAX_HEADER_LIST_BYTES = 64 * 1024;
/** SETTINGS_MAX_FRAME_SIZE: a large answer or request goes in a few DATA frames (as windows allow). */
const MAX_FRAME_BYTES = 1024 * 1024;

class Connection implements CallOwner {
  inbound = 0;
  /** Calls in progress, by stream id (not a Set: id-map.ts). */
  readonly calls = new IdMap<ServerCall>();
  pingOutstanding = false;
  /** Date.now() of the ping outstanding; a double from the start (see `resetWindowStart` in connection.ts). */
  pingSentAt = -Infinity;
  h2!: H2Connection;

  constructor(
    readonly peer: PeerInfo,
    private readonly server: GrpcServer,
  ) {}

  callFinished(call: ServerCall): void {
    this.calls.delete(call.stream.id);
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
  private readonly connections = new Set<Connection>();
  private readonly secureContext: tls.SecureContext | undefined;
  private keepaliveTimer: NodeJS.Timeout | undefined;
  private nextConnectionId = 1;
  private inbound = 0;
  private closing: Promise<void> | undefined;
  private readonly connectionClosedListeners: ((connectionId: string) => void)[] = [];

  constructor(private readonly opts: GrpcServerOptions) {
    if (opts.tls) {
      this.secureContext = tls.createSecureContext({
        cert: opts.tls.cert,
        key: opts.tls.key,
        minVersion: 'TLSv1.2',
      });
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
      const open = [...this.connections];
      for (const c of open) for (const call of c.calls.values()) call.abort('shutdown');
      const closed = open.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.h2.socket.destroyed) return resolve();
            c.h2.socket.once('close', () => resolve());
            c.h2.goaway();
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
      for (const c of this.connections) c.h2.destroy();
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
        if (!this.secureContext) {
          this.opts.logger.debug({ remote: socket.remoteAddress }, 'TLS handshake on a plaintext-only port');
          socket.destroy();
          return;
        }
        this.startTls(socket);
      } else if (this.opts.tls && this.opts.tls.plaintext === false) {
        this.opts.logger.debug({ remote: socket.remoteAddress }, 'plaintext connection refused (TLS only)');
        socket.destroy();
      } else this.startConnection(socket, socket, false);
    });
  }

  private startTls(socket: net.Socket): void {
    const secure = new tls.TLSSocket(socket, {
      isServer: true,
      secureContext: this.secureContext,
      ALPNProtocols: ['h2'],
    });
    secure.on('error', (err) => {
      this.opts.logger.debug({ err: err.message, remote: socket.remoteAddress }, 'TLS handshake failed');
      secure.destroy();
    });
    socket.setTimeout(FIRST_BYTE_TIMEOUT_MS, () => socket.destroy());
    secure.once('secure', () => {
      socket.setTimeout(0);
      if (secure.alpnProtocol !== 'h2') {
        this.opts.logger.debug({ remote: socket.remoteAddress }, 'TLS client did not negotiate h2');
        secure.destroy();
        return;
      }
      this.startConnection(socket, secure, true);
    });
    // The TLS socket reads the raw one's buffered first bytes, then its handle: the raw socket itself
    // must stay paused (resumed, it would take the bytes the TLS layer needs).
  }

  private startConnection(socket: net.Socket, stream: net.Socket, secure: boolean): void {
    const address = socket.remoteAddress ?? '';
    const port = socket.remotePort ?? 0;
    const peer: PeerInfo = {
      connectionId: `grpc-${this.nextConnectionId++}`,
      address,
      port,
      remote: address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`,
      secure,
      ...(secure ? { tlsSocket: stream as tls.TLSSocket } : {}),
    };
    const conn = new Connection(peer, this);
    this.connections.add(conn);
    conn.h2 = new H2Connection(
      stream,
      {
        role: 'server',
        maxConcurrentStreams: this.opts.limits.maxConcurrentStreams,
        streamWindow: STREAM_WINDOW,
        connectionWindow: CONNECTION_WINDOW,
        maxHeaderListSize: MAX_HEADER_LIST_BYTES,
        maxFrameSize: MAX_FRAME_BYTES,
      },
      {
        onStream: (s, headers) => this.onStream(conn, s, headers),
        onClose: () => {
          this.connections.delete(conn);
          for (const call of conn.calls.values()) call.streamClosed();
          for (const l of this.connectionClosedListeners) l(peer.connectionId);
        },
        onProtocolError: (message) =>
          this.opts.logger.debug({ err: message, remote: peer.remote }, 'HTTP/2 connection error'),
      },
    );
    if (this.closing) conn.h2.goaway();
    stream.resume();
  }

  private keepalive(): void {
    const now = Date.now();
    for (const c of this.connections) {
      const s = c.h2;
      if (s.closed) continue;
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
      s.ping((err) => {
        c.pingOutstanding = false;
        if (err) s.destroy();
      });
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

  private onStream(conn: Connection, stream: H2Stream, headers: Record<string, string>): void {
    const path = headers[':path'] ?? '';
    const contentType = headers['content-type'] ?? '';
    if (headers[':method'] !== 'POST' || !contentType.startsWith('application/grpc')) {
      respondPlain(stream, contentType.startsWith('application/grpc') ? 405 : 415);
      return;
    }
    const method = this.methods.get(path);
    if (!method) return answerEarly(stream, GrpcStatus.UNIMPLEMENTED, `unknown method ${encodeURI(path)}`);
    const encoding = headers['grpc-encoding'];
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
      timeoutMs = parseTimeout(headers['grpc-timeout']);
    } catch (err) {
      return answerEarly(stream, (err as GrpcError).code, (err as GrpcError).message);
    }
    const deadline = deadlineOf(timeoutMs, Date.now());
    const name = path.slice(path.lastIndexOf('/') + 1);
    const call = new ServerCall(stream, path, name, headers, conn.peer, deadline, conn);
    conn.calls.set(stream.id, call);
    const held = { bytes: 0 };
    stream.onClose = () => {
      if (held.bytes > 0) conn.release(held.bytes);
      held.bytes = 0;
      call.streamClosed();
    };
    if (this.closing) call.abort('shutdown');

    const maxBytes = method.maxMessageBytes ?? this.opts.limits.maxMessageBytes;
    let refused = false;
    const refuse = (err: unknown) => {
      refused = true;
      stream.onData = undefined; // discard whatever is still arriving until the reset below stops it
      stream.resume();
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
      call.onAnswered(() => {
        if (!stream.closed) stream.reset(H2Error.NO_ERROR);
      });
    };

    const outbound = conn.h2.outboundBytes;
    if (outbound > this.opts.limits.maxConnectionOutboundBytes) {
      refuse(
        new LimitError(
          'inbound-budget',
          `the client has not read ${outbound} bytes of earlier answers on this connection`,
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
      stream.onData = (chunk: Buffer) => {
        try {
          reader.push(chunk);
        } catch (err) {
          failed = true;
          refuse(err);
        }
      };
      stream.onEnd = () => {
        void chain.then(() => {
          if (!failed) call.halfClosed();
        });
      };
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
    stream.onData = (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (err) {
        refuse(err);
      }
    };
    stream.onEnd = () => {
      if (!call.isOpen || refused) return;
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
    };
  }
}

const RESOLVED: Promise<void> = Promise.resolve();

/** A call refused before it reached its method: trailers-only, then the stream is closed. */
function answerEarly(
  stream: H2Stream,
  code: GrpcStatus,
  message: string,
  extra: Record<string, string> = {},
): void {
  stream.respond(trailersOnlyBlock(code, message, extra), true);
  if (!stream.closed) stream.reset(H2Error.NO_ERROR);
}

const plainHeaders = new HpackEncoder({ huffman: false });

/** Not a gRPC request: an HTTP status alone. */
function respondPlain(stream: H2Stream, status: number): void {
  stream.respond(plainHeaders.encode({ ':status': String(status) }), true);
  if (!stream.closed) stream.reset(H2Error.NO_ERROR);
}
