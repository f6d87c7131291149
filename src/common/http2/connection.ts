/**
 * One HTTP/2 connection (RFC 9113), either side, written for gRPC: it reads frames from a socket,
 * decodes header blocks (HPACK), keeps a stream per request — opened by the client's HEADERS on the
 * server, by `request()` on the client — keeps both directions' flow control, answers SETTINGS and
 * PING, and writes every frame produced in one turn of the event loop in one socket write.
 *
 * Why not node:http2: its per-call machinery (a Duplex stream per call, header objects converted
 * twice, nextTicks per write, a native round trip per frame) cost ~42 µs of server CPU per unary call
 * here, against ~14 µs for this connection (docs/benchmarks.md). What it leaves out of HTTP/2, because
 * a gRPC server needs none of it: server push, priorities (parsed and ignored), and HTTP/1.1.
 *
 * Errors follow RFC 9113 §5.4: a connection error sends GOAWAY and closes the socket; a stream error
 * sends RST_STREAM and closes only that stream. Frames for streams this side already closed are
 * dropped (they may have been in flight), but still count against the connection's window.
 */
import type net from 'node:net';
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW,
  Flag,
  FrameReader,
  FrameType,
  H2ConnectionError,
  H2Error,
  MAX_ALLOWED_FRAME_SIZE,
  MAX_WINDOW,
  SETTINGS_ACK,
  Setting,
  frame,
  goawayFrame,
  pingFrame,
  rstStreamFrame,
  settingsFrame,
  windowUpdateFrame,
} from './frames.js';
import { HpackDecoder, HpackEncoder, HpackError } from './hpack.js';
import { H2Stream } from './stream.js';
import { readTurns } from '../read-turns.js';
import { IdMap } from '../id-map.js';

export { H2Stream };

export type H2Role = 'server' | 'client';

export interface H2ConnectionSettings {
  role: H2Role;
  /** Server: SETTINGS_MAX_CONCURRENT_STREAMS, requests open at once; more are refused (REFUSED_STREAM). */
  maxConcurrentStreams: number;
  /** The window each request stream starts with (SETTINGS_INITIAL_WINDOW_SIZE). */
  streamWindow: number;
  /** The connection's receive window. */
  connectionWindow: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE; a larger request is answered 431. */
  maxHeaderListSize: number;
  /**
   * SETTINGS_MAX_FRAME_SIZE: the largest frame payload accepted. Larger frames mean fewer frames and
   * writes for the peer's large messages; a frame is buffered whole before it is read.
   * @defaultValue 16,384 (HTTP/2's initial value)
   */
  maxFrameSize?: number;
  /**
   * Client: request header names whose values change with every request (ids, timestamps,
   * signatures). Every other request field is indexed in the server's HPACK table, so after the first
   * request it costs one byte to send and one table lookup to read.
   */
  volatileHeaders?: ReadonlySet<string>;
}

export interface H2ConnectionEvents {
  /** Server: a request opened; its headers (lower-case names, pseudo-headers included) were checked. */
  onStream?(stream: H2Stream, headers: Record<string, string>): void;
  /** The peer's first SETTINGS arrived (a client is ready to send then). */
  onReady?(): void;
  /** The peer sent GOAWAY: no new stream may be opened (open ones above its last id were refused). */
  onGoaway?(): void;
  /** The socket closed; every stream was closed before this. */
  onClose(): void;
  /** A protocol violation by the peer (for a debug log line). */
  onProtocolError(message: string): void;
}

/** Headers a request must not carry (RFC 9113 §8.2.2). */
const CONNECTION_SPECIFIC = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
]);
const REQUEST_PSEUDO = new Set([':method', ':scheme', ':path', ':authority']);
/** Resets by the peer allowed per second before the connection is closed (rapid-reset floods). */
const MAX_RESETS_PER_SECOND = 5_000;
/**
 * Frames written in one turn are joined into one buffer up to this size when none of them is large
 * (else one writev, large chunks as they are).
 */
const JOIN_BYTES = 16 * 1024;
/** In a writev, a chunk this large goes as it is; smaller ones are joined. */
const LARGE_CHUNK = 4 * 1024;
/** How long a connection closed for an error may take to flush its GOAWAY. */
const GOAWAY_LINGER_MS = 1_000;

