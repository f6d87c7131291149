/**
 * The server side of an HTTP/2 connection (src/protocol/transport/h2-connection.ts), driven frame by
 * frame from a raw socket: the preface and SETTINGS exchange, PING, header blocks over CONTINUATION,
 * the stream limit, both directions' flow control, malformed requests, reset floods and the graceful
 * GOAWAY — and, with node:http2's client (nghttp2), large answers under a small window and large
 * header blocks.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import {
  CLIENT_PREFACE,
  Flag,
  FrameReader,
  FrameType,
  H2Error,
  Setting,
  frame,
  rstStreamFrame,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/common/http2/frames.js';
import { HpackDecoder, HpackEncoder } from '../../src/common/http2/hpack.js';
import { H2Connection, type H2Stream } from '../../src/common/http2/connection.js';
import { startH2TestServer, type H2TestServer } from '../support/h2-test-server.js';

const encoder = new HpackEncoder();
const OK_HEADERS = encoder.encode({ ':status': '200', 'content-type': 'application/grpc' });
const OK_TRAILERS = encoder.encode({ 'grpc-status': '0' });

/** What each test's server does with a stream: echo's default answers `answerBytes` of 7s. */
let onStream: (s: H2Stream, headers: Record<string, string>) => void;
let server: H2TestServer;
let port: number;
let connections: Set<H2Connection>;

function answer(bytes: number) {
  return (s: H2Stream) => {
    s.onEnd = () => {
      s.respond(OK_HEADERS, false);
      s.write(Buffer.alloc(bytes, 7));
      s.trailers(OK_TRAILERS);
    };
  };
}

before(async () => {
  server = await startH2TestServer(
    {
      maxConcurrentStreams: 4,
      streamWindow: 1024,
      connectionWindow: 64 * 1024,
      maxHeaderListSize: 48 * 1024,
    },
    (s, h) => onStream(s, h),
  );
  port = server.port;
  connections = server.connections;
});

after(() => server.close());

interface Frame {
  type: number;
  flags: number;
  id: number;
  payload: Buffer;
}

/** A raw client: writes bytes, collects the frames the server sends. */
class RawClient {
  readonly frames: Frame[] = [];
  readonly socket: net.Socket;
  private readonly reader = new FrameReader(1 << 24, (type, flags, id, payload) =>
    this.frames.push({ type, flags, id, payload: Buffer.from(payload) }),
  );
  private waiters: (() => void)[] = [];
  closed = false;