export class H2Connection {
  private readonly reader: FrameReader;
  private readonly decoder: HpackDecoder;
  private readonly streams = new IdMap<H2Stream>();
  private readonly client: boolean;
  /** Client: request headers, indexed; encoded when each request opens, in wire order. */
  private readonly encoder: HpackEncoder | undefined;
  private prefaceBytes = 0;
  private settingsSeen = false;
  /** Server: the last stream the client opened. */
  private lastStreamId = 0;
  /** Client: the id the next request gets. */
  private nextStreamId = 1;
  /** Client: the peer's SETTINGS_MAX_CONCURRENT_STREAMS; requests beyond it wait to open. */
  private peerMaxStreams = Infinity;
  private readonly waitingToOpen: H2Stream[] = [];
  private goawaySent = false;
  private goawayReceived = false;
  private dead = false;
  private closedFired = false;
  /** A header block split over CONTINUATION frames. */
  private continuation: HeaderBlock | undefined;
  /**
   * Streams this side reset (or refused) while the peer could still be sending on them: frames it had
   * sent before it saw the reset are ignored (RFC 9113 §5.1), not taken for a protocol error. The
   * most recent MAX_RESETS_REMEMBERED only; frames for older ones are answered as for any closed stream.
   */
  private readonly resetHere = new Set<number>();

  // flow control, both directions
  private recvWindow: number;
  private recvUnacked = 0;
  /** @internal what the peer lets this side send on the connection. */
  sendWindow = DEFAULT_WINDOW;
  /** @internal the peer's SETTINGS_INITIAL_WINDOW_SIZE. */
  peerStreamWindow = DEFAULT_WINDOW;
  /** @internal the peer's SETTINGS_MAX_FRAME_SIZE. */
  peerMaxFrameSize = DEFAULT_MAX_FRAME_SIZE;
  private readonly blocked = new Set<H2Stream>();
  /** @internal DATA bytes waiting in streams for window. */
  queuedBytes = 0;

  // output
  private out: Buffer[] = [];
  private outBytes = 0;
  /** A chunk of LARGE_CHUNK or more is in `out`: it is written as it is, not copied into a join. */
  private outLarge = false;
  private flushScheduled = false;
  /** Run at the start of the next flush, so what they write goes out in the same write (`beforeFlush`). */
  private preFlush: (() => void)[] = [];

  private pings = new Map<string, (err?: Error) => void>();
  private nextPing = 0;
  private repliesQueued = 0;
  /**
   * When the current one-second window of RST_STREAMs began (Date.now()). Starts as a double, as
   * Date.now() is: a field that holds a small integer and then a double makes V8 replace the hidden
   * class of every connection, which deoptimized the whole HTTP/2 path at the first stream a client
   * reset (`--log-maps`; docs/benchmarks.md, twenty-sixth session).
   */
  private resetWindowStart = -Infinity;
  private resetsInWindow = 0;
  /** At most READ_BYTES_PER_TURN read per event-loop turn (src/common/read-turns.ts). */
  private readonly countRead: (bytes: number) => void;

  constructor(
    readonly socket: net.Socket,
    private readonly settings: H2ConnectionSettings,
    private readonly events: H2ConnectionEvents,
  ) {
    this.client = settings.role === 'client';
    if (this.client) {
      this.encoder = new HpackEncoder({
        huffman: false,
        indexing: { volatile: settings.volatileHeaders ?? new Set() },
      });
    }
    this.recvWindow = settings.connectionWindow;
    const maxFrameSize = settings.maxFrameSize ?? DEFAULT_MAX_FRAME_SIZE;
    this.reader = new FrameReader(maxFrameSize, (t, f, id, p) => this.onFrame(t, f, id, p));
    this.decoder = new HpackDecoder({ maxHeaderListSize: settings.maxHeaderListSize });
    if (this.client) {
      this.prefaceBytes = CLIENT_PREFACE.length; // nothing to check: the server starts with SETTINGS
      this.push(CLIENT_PREFACE);
    }
    this.push(
      settingsFrame([
        this.client
          ? [Setting.ENABLE_PUSH, 0]
          : [Setting.MAX_CONCURRENT_STREAMS, settings.maxConcurrentStreams],
        [Setting.INITIAL_WINDOW_SIZE, settings.streamWindow],
        [Setting.MAX_HEADER_LIST_SIZE, settings.maxHeaderListSize],
        ...(maxFrameSize !== DEFAULT_MAX_FRAME_SIZE ? [[Setting.MAX_FRAME_SIZE, maxFrameSize] as const] : []),
      ]),
    );
    if (settings.connectionWindow > DEFAULT_WINDOW) {
      this.push(windowUpdateFrame(0, settings.connectionWindow - DEFAULT_WINDOW));
    }
    this.countRead = readTurns(socket);
    socket.on('data', (chunk: Buffer) => this.onSocketData(chunk));
    socket.on('error', () => {});
    socket.once('close', () => this.onSocketClose());
  }