  constructor(to = port) {
    this.socket = net.connect(to, '127.0.0.1');
    this.socket.on('data', (d: Buffer) => {
      this.reader.push(d);
      for (const w of this.waiters.splice(0)) w();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async open(settings: [number, number][] = [], to = port): Promise<RawClient> {
    const c = new RawClient(to);
    await once(c.socket, 'connect');
    c.send(CLIENT_PREFACE, settingsFrame(settings));
    await c.until((f) => f.type === FrameType.SETTINGS && (f.flags & Flag.ACK) !== 0);
    return c;
  }

  send(...bufs: Buffer[]): void {
    this.socket.write(Buffer.concat(bufs));
  }

  /** Request headers on `id`: HEADERS, and CONTINUATION frames for a block over 16 KiB. */
  headers(id: number, extra: Record<string, string> = {}, endStream = false): Buffer {
    const block = encoder.encode({
      ':method': 'POST',
      ':scheme': 'http',
      ':path': '/t.T/Echo',
      'content-type': 'application/grpc',
      ...extra,
    });
    const end = endStream ? Flag.END_STREAM : 0;
    const max = 16_384;
    if (block.length <= max) return frame(FrameType.HEADERS, Flag.END_HEADERS | end, id, block);
    const frames = [frame(FrameType.HEADERS, end, id, block.subarray(0, max))];
    for (let p = max; p < block.length; p += max) {
      const last = p + max >= block.length;
      frames.push(frame(FrameType.CONTINUATION, last ? Flag.END_HEADERS : 0, id, block.subarray(p, p + max)));
    }
    return Buffer.concat(frames);
  }

  /** Resolves with the first frame received that matches (from the start), or when the socket closes. */
  async until(match: (f: Frame) => boolean, timeoutMs = 5000): Promise<Frame | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = this.frames.find(match);
      if (f || this.closed) return f;
      if (Date.now() > deadline) throw new Error('no such frame in time');
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  async goaway(): Promise<number | undefined> {
    const f = await this.until((x) => x.type === FrameType.GOAWAY);
    return f?.payload.readUInt32BE(4);
  }

  close(): void {
    this.socket.destroy();
  }
}

test('SETTINGS and PING are acknowledged; the server announces its limits and window', async () => {
  onStream = answer(0);
  const c = await RawClient.open();
  const settings = c.frames.find((f) => f.type === FrameType.SETTINGS && f.flags === 0)!;
  const values = new Map<number, number>();
  for (let p = 0; p < settings.payload.length; p += 6) {
    values.set(settings.payload.readUInt16BE(p), settings.payload.readUInt32BE(p + 2));
  }
  assert.equal(values.get(Setting.MAX_CONCURRENT_STREAMS), 4);
  assert.equal(values.get(Setting.INITIAL_WINDOW_SIZE), 1024);
  const wu = c.frames.find((f) => f.type === FrameType.WINDOW_UPDATE && f.id === 0)!;
  assert.equal(wu.payload.readUInt32BE(0), 64 * 1024 - 65_535);
  const payload = Buffer.from('12345678');
  c.send(frame(FrameType.PING, 0, 0, payload));
  const ack = await c.until((f) => f.type === FrameType.PING);
  assert.equal(ack!.flags & Flag.ACK, Flag.ACK);
  assert.deepEqual(ack!.payload, payload);
  c.close();
});

test('a connection that does not start with the preface gets GOAWAY(PROTOCOL_ERROR) and is closed', async () => {
  const c = new RawClient();
  await once(c.socket, 'connect');
  c.send(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
  assert.equal(await c.goaway(), H2Error.PROTOCOL_ERROR);
  await c.until(() => false).catch(() => {});
  assert.equal(c.closed, true);
});

test('a header block over HEADERS and CONTINUATION opens one request', async () => {
  const seen: Record<string, string>[] = [];
  onStream = (s, h) => {
    seen.push(h);
    answer(3)(s);
  };
  const c = await RawClient.open();
  const block = encoder.encode({
    ':method': 'POST',
    ':scheme': 'http',
    ':path': '/t.T/Echo',
    'x-long': 'v'.repeat(300),
  });
  c.send(
    frame(FrameType.HEADERS, Flag.END_STREAM, 1, block.subarray(0, 10)),
    frame(FrameType.CONTINUATION, 0, 1, block.subarray(10, 100)),
    frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, block.subarray(100)),
  );
  const trailers = await c.until((f) => f.type === FrameType.HEADERS && (f.flags & Flag.END_STREAM) !== 0);
  assert.ok(trailers);
  assert.equal(seen[0]!['x-long'], 'v'.repeat(300));
  const data = c.frames.filter((f) => f.type === FrameType.DATA && f.id === 1);
  assert.equal(Buffer.concat(data.map((f) => f.payload)).length, 3);
  c.close();
});

test('any other frame inside a header block is a connection error', async () => {
  onStream = answer(0);
  const c = await RawClient.open();
  const block = encoder.encode({ ':method': 'POST', ':scheme': 'http', ':path': '/x' });
  c.send(frame(FrameType.HEADERS, 0, 1, block), frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
  assert.equal(await c.goaway(), H2Error.PROTOCOL_ERROR);
  c.close();
});

test('streams beyond the limit are refused with REFUSED_STREAM; the others are served', async () => {
  const held: H2Stream[] = [];
  onStream = (s) => held.push(s); // never answered: they stay open
  const c = await RawClient.open();
  for (const id of [1, 3, 5, 7, 9]) c.send(c.headers(id, {}, true));
  const refused = await c.until((f) => f.type === FrameType.RST_STREAM);
  assert.equal(refused!.id, 9);
  assert.equal(refused!.payload.readUInt32BE(0), H2Error.REFUSED_STREAM);
  assert.equal(held.length, 4);
  for (const s of held) s.reset(H2Error.CANCEL);
  c.close();
});

test('DATA beyond a stream window resets that stream; beyond the connection window, the connection', async () => {
  onStream = () => {};
  const c = await RawClient.open();
  c.send(c.headers(1), frame(FrameType.DATA, 0, 1, Buffer.alloc(1025)));
  const rst = await c.until((f) => f.type === FrameType.RST_STREAM && f.id === 1);
  assert.equal(rst!.payload.readUInt32BE(0), H2Error.FLOW_CONTROL_ERROR);
  c.close();
  // A connection window of 64 KiB and stream windows as large: two paused streams (nothing read,
  // nothing given back) of 40,000 bytes each pass it.
  const wide = await startH2TestServer(
    { maxConcurrentStreams: 4, streamWindow: 65_535, connectionWindow: 65_535, maxHeaderListSize: 4096 },
    (s) => s.pause(),
  );
  try {
    const w = await RawClient.open([], wide.port);
    w.send(
      w.headers(1),
      frame(FrameType.DATA, 0, 1, Buffer.alloc(16_000)),
      frame(FrameType.DATA, 0, 1, Buffer.alloc(16_000)),
      frame(FrameType.DATA, 0, 1, Buffer.alloc(8_000)),
      w.headers(3),
      frame(FrameType.DATA, 0, 3, Buffer.alloc(16_000)),
      frame(FrameType.DATA, 0, 3, Buffer.alloc(16_000)),
      frame(FrameType.DATA, 0, 3, Buffer.alloc(8_000)),
    );
    assert.equal(await w.goaway(), H2Error.FLOW_CONTROL_ERROR);
    w.close();
  } finally {
    await wide.close();
  }
});

test('an answer larger than the client window waits for WINDOW_UPDATE, trailers after the last byte', async () => {
  onStream = answer(1000);
  const c = await RawClient.open([[Setting.INITIAL_WINDOW_SIZE, 100]]);
  c.send(c.headers(1, {}, true));
  await c.until((f) => f.type === FrameType.DATA && f.id === 1);
  await new Promise((r) => setTimeout(r, 50));
  const sent = () =>
    c.frames.filter((f) => f.type === FrameType.DATA && f.id === 1).reduce((n, f) => n + f.payload.length, 0);
  assert.equal(sent(), 100);
  assert.equal(c.frames.filter((f) => f.type === FrameType.HEADERS && f.id === 1).length, 1); // no trailers yet
  c.send(windowUpdateFrame(1, 900));
  const trailers = await c.until(
    (f) => f.type === FrameType.HEADERS && f.id === 1 && (f.flags & Flag.END_STREAM) !== 0,
  );
  assert.ok(trailers);
  assert.equal(sent(), 1000);
  const decoded = new HpackDecoder().decode(trailers!.payload);
  assert.ok(decoded.fields['grpc-status'] !== undefined || decoded.fields[':status'] !== undefined);
  c.close();
});

test('malformed requests are reset with PROTOCOL_ERROR; a header list over the limit gets 431', async () => {
  const opened: Record<string, string>[] = [];
  onStream = (s, h) => {
    opened.push(h);
    answer(0)(s);
  };
  const c = await RawClient.open();
  c.send(c.headers(1, { 'X-Upper': 'a' }, true));
  c.send(c.headers(3, { connection: 'keep-alive' }, true));
  c.send(
    frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 5, encoder.encode({ ':method': 'POST' })),
  );
  for (const id of [1, 3, 5]) {
    const rst = await c.until((f) => f.type === FrameType.RST_STREAM && f.id === id);
    assert.equal(rst!.payload.readUInt32BE(0), H2Error.PROTOCOL_ERROR, `stream ${id}`);
  }
  c.send(c.headers(7, { 'x-big': 'b'.repeat(50_000) }, true));
  const h = await c.until((f) => f.type === FrameType.HEADERS && f.id === 7);
  assert.equal(new HpackDecoder().decode(h!.payload).fields[':status'], '431');
  // The connection still serves.
  c.send(c.headers(9, {}, true));
  assert.ok(await c.until((f) => f.type === FrameType.HEADERS && f.id === 9));
  assert.equal(opened.length, 1);
  c.close();
});

test('a flood of opened-and-reset streams closes the connection with ENHANCE_YOUR_CALM', async () => {
  onStream = () => {};
  const c = await RawClient.open();
  const bufs: Buffer[] = [];
  for (let i = 0; i < 6000; i++) {
    const id = 1 + 2 * i;
    bufs.push(c.headers(id), rstStreamFrame(id, H2Error.CANCEL));
  }
  c.send(...bufs);
  assert.equal(await c.goaway(), H2Error.ENHANCE_YOUR_CALM);
  c.close();
});

test('GOAWAY lets open streams finish, refuses new ones, then closes the socket', async () => {
  const held: H2Stream[] = [];
  onStream = (s) => held.push(s);
  const c = await RawClient.open();
  c.send(c.headers(1, {}, true));
  await c.until(() => held.length === 1);
  for (const conn of connections) conn.goaway();
  assert.equal(await c.goaway(), H2Error.NO_ERROR);
  c.send(c.headers(3, {}, true));
  const rst = await c.until((f) => f.type === FrameType.RST_STREAM && f.id === 3);
  assert.equal(rst!.payload.readUInt32BE(0), H2Error.REFUSED_STREAM);
  assert.equal(c.closed, false);
  held[0]!.respond(OK_HEADERS, false);
  held[0]!.write(Buffer.from([0, 0, 0, 0, 0]));
  held[0]!.trailers(OK_TRAILERS);
  await c.until(() => false, 2000).catch(() => {});
  assert.equal(c.closed, true);
});

test('with node:http2 as the client: a 1 MiB answer through a 16 KiB window, and 40 KB header blocks both ways', async () => {
  onStream = (s, h) => {
    const size = Number(h['x-size']);
    s.onEnd = () => {
      s.respond(encoder.encode({ ':status': '200', 'x-echo': h['x-pad'] ?? '' }), false);
      s.write(Buffer.alloc(size, 9));
      s.trailers(OK_TRAILERS);
    };
  };
  const session = http2.connect(`http://127.0.0.1:${port}`, {
    settings: { initialWindowSize: 16 * 1024 },
    maxHeaderListPairs: 1000,
  });
  try {
    const pad = 'p'.repeat(40_000);
    const got = await new Promise<{ bytes: number; echo: string; status: string }>((resolve, reject) => {
      const st = session.request({
        ':method': 'POST',
        ':path': '/t.T/Big',
        'x-size': String(1 << 20),
        'x-pad': pad,
      });
      let bytes = 0;
      let echo = '';
      st.on('response', (h) => (echo = String(h['x-echo'])));
      st.on('data', (d: Buffer) => (bytes += d.length));
      st.on('trailers', (t) => resolve({ bytes, echo, status: String(t['grpc-status']) }));
      st.on('error', reject);
      st.end();
    });
    assert.deepEqual(got, { bytes: 1 << 20, echo: pad, status: '0' });
  } finally {
    session.destroy();
  }
});

test('the frame reader gives the same frames however the bytes are cut (headers split, frames over many chunks)', () => {
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const sent: Frame[] = [];
  for (let i = 0; i < 60; i++) {
    const size = i % 10 === 0 ? 200_000 + rand(100_000) : rand(300);
    const payload = Buffer.alloc(size, i);
    sent.push({ type: rand(10), flags: rand(256), id: rand(1000), payload });
  }
  const bytes = Buffer.concat(sent.map((f) => frame(f.type, f.flags, f.id, f.payload)));
  for (const maxCut of [1, 7, 100, 70_000]) {
    const got: Frame[] = [];
    const reader = new FrameReader(1 << 20, (type, flags, id, payload) =>
      got.push({ type, flags, id, payload: Buffer.from(payload) }),
    );
    for (let p = 0; p < bytes.length;) {
      const n = 1 + rand(maxCut);
      reader.push(bytes.subarray(p, p + n));
      p += n;
    }
    assert.equal(reader.buffered, 0);
    assert.deepEqual(got, sent, `cuts of up to ${maxCut} bytes`);
  }
  const small = new FrameReader(16_384, () => {});
  assert.throws(() => small.push(frame(FrameType.DATA, 0, 1, Buffer.alloc(16_385))), /16385 bytes/);
});

test('a header block in endless empty CONTINUATION frames closes the connection (ENHANCE_YOUR_CALM)', async () => {
  onStream = answer(0);
  const c = await RawClient.open();
  const block = encoder.encode({ ':method': 'POST', ':scheme': 'http', ':path': '/x' });
  const frames = [frame(FrameType.HEADERS, 0, 1, block)];
  for (let i = 0; i < 300; i++) frames.push(frame(FrameType.CONTINUATION, 0, 1));
  c.send(...frames);
  assert.equal(await c.goaway(), H2Error.ENHANCE_YOUR_CALM);
  c.close();
});

test('a client that floods PINGs and never reads the answers is disconnected, its replies bounded', async () => {
  onStream = answer(0);
  const c = await RawClient.open();
  const before = connections.size;
  c.socket.pause(); // reads nothing from now on: the server's PING ACKs pile up
  const ping = frame(FrameType.PING, 0, 0, Buffer.alloc(8));
  const batch = Buffer.concat(Array.from({ length: 2000 }, () => ping));
  const deadline = Date.now() + 20_000;
  while (connections.size >= before && Date.now() < deadline && !c.socket.destroyed) {
    if (c.socket.writableLength < 1 << 20) c.socket.write(batch);
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.ok(connections.size < before, 'the server closed the connection');
  c.close();
});

test('frames still in flight on a stream the server reset or refused are ignored: no STREAM_CLOSED, no GOAWAY (RFC 9113 §5.1; found by the HTTP/2 fuzz)', async () => {
  // Answered early and reset while the client was still sending (as an unknown method is).
  onStream = (s, h) => {
    if (h[':path'] === '/t.T/Echo') return answer(0)(s);
    s.respond(OK_TRAILERS, true);
    if (!s.closed) s.reset(H2Error.NO_ERROR);
  };
  const c = await RawClient.open();
  c.send(c.headers(1, { ':path': '/t.T/Refused' }), frame(FrameType.DATA, 0, 1, Buffer.alloc(10)));
  await c.until((f) => f.type === FrameType.RST_STREAM && f.id === 1);
  // More DATA and then trailers the client had sent before it saw the reset.
  c.send(
    frame(FrameType.DATA, 0, 1, Buffer.alloc(10)),
    frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, encoder.encode({ 'x-trailer': 'v' })),
    c.headers(3, {}, true),
  );
  assert.ok(
    await c.until((f) => f.type === FrameType.HEADERS && f.id === 3 && (f.flags & Flag.END_STREAM) !== 0),
  );
  assert.deepEqual(
    c.frames.filter((f) => f.type === FrameType.RST_STREAM).map((f) => [f.id, f.payload.readUInt32BE(0)]),
    [[1, H2Error.NO_ERROR]],
  );
  assert.equal(c.frames.filter((f) => f.type === FrameType.GOAWAY).length, 0);
  c.close();

  // Refused beyond the stream limit, with its DATA already on the way.
  const held: H2Stream[] = [];
  onStream = (s) => held.push(s);
  const d = await RawClient.open();
  for (const id of [1, 3, 5, 7, 9]) d.send(d.headers(id));
  d.send(frame(FrameType.DATA, Flag.END_STREAM, 9, Buffer.alloc(10)));
  await d.until((f) => f.type === FrameType.RST_STREAM && f.id === 9);
  d.send(frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
  await d.until((f) => f.type === FrameType.PING);
  assert.deepEqual(
    d.frames.filter((f) => f.type === FrameType.RST_STREAM).map((f) => [f.id, f.payload.readUInt32BE(0)]),
    [[9, H2Error.REFUSED_STREAM]],
  );
  for (const s of held) s.reset(H2Error.CANCEL);
  d.close();
});

test('DATA held by a paused stream that is then reset goes back to the connection window', async () => {
  // The connection window is 64 KiB; each stream gets 1,000 bytes it never reads, then is reset.
  // Without giving the held bytes back, the window would run dry after 65 streams.
  onStream = (s) => {
    s.pause();
    s.onData = () => assert.fail('a paused stream delivered data');
    setImmediate(() => s.reset(H2Error.CANCEL));
  };
  const c = await RawClient.open();
  for (let i = 0; i < 100; i++) {
    const id = 1 + 2 * i;
    c.send(c.headers(id), frame(FrameType.DATA, 0, id, Buffer.alloc(1000)));
    await c.until((f) => f.type === FrameType.RST_STREAM && f.id === id);
  }
  const updates = c.frames.filter((f) => f.type === FrameType.WINDOW_UPDATE && f.id === 0);
  assert.ok(updates.length >= 2, 'the connection window was given back');
  assert.equal(await c.until((f) => f.type === FrameType.GOAWAY, 200).catch(() => undefined), undefined);
  c.close();
});

test('a burst of frames is read at most 64 KiB per event-loop turn, so other work runs in between', async () => {
  const c = await RawClient.open();
  const conn = [...connections].at(-1)!;
  let thisTurn = 0;
  let maxTurn = 0;
  let turns = 0;
  let total = 0;
  const BURST = 4 * 1024 * 1024;
  const tick = () => {
    maxTurn = Math.max(maxTurn, thisTurn);
    thisTurn = 0;
    turns++;
    if (total < BURST) setImmediate(tick);
  };
  conn.socket.on('data', (d: Buffer) => {
    thisTurn += d.length;
    total += d.length;
  });
  setImmediate(tick);
  // PRIORITY frames need no answer: 4 MiB of them, written at once.
  const one = frame(FrameType.PRIORITY, 0, 1, Buffer.from([0, 0, 0, 0, 16]));
  c.send(Buffer.concat(new Array<Buffer>(Math.ceil(BURST / one.length)).fill(one)));
  const deadline = Date.now() + 10_000;
  while (total < BURST && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.ok(total >= BURST, `the server read ${total} of ${BURST} bytes`);
  // One chunk (≤ 64 KiB) may arrive after the pause, read ahead by the socket: at most two per turn.
  assert.ok(maxTurn <= 2 * 64 * 1024, `read ${maxTurn} bytes in one turn`);
  assert.ok(turns >= BURST / (2 * 64 * 1024), `${turns} turns`);
  // The connection is still good: a PING is answered.
  c.send(frame(FrameType.PING, 0, 0, Buffer.alloc(8, 1)));
  assert.ok(await c.until((f) => f.type === FrameType.PING && (f.flags & Flag.ACK) !== 0));
  c.close();
});

test('what a beforeFlush hook queues leaves in the same socket write as the rest of the turn; a hook alone writes nothing', async () => {
  const listener = net.createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const peer = net.connect((listener.address() as net.AddressInfo).port, '127.0.0.1');
  const [socket] = (await once(listener, 'connection')) as [net.Socket];
  const c = new H2Connection(
    socket,
    {
      role: 'server',
      maxConcurrentStreams: 4,
      streamWindow: 65_535,
      connectionWindow: 65_535,
      maxHeaderListSize: 1024,
    },
    { onClose: () => {}, onProtocolError: () => {} },
  );
  try {
    await new Promise((r) => setImmediate(r)); // the server's SETTINGS went out
    const writes: number[] = [];
    const write = socket.write.bind(socket) as (b: Buffer) => boolean;
    socket.write = ((b: Buffer) => {
      writes.push(b.length);
      return write(b);
    }) as typeof socket.write;
    c.beforeFlush(() => c.push(Buffer.alloc(7)));
    c.push(Buffer.alloc(5));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(writes, [12], 'one write: the turn and the hook');
    c.beforeFlush(() => c.push(Buffer.alloc(3)));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(writes, [12], 'nothing else to write: no flush for the hook alone');
    c.push(Buffer.alloc(1));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(writes, [12, 4], 'it joins the next write there is');
  } finally {
    c.destroy();
    peer.destroy();
    await new Promise((r) => listener.close(r));
  }
});

test('the frame reader cuts frames at any chunking; a frame spread over chunks is copied alone', () => {
  // Frames of 0 to 300 payload bytes, each payload filled with its index.
  const sent: Buffer[] = [];
  for (let i = 0; i < 60; i++)
    sent.push(frame(FrameType.DATA, 0, 1 + (i % 5) * 2, Buffer.alloc((i * 37) % 301, i)));
  const wire = Buffer.concat(sent);
  for (const cut of [1, 2, 8, 9, 10, 100, 4096]) {
    const got: { type: number; stream: number; payload: Buffer; chunk: number }[] = [];
    const chunks: Buffer[] = [];
    const reader = new FrameReader(1 << 14, (type, _flags, stream, payload) =>
      got.push({
        type,
        stream,
        payload: Buffer.from(payload),
        chunk: chunks.findIndex((c) => c.buffer === payload.buffer),
      }),
    );
    for (let at = 0; at < wire.length; at += cut) {
      // Each chunk in its own memory, as Node hands them out (Buffer.alloc never uses the pool).
      const chunk = Buffer.alloc(Math.min(cut, wire.length - at));
      wire.copy(chunk, 0, at);
      chunks.push(chunk);
      reader.push(chunk);
    }
    assert.equal(reader.buffered, 0, `cut ${cut}: bytes left over`);
    assert.equal(got.length, sent.length, `cut ${cut}: frames`);
    for (let i = 0; i < sent.length; i++) {
      assert.equal(got[i]!.stream, 1 + (i % 5) * 2);
      assert.deepEqual(got[i]!.payload, Buffer.alloc((i * 37) % 301, i), `cut ${cut}: frame ${i}`);
    }
    if (cut === 4096) {
      // Only the frames that straddle a chunk boundary are copies; all the others are views of the chunk.
      let at = 0;
      for (let i = 0; i < sent.length; i++) {
        const within: boolean = Math.floor(at / cut) === Math.floor((at + sent[i]!.length - 1) / cut);
        assert.equal(got[i]!.chunk >= 0, within, `frame ${i} at ${at}: ${within ? 'a view' : 'a copy'}`);
        at += sent[i]!.length;
      }
    }
  }
});

test('a closed stream lets go of its handlers, however it closed (answered, reset by either side, connection gone)', async () => {
  // A stream can outlive its call (old after a full collection): its handlers would keep what they
  // reach (the call's collected answer) alive past every young collection (docs/benchmarks.md,
  // twenty-fourth session).
  const streams: H2Stream[] = [];
  const handlers = (s: H2Stream) => [s.onData, s.onEnd, s.onHeaders, s.onDrain, s.onClose];
  onStream = (s, h) => {
    streams.push(s);
    s.onData = () => {};
    s.onDrain = () => {};
    s.onClose = () => {};
    const how = h['x-how'];
    if (how === 'answer') answer(10)(s);
    else if (how === 'reset-here') s.onEnd = () => s.reset(H2Error.CANCEL);
    else s.onEnd = () => {};
  };
  const settle = async (check: () => boolean) => {
    for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
    return check();
  };
  const c = await RawClient.open();
  c.send(c.headers(1, { 'x-how': 'answer' }, true));
  await c.until((f) => f.type === FrameType.HEADERS && f.id === 1 && (f.flags & Flag.END_STREAM) !== 0);
  c.send(c.headers(3, { 'x-how': 'reset-here' }, true));
  await c.until((f) => f.type === FrameType.RST_STREAM && f.id === 3);
  c.send(c.headers(5, { 'x-how': 'wait' }, true));
  assert.ok(await settle(() => streams.length === 3));
  c.send(rstStreamFrame(5, H2Error.CANCEL));
  c.send(c.headers(7, { 'x-how': 'wait' }, true));
  assert.ok(await settle(() => streams.length === 4));
  assert.ok(await settle(() => handlers(streams[2]!).every((f) => f === undefined)), 'reset by the peer');
  assert.ok(
    handlers(streams[3]!).some((f) => f !== undefined),
    'an open stream keeps its handlers',
  );
  c.close();
  assert.ok(
    await settle(() => streams.every((s) => handlers(s).every((f) => f === undefined))),
    'answered, reset here, reset by the peer, connection gone: no handler left',
  );
});