  /** Streams open now. */
  get streamCount(): number {
    return this.streams.size;
  }

  /** Answer bytes not yet taken by the client: waiting for its window, or in the socket's buffer. */
  get outboundBytes(): number {
    return this.queuedBytes + this.outBytes + this.socket.writableLength;
  }

  get closed(): boolean {
    return this.dead || this.socket.destroyed;
  }

  /** Whether a new request can be opened here (client): not closing, not told to go away. */
  get canRequest(): boolean {
    return !this.closed && !this.goawayReceived && !this.goawaySent;
  }

  /**
   * Client: open a request. Its headers are encoded when it opens (the table both ends keep follows
   * the order on the wire); beyond the server's stream limit it waits, its writes queued, until
   * another stream closes. Check `canRequest` first.
   */
  request(headers: Record<string, string>, endStream = false): H2Stream {
    if (!this.client || !this.canRequest) throw new Error('no new stream can be opened on this connection');
    const s = new H2Stream(this, 0, this.peerStreamWindow, this.settings.streamWindow);
    if (this.streams.size >= this.peerMaxStreams) {
      s.awaitOpen(headers, endStream);
      this.waitingToOpen.push(s);
    } else this.openRequest(s, headers, endStream);
    return s;
  }

  private openRequest(s: H2Stream, headers: Record<string, string>, endStream: boolean): void {
    s.id = this.nextStreamId;
    this.nextStreamId += 2;
    this.streams.set(s.id, s);
    s.opened(this.encoder!.encode(headers), endStream);
    // Stream ids run out at 2^31: the channel must dial a new connection.
    if (this.nextStreamId > MAX_STREAM_ID && !this.goawayReceived) {
      this.goawayReceived = true;
      this.events.onGoaway?.();
    }
  }

  /** Send a PING; `done` is called on its ACK, or with an error if the connection closes first. */
  ping(done: (err?: Error) => void): void {
    if (this.closed) {
      done(new Error('the connection is closed'));
      return;
    }
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(++this.nextPing, 4);
    this.pings.set(payload.toString('latin1'), done);
    this.push(pingFrame(payload, false));
  }

  /**
   * Graceful close (RFC 9113 §6.8): GOAWAY with the last stream this side accepted, so the client
   * opens no new ones; the socket closes once the open streams are done.
   */
  goaway(): void {
    if (this.goawaySent || this.closed) return;
    this.goawaySent = true;
    this.push(goawayFrame(this.lastStreamId, H2Error.NO_ERROR));
    this.maybeFinish();
  }

  /** Close at once: every stream is closed, the socket destroyed. */
  destroy(): void {
    this.dead = true;
    this.socket.destroy();
  }

  // ---- output -----------------------------------------------------------------------------------

  /** @internal queue bytes for the next flush (end of this turn). */
  push(buf: Buffer): void {
    if (this.dead) return;
    this.out.push(buf);
    this.outBytes += buf.length;
    if (buf.length >= LARGE_CHUNK) this.outLarge = true;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      process.nextTick(this.flush);
    }
  }

  /**
   * A frame that answers one of the peer's (PING and SETTINGS acknowledgements, a reset of a closed
   * stream). A peer that sends such frames without reading the replies would grow the socket's
   * buffer without bound: past MAX_QUEUED_REPLIES while the socket is backed up, the connection is
   * closed (ENHANCE_YOUR_CALM), as nghttp2 does for its outbound control frames.
   */
  private pushReply(frame: Buffer): void {
    if (this.socket.writableLength === 0) this.repliesQueued = 0;
    if (++this.repliesQueued > MAX_QUEUED_REPLIES) {
      throw new H2ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'too many replies the client does not read');
    }
    this.push(frame);
  }

  /**
   * Run `fn` at the start of this connection's next flush (the end of a turn in which something was
   * queued to write), so that what it writes goes out in the same socket write. Nothing is flushed for
   * it alone: with nothing else to write, it waits for the next flush there is.
   */
  beforeFlush(fn: () => void): void {
    if (!this.dead) this.preFlush.push(fn);
  }

  private readonly flush = (): void => {
    if (this.preFlush.length > 0) {
      // Still marked scheduled: what the hooks queue joins this flush instead of scheduling another.
      const hooks = this.preFlush;
      this.preFlush = [];
      for (const fn of hooks) {
        try {
          fn();
        } catch {
          // A hook's failure is its caller's business; the flush goes on.
        }
      }
    }
    this.flushScheduled = false;
    const out = this.out;
    const bytes = this.outBytes;
    const large = this.outLarge;
    if (out.length === 0) return;
    this.out = [];
    this.outBytes = 0;
    this.outLarge = false;
    if (this.socket.destroyed) return;
    if (out.length === 1) {
      this.socket.write(out[0]!);
      return;
    }
    if (bytes <= JOIN_BYTES && !large) {
      this.socket.write(Buffer.concat(out, bytes));
      return;
    }
    // Large payloads go as they are (copying them would only feed the garbage collector); the small
    // pieces around them (frame headers, header blocks) are joined, so writev gets few chunks.
    this.socket.cork();
    let small: Buffer[] = [];
    let smallBytes = 0;
    for (const b of out) {
      if (b.length < LARGE_CHUNK) {
        small.push(b);
        smallBytes += b.length;
        continue;
      }
      if (small.length > 0) {
        this.socket.write(small.length === 1 ? small[0]! : Buffer.concat(small, smallBytes));
        small = [];
        smallBytes = 0;
      }
      this.socket.write(b);
    }
    if (small.length > 0)
      this.socket.write(small.length === 1 ? small[0]! : Buffer.concat(small, smallBytes));
    this.socket.uncork();
  };

  /** @internal a stream waits for window. */
  block(stream: H2Stream): void {
    this.blocked.add(stream);
  }

  /** @internal */
  unblock(stream: H2Stream): void {
    this.blocked.delete(stream);
  }

  /** @internal a stream is done on both sides (or reset). */
  streamClosed(stream: H2Stream): void {
    if (stream.id === 0) {
      const i = this.waitingToOpen.indexOf(stream);
      if (i >= 0) this.waitingToOpen.splice(i, 1);
      return;
    }
    this.streams.delete(stream.id);
    this.blocked.delete(stream);
    this.openWaiting();
    this.maybeFinish();
  }

  private openWaiting(): void {
    while (this.waitingToOpen.length > 0 && this.streams.size < this.peerMaxStreams && !this.dead) {
      const s = this.waitingToOpen.shift()!;
      const { headers, endStream } = s.takeOpening();
      this.openRequest(s, headers, endStream);
    }
  }

  /** A stream id the peer may not name yet (an idle stream). */
  private isIdle(id: number): boolean {
    return this.client ? id >= this.nextStreamId : id > this.lastStreamId;
  }

  /** @internal the stream consumed `bytes` of received DATA: give the connection window back. */
  consumed(bytes: number): void {
    this.recvUnacked += bytes;
    if (this.recvUnacked >= this.settings.connectionWindow / 2) {
      this.push(windowUpdateFrame(0, this.recvUnacked));
      this.recvWindow += this.recvUnacked;
      this.recvUnacked = 0;
    }
  }

  /** @internal the stream's window, given back in steps of half of it. */
  get streamWindow(): number {
    return this.settings.streamWindow;
  }

  private maybeFinish(): void {
    const done = this.goawaySent || (this.client && this.goawayReceived);
    if (done && this.streams.size === 0 && this.waitingToOpen.length === 0 && !this.socket.destroyed) {
      this.flush();
      this.socket.end();
    }
  }

  // ---- input ------------------------------------------------------------------------------------

  private onSocketData(chunk: Buffer): void {
    if (this.dead) return;
    this.countRead(chunk.length);
    try {
      if (this.prefaceBytes < CLIENT_PREFACE.length) {
        const n = Math.min(chunk.length, CLIENT_PREFACE.length - this.prefaceBytes);
        if (chunk.compare(CLIENT_PREFACE, this.prefaceBytes, this.prefaceBytes + n, 0, n) !== 0) {
          throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'not an HTTP/2 client preface');
        }
        this.prefaceBytes += n;
        if (n === chunk.length) return;
        chunk = chunk.subarray(n);
      }
      this.reader.push(chunk);
    } catch (err) {
      if (err instanceof H2ConnectionError) this.fail(err.code, err.message);
      else if (err instanceof HpackError) this.fail(H2Error.COMPRESSION_ERROR, err.message);
      else {
        this.events.onProtocolError(`internal error: ${(err as Error).stack ?? String(err)}`);
        this.fail(H2Error.INTERNAL_ERROR, 'internal error');
      }
    }
  }

  private onSocketClose(): void {
    this.dead = true;
    for (const done of this.pings.values()) done(new Error('the connection closed'));
    this.pings.clear();
    const open = [...this.streams.values(), ...this.waitingToOpen.splice(0)];
    this.streams.clear();
    this.blocked.clear();
    for (const s of open) s.connectionGone();
    if (!this.closedFired) {
      this.closedFired = true;
      this.events.onClose();
    }
  }

  /** A connection error: GOAWAY, then close. */
  private fail(code: number, message: string): void {
    if (this.dead) return;
    this.events.onProtocolError(message);
    this.out.push(goawayFrame(this.lastStreamId, code, message.slice(0, 256)));
    this.outBytes = 0;
    this.flushScheduled = true; // nothing else goes out
    const out = this.out;
    this.out = [];
    this.dead = true;
    if (!this.socket.destroyed) {
      for (const b of out) this.socket.write(b);
      this.socket.end();
      setTimeout(() => this.socket.destroy(), GOAWAY_LINGER_MS).unref();
    }
  }

  private onFrame(type: number, flags: number, id: number, payload: Buffer): void {
    if (this.dead) return;
    if (!this.settingsSeen) {
      if (type !== FrameType.SETTINGS || flags & Flag.ACK) {
        throw new H2ConnectionError(
          H2Error.PROTOCOL_ERROR,
          'the client preface must be followed by SETTINGS',
        );
      }
      this.settingsSeen = true;
      this.onSettings(flags, id, payload);
      this.events.onReady?.();
      return;
    }
    if (this.continuation && type !== FrameType.CONTINUATION) {
      throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'a header block was interrupted');
    }
    switch (type) {
      case FrameType.DATA:
        return this.onData(flags, id, payload);
      case FrameType.HEADERS:
        return this.onHeaders(flags, id, payload);
      case FrameType.CONTINUATION:
        return this.onContinuation(flags, id, payload);
      case FrameType.PRIORITY:
        if (id === 0) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (payload.length !== 5) this.resetStream(id, H2Error.FRAME_SIZE_ERROR);
        else if ((payload.readUInt32BE(0) & 0x7fffffff) === id) this.resetStream(id, H2Error.PROTOCOL_ERROR);
        return;
      case FrameType.RST_STREAM:
        return this.onReset(id, payload);
      case FrameType.SETTINGS:
        return this.onSettings(flags, id, payload);
      case FrameType.PUSH_PROMISE:
        throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'a client cannot push');
      case FrameType.PING:
        if (id !== 0) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'PING on a stream');
        if (payload.length !== 8)
          throw new H2ConnectionError(H2Error.FRAME_SIZE_ERROR, 'PING of the wrong size');
        if (flags & Flag.ACK) {
          const key = payload.toString('latin1');
          const done = this.pings.get(key);
          this.pings.delete(key);
          done?.();
        } else this.pushReply(pingFrame(payload, true));
        return;
      case FrameType.GOAWAY:
        return this.onGoaway(id, payload);
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(id, payload);
      default:
        return; // unknown frame types are ignored (RFC 9113 §4.1)
    }
  }

  private onData(flags: number, id: number, payload: Buffer): void {
    if (id === 0) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA on stream 0');
    const length = payload.length;
    this.recvWindow -= length;
    if (this.recvWindow < 0) {
      throw new H2ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
    }
    let data = payload;
    if (flags & Flag.PADDED) {
      const pad = length > 0 ? payload[0]! : 0;
      if (length === 0 || pad >= length) {
        throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA padding longer than the frame');
      }
      data = payload.subarray(1, length - pad);
    }
    const s = this.streams.get(id);
    if (!s) {
      if (this.isIdle(id)) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA on an idle stream');
      // A closed stream (maybe reset while this was in flight): its bytes still count against the
      // connection, and the client hears that the stream is closed (RFC 9113 §5.1).
      this.consumed(length);
      if (!this.resetHere.has(id)) this.pushReply(rstStreamFrame(id, H2Error.STREAM_CLOSED));
      return;
    }
    if (s.remoteEnded) {
      this.consumed(length);
      s.reset(H2Error.STREAM_CLOSED);
      return;
    }
    if (!s.takeWindow(length)) {
      this.consumed(length);
      s.reset(H2Error.FLOW_CONTROL_ERROR);
      return;
    }
    // Padding is consumed at once; the data when the stream's reader takes it.
    if (length > data.length) this.consumed(length - data.length);
    s.receive(data, (flags & Flag.END_STREAM) !== 0);
  }

  private onHeaders(flags: number, id: number, payload: Buffer): void {
    if (id === 0 || id % 2 === 0) {
      // Streams are the client's (odd ids); the server never opens one (no push).
      throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, `HEADERS on stream ${id}`);
    }
    let start = 0;
    let end = payload.length;
    if (flags & Flag.PADDED) {
      if (end === 0) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'HEADERS padding missing');
      end -= payload[0]!;
      start = 1;
    }
    let selfDependent = false;
    if (flags & Flag.PRIORITY) {
      if (end < start + 5) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'HEADERS priority cut short');
      selfDependent = (payload.readUInt32BE(start) & 0x7fffffff) === id;
      start += 5;
    }
    if (end < start)
      throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'HEADERS padding longer than the frame');
    const block = payload.subarray(start, end);
    const c = { id, flags, chunks: [block], size: block.length, selfDependent };
    if (flags & Flag.END_HEADERS) this.onHeaderBlock(c, block);
    else this.continuation = c;
  }

  private onContinuation(flags: number, id: number, payload: Buffer): void {
    const c = this.continuation;
    if (!c || c.id !== id) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'CONTINUATION out of place');
    c.chunks.push(payload);
    c.size += payload.length;
    // A block may not grow past what a decoded list could hold (HPACK cannot shrink by much more),
    // nor come in endless pieces (empty CONTINUATION frames cost memory without adding bytes).
    if (c.size > this.settings.maxHeaderListSize * 2 + DEFAULT_MAX_FRAME_SIZE) {
      throw new H2ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'a header block too large');
    }
    if (c.chunks.length > MAX_CONTINUATIONS) {
      throw new H2ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'a header block in too many frames');
    }
    if (flags & Flag.END_HEADERS) {
      this.continuation = undefined;
      this.onHeaderBlock(c, Buffer.concat(c.chunks, c.size));
    }
  }

  private onHeaderBlock(h: HeaderBlock, block: Buffer): void {
    const { id, flags } = h;
    // Decoded whatever becomes of the stream: the decoder's table must follow every block.
    const decoded = this.decoder.decode(block);
    const endStream = (flags & Flag.END_STREAM) !== 0;
    const existing = this.streams.get(id);
    if (this.client) {
      // Response headers or trailers of a request (a stream closed here meanwhile: dropped).
      if (!existing) {
        if (this.isIdle(id))
          throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, `HEADERS on idle stream ${id}`);
        return;
      }
      if (decoded.tooLarge) existing.reset(H2Error.PROTOCOL_ERROR);
      else existing.receiveHeaders(decoded.fields, endStream);
      return;
    }
    if (existing) {
      // Trailers: they must end the stream (gRPC clients send none; their content is ignored).
      if (existing.remoteEnded || !endStream) existing.reset(H2Error.PROTOCOL_ERROR);
      else existing.receive(EMPTY, true);
      return;
    }
    if (id <= this.lastStreamId) {
      if (this.resetHere.has(id)) return; // trailers sent before the client saw the reset
      throw new H2ConnectionError(H2Error.STREAM_CLOSED, `HEADERS on closed stream ${id}`);
    }
    this.lastStreamId = id;
    if (this.goawaySent || this.streams.size >= this.settings.maxConcurrentStreams) {
      this.refuse(id, H2Error.REFUSED_STREAM, endStream);
      return;
    }
    if (decoded.tooLarge) {
      this.push(frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, id, STATUS_431));
      if (!endStream) this.refuse(id, H2Error.NO_ERROR, endStream);
      return;
    }
    const problem = h.selfDependent
      ? 'a stream that depends on itself'
      : (decoded.misordered ?? requestProblem(decoded.fields));
    if (problem) {
      this.events.onProtocolError(`malformed request on stream ${id}: ${problem}`);
      this.refuse(id, H2Error.PROTOCOL_ERROR, endStream);
      return;
    }
    const s = new H2Stream(this, id, this.peerStreamWindow, this.settings.streamWindow);
    const contentLength = decoded.fields['content-length'];
    if (contentLength !== undefined)
      s.expectedLength = /^\d{1,15}$/.test(contentLength) ? Number(contentLength) : -2;
    this.streams.set(id, s);
    this.events.onStream?.(s, decoded.fields);
    if (endStream) s.receive(EMPTY, true);
  }

  private onReset(id: number, payload: Buffer): void {
    if (id === 0) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (payload.length !== 4)
      throw new H2ConnectionError(H2Error.FRAME_SIZE_ERROR, 'RST_STREAM of the wrong size');
    if (this.isIdle(id)) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    const now = Date.now();
    if (now - this.resetWindowStart >= 1_000) {
      this.resetWindowStart = now;
      this.resetsInWindow = 0;
    }
    if (++this.resetsInWindow > MAX_RESETS_PER_SECOND) {
      throw new H2ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'too many streams reset');
    }
    this.streams.get(id)?.remoteReset(payload.readUInt32BE(0));
  }

  private onSettings(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & Flag.ACK) {
      if (payload.length !== 0)
        throw new H2ConnectionError(H2Error.FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      return;
    }
    if (payload.length % 6 !== 0)
      throw new H2ConnectionError(H2Error.FRAME_SIZE_ERROR, 'SETTINGS of the wrong size');
    let grew = false;
    for (let p = 0; p < payload.length; p += 6) {
      const key = payload.readUInt16BE(p);
      const value = payload.readUInt32BE(p + 2);
      if (key === Setting.ENABLE_PUSH && value > 1) {
        throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH above 1');
      } else if (key === Setting.INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW)
          throw new H2ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'initial window too large');
        const delta = value - this.peerStreamWindow;
        this.peerStreamWindow = value;
        for (const s of this.streams.values()) {
          if (!s.addSendWindow(delta)) {
            throw new H2ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'a stream window overflowed');
          }
        }
        if (delta > 0) grew = true;
      } else if (key === Setting.MAX_CONCURRENT_STREAMS) {
        if (this.client) this.peerMaxStreams = value;
      } else if (key === Setting.MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME_SIZE || value > MAX_ALLOWED_FRAME_SIZE) {
          throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range');
        }
        this.peerMaxFrameSize = value;
      } else if (key === Setting.HEADER_TABLE_SIZE) this.encoder?.setPeerTableSize(value);
      // (A server's answers are encoded without the table, so any size works for them.)
    }
    this.pushReply(SETTINGS_ACK);
    if (grew) this.sendBlocked();
    this.openWaiting();
  }

  private onWindowUpdate(id: number, payload: Buffer): void {
    if (payload.length !== 4)
      throw new H2ConnectionError(H2Error.FRAME_SIZE_ERROR, 'WINDOW_UPDATE of the wrong size');
    const increment = payload.readUInt32BE(0) & 0x7fffffff;
    if (id === 0) {
      if (increment === 0) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
      this.sendWindow += increment;
      if (this.sendWindow > MAX_WINDOW)
        throw new H2ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'window overflow');
      this.sendBlocked();
      return;
    }
    if (this.isIdle(id))
      throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
    const s = this.streams.get(id);
    if (!s) return;
    if (increment === 0) s.reset(H2Error.PROTOCOL_ERROR);
    else if (!s.addSendWindow(increment)) s.reset(H2Error.FLOW_CONTROL_ERROR);
    else s.sendQueued();
  }

  private onGoaway(id: number, payload: Buffer): void {
    if (id !== 0) throw new H2ConnectionError(H2Error.PROTOCOL_ERROR, 'GOAWAY on a stream');
    if (payload.length < 8) throw new H2ConnectionError(H2Error.FRAME_SIZE_ERROR, 'GOAWAY cut short');
    const last = payload.readUInt32BE(0) & 0x7fffffff;
    const first = !this.goawayReceived;
    this.goawayReceived = true;
    if (this.client) {
      // Requests above the last id the server took were never processed: refused, safe to retry.
      for (const s of [...this.streams.values()]) if (s.id > last) s.remoteReset(H2Error.REFUSED_STREAM);
      for (const s of this.waitingToOpen.splice(0)) s.remoteReset(H2Error.REFUSED_STREAM);
    }
    if (first) this.events.onGoaway?.();
    this.maybeFinish();
  }

  /** Window opened: streams waiting for it send, in the order they started waiting. */
  private sendBlocked(): void {
    for (const s of this.blocked) {
      if (this.sendWindow <= 0) return;
      s.sendQueued();
    }
  }

  /** Server: reset a request that was never opened here; its DATA may already be on the way. */
  private refuse(id: number, code: number, endStream: boolean): void {
    this.push(rstStreamFrame(id, code));
    if (!endStream) this.resetSent(id);
  }

  /** @internal this side reset stream `id` while the peer may still be sending on it. */
  resetSent(id: number): void {
    this.resetHere.add(id);
    if (this.resetHere.size > MAX_RESETS_REMEMBERED) {
      this.resetHere.delete(this.resetHere.values().next().value!);
    }
  }

  /** A stream error for a stream that may not exist here (any more). */
  private resetStream(id: number, code: number): void {
    const s = this.streams.get(id);
    if (s) s.reset(code);
    else this.push(rstStreamFrame(id, code));
  }
}

interface HeaderBlock {
  id: number;
  flags: number;
  chunks: Buffer[];
  size: number;
  /** Its priority names the stream itself as its parent (a stream error). */
  selfDependent: boolean;
}

const EMPTY = Buffer.alloc(0);
const MAX_STREAM_ID = 2 ** 31 - 1;
/** Streams reset here whose late frames are ignored (see `resetHere`). */
const MAX_RESETS_REMEMBERED = 1024;
/** CONTINUATION frames one header block may take. */
const MAX_CONTINUATIONS = 256;
/** Replies (acknowledgements, resets) queued while the peer does not read them. */
const MAX_QUEUED_REPLIES = 10_000;
/** `:status: 431` (static table name :status, literal value), for a header list over the limit. */
const STATUS_431 = Buffer.from([0x08, 0x03, 0x34, 0x33, 0x31]);

/** What makes a request malformed (RFC 9113 §8.1.1, §8.2, §8.3.1), or undefined. */
function requestProblem(fields: Record<string, string>): string | undefined {
  for (const name in fields) {
    if (name.charCodeAt(0) === 0x3a /* ':' */) {
      if (!REQUEST_PSEUDO.has(name)) return `pseudo-header ${name}`;
    } else if (name !== name.toLowerCase()) return 'an upper-case header name';
    else if (CONNECTION_SPECIFIC.has(name)) return `connection-specific header ${name}`;
    else if (name === 'te' && fields[name] !== 'trailers') return 'te other than trailers';
  }
  if (fields[':method'] === undefined || fields[':scheme'] === undefined || !fields[':path']) {
    return 'a required pseudo-header is missing';
  }
  return undefined;
}
