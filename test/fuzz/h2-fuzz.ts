/**
 * A seeded fuzzer for the broker's HTTP/2 layer (src/common/http2, the gRPC transport): many raw TCP
 * connections to the gRPC port, each a scenario of its own — a valid gRPC session (QueryRoute,
 * Heartbeat, SendMessage, QueryAssignment encoded with the codec), or one mutated frame by frame:
 * random types, flags, stream ids and lengths, truncated and oversized frames, padding edges,
 * CONTINUATION sequences, bogus HPACK (random bytes, huge integers, bad Huffman, size updates),
 * WINDOW_UPDATE and SETTINGS at their edges, RST_STREAM / PRIORITY on idle and closed streams,
 * bursts and rapid resets, half-sent frames then a close, clients that stop reading, and plain
 * garbage. What each connection must see:
 *
 * - a valid request is answered (trailers with grpc-status 0), never reset;
 * - after mutations that left the framing intact, a fresh request is still answered, reset, or the
 *   connection goes away (GOAWAY or closed): never left hanging;
 * - the server never answers INTERNAL_ERROR (GOAWAY or RST_STREAM), and every frame it sends parses
 *   and its header blocks decode;
 * - a GOAWAY with an error code is followed by the server closing the connection, and once the
 *   client ends its side (still reading), the server closes within `closeWithinMs`. A client that
 *   sent a valid preface and then nothing may stay open: those are closed by the client at the end of
 *   the batch, and the caller checks the broker's connection count returns to its baseline.
 *
 * - after only frames a correct client may send (odd but legal: padding, priorities, window and
 *   settings changes, unknown frame types, resets of its own streams, trailers), no GOAWAY with an
 *   error, no reset but REFUSED_STREAM / NO_ERROR / CANCEL, and a fresh request answered OK.
 *
 * Each connection has its own generator seeded from (seed, index): a problem names both, and
 * `npm run fuzz -- --h2-only <index>` reruns that connection alone, printing its frames. The frames
 * themselves are built by h2-mutations.ts. Used by test/fuzz/run-fuzz.ts.
 */
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CLIENT_PREFACE,
  Flag,
  FrameReader,
  FrameType,
  H2Error,
  MAX_WINDOW,
  Setting,
  frame,
  goawayFrame,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/common/http2/frames.js';
import { HpackDecoder } from '../../src/common/http2/hpack.js';
import type { FuzzTargets, Problem } from './edge-fuzz.js';
import {
  LEGAL_MUTATIONS,
  MUTATIONS,
  Rand,
  Session,
  connectionSeed,
  describe,
  errorName,
} from './h2-mutations.js';

export interface H2FuzzOptions {
  host: string;
  port: number;
  seed: number;
  /** Fuzz connections in all. */
  connections: number;
  /** Connections at once (one batch). @defaultValue 24 */
  parallel?: number;
  targets: FuzzTargets;
  /** How long the server may take to close a connection that must close. @defaultValue 5,000 */
  closeWithinMs?: number;
  /** How long a request may take to be answered. @defaultValue 10,000 */
  answerWithinMs?: number;
  /** Called after each batch, once its connections are closed on the client side. */
  afterBatch?: (batch: number) => Promise<void>;
  /** Only these connection indexes (replaying a failure). */
  only?: readonly number[];
  /** Print every frame sent and received to stderr (with `only`, to see what a failure did). */
  trace?: boolean;
}

export interface H2FuzzResult {
  connections: number;
  /** Frames (and garbage writes) sent, and frames received. */
  framesSent: number;
  framesReceived: number;
  bytesSent: number;
  problems: Problem[];
  /** How often each scenario, mutation and server reaction was seen. */
  outcomes: Map<string, number>;
}

// ---- one raw connection --------------------------------------------------------------------------

type Fields = Record<string, string>;

class FuzzConnection {
  readonly socket: net.Socket;
  readonly decoder = new HpackDecoder({ maxHeaderListSize: 1 << 20 });
  closed = false;
  connected = false;
  /** The server's first GOAWAY. */
  goaway: { last: number; code: number } | undefined;
  /** Streams the server ended (END_STREAM), with their last header block. */
  readonly ended = new Map<number, Fields>();
  /** The first header block of each stream (the response headers). */
  readonly answers = new Map<number, Fields>();
  readonly resets = new Map<number, number>();
  reading = true;
  framesSent = 0;
  framesReceived = 0;
  bytesSent = 0;
  private headerBlock: { id: number; flags: number; parts: Buffer[] } | undefined;
  private waiters: (() => void)[] = [];
  private readonly reader: FrameReader;

  constructor(
    port: number,
    host: string,
    private readonly report: (what: string, detail: string) => void,
  ) {
    this.reader = new FrameReader(1 << 24, (type, flags, id, payload) =>
      this.onFrame(type, flags, id, payload),
    );
    this.socket = net.connect({ port, host, noDelay: true });
    this.socket.on('connect', () => {
      this.connected = true;
      this.wake();
    });
    this.socket.on('data', (chunk: Buffer) => {
      try {
        this.reader.push(chunk);
      } catch (err) {
        this.report('server frames', `unreadable: ${(err as Error).message}`);
        this.socket.destroy();
      }
      this.wake();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Wait until `cond` holds or `ms` pass; returns whether it held. */
  async until(cond: () => boolean, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!cond()) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return true;
  }

  write(bytes: Buffer, frames = 1): void {
    if (this.socket.destroyed || this.socket.writableEnded) return;
    this.framesSent += frames;
    this.bytesSent += bytes.length;
    this.socket.write(bytes);
  }

  /** A frame is being written in pieces: replies wait, or they would land inside it. */
  private writingPieces = false;
  private heldReplies: Buffer[] = [];

  private reply(bytes: Buffer): void {
    if (this.writingPieces) this.heldReplies.push(bytes);
    else this.socket.write(bytes);
  }

  /** Start or stop writing in pieces; replies held meanwhile go out after the last piece. */
  pieces(on: boolean): void {
    this.writingPieces = on;
    if (!on && this.heldReplies.length > 0) {
      const held = this.heldReplies;
      this.heldReplies = [];
      if (!this.socket.destroyed && !this.socket.writableEnded) this.socket.write(Buffer.concat(held));
    }
  }

  stopReading(): void {
    this.reading = false;
    this.socket.pause();
  }

  resumeReading(): void {
    this.reading = true;
    this.socket.resume();
  }

  trace: ((line: string) => void) | undefined;

  private onFrame(type: number, flags: number, id: number, payload: Buffer): void {
    this.framesReceived++;
    this.trace?.(`< ${describe(type, flags, id, payload)}`);
    switch (type) {
      case FrameType.HEADERS:
      case FrameType.CONTINUATION: {
        if (type === FrameType.HEADERS) this.headerBlock = { id, flags, parts: [] };
        const h = this.headerBlock;
        if (!h || h.id !== id) {
          this.report(
            'server frames',
            `a ${type === FrameType.HEADERS ? 'HEADERS' : 'CONTINUATION'} out of place`,
          );
          return;
        }
        h.parts.push(payload);
        if (!(flags & Flag.END_HEADERS)) return;
        this.headerBlock = undefined;
        let fields: Fields;
        try {
          fields = this.decoder.decode(Buffer.concat(h.parts)).fields;
        } catch (err) {
          this.report('server frames', `a header block that does not decode: ${(err as Error).message}`);
          return;
        }
        if (!this.answers.has(id)) this.answers.set(id, fields);
        if (h.flags & Flag.END_STREAM) this.ended.set(id, fields);
        return;
      }
      case FrameType.DATA:
        if (flags & Flag.END_STREAM) this.ended.set(id, this.answers.get(id) ?? {});
        // A well-behaved reader gives the window back at once.
        if (payload.length > 0 && this.reading && !this.socket.writableEnded) {
          this.reply(
            Buffer.concat([windowUpdateFrame(0, payload.length), windowUpdateFrame(id, payload.length)]),
          );
        }
        return;
      case FrameType.RST_STREAM: {
        const code = payload.readUInt32BE(0);
        this.resets.set(id, code);
        if (code === H2Error.INTERNAL_ERROR)
          this.report('server reset', `RST_STREAM(INTERNAL_ERROR) on ${id}`);
        return;
      }
      case FrameType.GOAWAY: {
        const code = payload.readUInt32BE(4);
        this.goaway ??= { last: payload.readUInt32BE(0) & 0x7fffffff, code };
        if (code === H2Error.INTERNAL_ERROR) {
          this.report('server GOAWAY', `INTERNAL_ERROR: ${payload.subarray(8).toString()}`);
        }
        return;
      }
      case FrameType.SETTINGS:
        if (!(flags & Flag.ACK) && this.reading && !this.socket.writableEnded) {
          this.reply(frame(FrameType.SETTINGS, Flag.ACK, 0));
        }
        return;
      case FrameType.PING:
        if (!(flags & Flag.ACK) && this.reading && !this.socket.writableEnded) {
          this.reply(frame(FrameType.PING, Flag.ACK, 0, payload));
        }
        return;
      default:
        return;
    }
  }

  /** How the connection ended, if it did. */
  gone(): string {
    return this.goaway ? `GOAWAY(${errorName(this.goaway.code)})` : this.closed ? 'closed' : 'open';
  }

  /** The server said or did something that settles stream `id`. */
  settled(id: number): boolean {
    return this.ended.has(id) || this.resets.has(id) || this.goaway !== undefined || this.closed;
  }
}

// ---- scenarios -----------------------------------------------------------------------------------

type Scenario = 'valid' | 'legal' | 'mutated' | 'stalled' | 'garbage' | 'idle';

/** Resets a server may send a correct client. */
const LEGAL_RESETS: ReadonlySet<number> = new Set([H2Error.NO_ERROR, H2Error.REFUSED_STREAM, H2Error.CANCEL]);

interface Context {
  index: number;
  seed: number;
  opts: Required<Pick<H2FuzzOptions, 'host' | 'port' | 'closeWithinMs' | 'answerWithinMs' | 'targets'>>;
  problems: Problem[];
  count: (k: string) => void;
  /** Connections left open on purpose (closed at the end of the batch). */
  idle: FuzzConnection[];
  /** Every connection of the batch (for the totals). */
  all: FuzzConnection[];
  trace: boolean;
}

/** Writes frames as one burst, or in random pieces with turns of the event loop between them. */
async function send(c: FuzzConnection, r: Rand, frames: Buffer[]): Promise<void> {
  if (frames.length === 0) return;
  if (c.trace) {
    for (const f of frames) {
      if (f.length < 9 || f.readUIntBE(0, 3) !== f.length - 9)
        c.trace(`> ${f.length} bytes: ${f.subarray(0, 32).toString('hex')}`);
      else c.trace(`> ${describe(f[3]!, f[4]!, f.readUInt32BE(5), f.subarray(9))}`);
    }
  }
  const bytes = Buffer.concat(frames);
  if (r.chance(0.6) || bytes.length > 1 << 20) {
    c.write(bytes, frames.length);
    return;
  }
  c.framesSent += frames.length;
  c.pieces(true);
  try {
    for (let p = 0; p < bytes.length;) {
      const n = 1 + r.int(r.chance(0.5) ? 16 : 4096);
      c.write(bytes.subarray(p, p + n), 0);
      p += n;
      if (r.chance(0.3)) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } finally {
    c.pieces(false);
  }
}

async function runConnection(ctx: Context): Promise<void> {
  const r = new Rand(connectionSeed(ctx.seed, ctx.index));
  const { opts } = ctx;
  const scenario = r.weighted<Scenario>([
    ['valid', 20],
    ['legal', 20],
    ['mutated', 35],
    ['stalled', 10],
    ['garbage', 10],
    ['idle', 5],
  ]);
  const label = `seed ${ctx.seed} connection ${ctx.index} (${scenario})`;
  const used: string[] = [];
  const report = (what: string, detail: string) =>
    ctx.problems.push({
      what: `${label}: ${what}`,
      detail: `${detail}${used.length ? ` [after ${used.slice(-8).join(', ')}]` : ''}`,
    });
  ctx.count(`scenario ${scenario}`);
  const c = new FuzzConnection(opts.port, opts.host, report);
  ctx.all.push(c);
  if (ctx.trace) c.trace = (line) => process.stderr.write(`[${ctx.index}] ${line}\n`);
  if (!(await c.until(() => c.connected || c.closed, opts.closeWithinMs)) || !c.connected) {
    report('connect', 'could not connect');
    c.socket.destroy();
    return;
  }
  const s = new Session(r, opts.port, opts.targets, scenario === 'valid' && r.chance(0.5));
  const preface = (): Buffer[] => {
    const settings: [number, number][] = [];
    // (A legal session sends WINDOW_UPDATEs on its streams: their windows must not overflow.)
    const windows = scenario === 'legal' ? [65_535, 1 << 20] : [65_535, 1 << 20, MAX_WINDOW];
    if (r.chance(0.5)) settings.push([Setting.INITIAL_WINDOW_SIZE, r.pick(windows)]);
    if (r.chance(0.3)) settings.push([Setting.MAX_FRAME_SIZE, r.pick([16_384, 1 << 20, 16_777_215])]);
    if (r.chance(0.3)) settings.push([Setting.HEADER_TABLE_SIZE, r.pick([0, 4096, 1 << 20])]);
    if (r.chance(0.2)) settings.push([Setting.ENABLE_PUSH, 0]);
    const out = [CLIENT_PREFACE, settingsFrame(settings)];
    if (r.chance(0.3)) out.push(windowUpdateFrame(0, 1 + r.int(1 << 24)));
    return out;
  };

  try {
    switch (scenario) {
      case 'valid': {
        await send(c, r, preface());
        const ids: number[] = [];
        const frames: Buffer[] = [];
        for (let i = 1 + r.int(6); i > 0; i--) {
          const id = s.newId();
          ids.push(id);
          frames.push(...s.request(id));
        }
        await send(c, r, frames);
        if (!(await c.until(() => ids.every((id) => c.settled(id)), opts.answerWithinMs))) {
          report(
            'valid requests',
            `not answered within ${opts.answerWithinMs} ms: ${ids.filter((id) => !c.settled(id)).join(', ')}`,
          );
        }
        for (const id of ids) {
          const status = c.ended.get(id)?.['grpc-status'];
          if (status !== '0') {
            const how = c.resets.has(id)
              ? `reset (${errorName(c.resets.get(id)!)})`
              : c.goaway
                ? `GOAWAY(${errorName(c.goaway.code)})`
                : c.closed
                  ? 'the connection closed'
                  : `grpc-status ${status} ${c.ended.get(id)?.['grpc-message'] ?? ''}`;
            report('valid request', `stream ${id}: ${how}`);
          }
        }
        ctx.count(`valid ${ids.length} requests answered`);
        if (r.chance(0.3)) c.write(goawayFrame(0, H2Error.NO_ERROR));
        await finish(c, r, ctx, report, 'end');
        return;
      }
      case 'legal': {
        await send(c, r, preface());
        const steps = 1 + r.int(r.chance(0.2) ? 40 : 10);
        for (let i = 0; i < steps && !c.closed; i++) {
          const [name, , mutate] = r.weighted(LEGAL_MUTATIONS.map((m) => [m, m[1]] as const));
          used.push(name);
          ctx.count(`legal ${name}`);
          c.trace?.(`legal ${name}`);
          await send(c, r, mutate(s));
          if (r.chance(0.2)) await sleep(r.int(5));
        }
        const id = await probe(c, s, r, ctx, report);
        if (c.goaway || c.closed) report('legal frames', `the server ended the connection: ${c.gone()}`);
        else if (id !== undefined && c.ended.get(id)?.['grpc-status'] !== '0') {
          report('legal frames', `the request after them was not answered OK (stream ${id})`);
        }
        for (const [sid, code] of c.resets) {
          if (!LEGAL_RESETS.has(code)) report('legal frames', `stream ${sid} reset with ${errorName(code)}`);
        }
        await finish(c, r, ctx, report, r.chance(0.8) ? 'end' : 'destroy');
        return;
      }
      case 'mutated': {
        await send(c, r, preface());
        const steps = 1 + r.int(r.chance(0.2) ? 60 : 12);
        for (let i = 0; i < steps && !c.closed && !s.framingBroken; i++) {
          const [name, , mutate] = r.weighted(MUTATIONS.map((m) => [m, m[1]] as const));
          used.push(name);
          ctx.count(`mutation ${name}`);
          c.trace?.(`mutation ${name}`);
          await send(c, r, mutate(s));
          if (r.chance(0.2)) await sleep(r.int(5));
        }
        await probe(c, s, r, ctx, report);
        await finish(
          c,
          r,
          ctx,
          report,
          r.weighted([
            ['end', 6],
            ['half-frame', 2],
            ['destroy', 2],
          ] as const),
        );
        return;
      }
      case 'stalled': {
        await send(c, r, preface());
        c.stopReading();
        const frames: Buffer[] = [];
        const pings = r.chance(0.5) ? r.int(30_000) : 0;
        const ping = frame(FrameType.PING, 0, 0, Buffer.alloc(8));
        for (let i = 0; i < pings; i++) frames.push(ping);
        for (let i = r.int(200); i > 0; i--) frames.push(...s.request(s.newId(), { plain: true }));
        used.push(`stalled: ${pings} pings, ${frames.length - pings} request frames`);
        await send(c, r, frames);
        await sleep(50 + r.int(200));
        if (r.chance(0.5)) {
          c.resumeReading();
          await finish(c, r, ctx, report, 'end');
        } else await finish(c, r, ctx, report, 'destroy');
        return;
      }
      case 'garbage': {
        const kind = r.int(5);
        used.push(`garbage ${kind}`);
        if (kind === 0) c.write(r.bytes(1 + r.int(2000)));
        else if (kind === 1) c.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\n'));
        else if (kind === 2)
          c.write(
            Buffer.concat([CLIENT_PREFACE.subarray(0, r.int(CLIENT_PREFACE.length)), r.bytes(1 + r.int(50))]),
          );
        else if (kind === 3)
          c.write(Buffer.concat([CLIENT_PREFACE, s.frame(r.pick([0, 1, 6, 8]), 0, 0, r.bytes(8))]));
        else c.write(Buffer.concat([Buffer.from([0x16, 0x03, 0x01]), r.bytes(r.int(300))]));
        await finish(c, r, ctx, report, r.chance(0.8) ? 'end' : 'destroy');
        return;
      }
      case 'idle': {
        // May stay open: the batch closes it, the caller checks the server let go of it then.
        if (r.chance(0.7)) await send(c, r, preface());
        ctx.idle.push(c);
        return;
      }
    }
  } catch (err) {
    report('driver', (err as Error).stack ?? String(err));
    c.socket.destroy();
  }
}

/** After mutations that left the framing intact: a fresh request is settled (answered, reset, or the connection goes). */
async function probe(
  c: FuzzConnection,
  s: Session,
  r: Rand,
  ctx: Context,
  report: (what: string, detail: string) => void,
): Promise<number | undefined> {
  if (c.closed || c.goaway || s.framingBroken || s.maxHeadersId >= 0x7fffffff - 2) {
    ctx.count('probe skipped');
    return undefined;
  }
  const id = s.newId();
  // Only what answers the probe counts (a mutation may have had this idle id reset already).
  c.resets.delete(id);
  c.ended.delete(id);
  // Undo window and frame-size settings a mutation may have left (0 would stall every answer).
  const frames = [
    settingsFrame([[Setting.INITIAL_WINDOW_SIZE, 65_535]]),
    ...s.request(id, { plain: true, method: 'QueryRoute' }),
  ];
  await send(c, r, frames);
  if (!(await c.until(() => c.settled(id), ctx.opts.answerWithinMs))) {
    report(
      'probe',
      `a request on stream ${id} neither answered, reset nor refused within ${ctx.opts.answerWithinMs} ms`,
    );
    return id;
  }
  const ended = c.ended.get(id);
  if (ended) {
    ctx.count(
      `probe answered grpc-status ${ended['grpc-status'] ?? `(none; :status ${ended[':status'] ?? '?'})`}`,
    );
    // The server may have turned to refusing new calls (GOAWAY after this one), but an answer is OK.
    if (ended['grpc-status'] !== '0') {
      report(
        'probe',
        `stream ${id} answered grpc-status ${ended['grpc-status']} ${ended['grpc-message'] ?? ''}`,
      );
    }
  } else if (c.resets.has(id)) ctx.count(`probe reset ${errorName(c.resets.get(id)!)}`);
  else ctx.count(`probe: connection ${c.gone()}`);
  return id;
}

/** End the client's side one way or another; what must close, closes. */
async function finish(
  c: FuzzConnection,
  r: Rand,
  ctx: Context,
  report: (what: string, detail: string) => void,
  how: 'end' | 'half-frame' | 'destroy',
): Promise<void> {
  const { closeWithinMs } = ctx.opts;
  try {
    if (c.goaway && c.goaway.code !== H2Error.NO_ERROR) {
      ctx.count(`server GOAWAY ${errorName(c.goaway.code)}`);
      if (!c.reading) c.resumeReading();
      if (!(await c.until(() => c.closed, closeWithinMs))) {
        report('close', `GOAWAY(${errorName(c.goaway.code)}) but still open ${closeWithinMs} ms later`);
      }
      return;
    }
    if (c.closed) {
      ctx.count('closed by the server');
      return;
    }
    if (how === 'destroy') {
      ctx.count('client destroyed');
      return;
    }
    if (how === 'half-frame') {
      const f = frame(r.int(10), 0, 1, r.bytes(1 + r.int(100)));
      c.write(f.subarray(0, 1 + r.int(f.length - 1)));
    }
    c.socket.end();
    ctx.count(`client ${how}`);
    if (!(await c.until(() => c.closed, closeWithinMs))) {
      report('close', `still open ${closeWithinMs} ms after the client ended its side (${how})`);
    }
  } finally {
    c.socket.destroy();
  }
}

/** Run the fuzz: `connections` connections, `parallel` at a time. */
export async function fuzzH2(options: H2FuzzOptions): Promise<H2FuzzResult> {
  const opts = {
    host: options.host,
    port: options.port,
    targets: options.targets,
    closeWithinMs: options.closeWithinMs ?? 5_000,
    answerWithinMs: options.answerWithinMs ?? 10_000,
  };
  const parallel = options.parallel ?? 24;
  const problems: Problem[] = [];
  const outcomes = new Map<string, number>();
  const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
  const indexes = options.only ?? Array.from({ length: options.connections }, (_, i) => i);
  const totals = { framesSent: 0, framesReceived: 0, bytesSent: 0 };
  for (let b = 0, batch = 0; b < indexes.length; b += parallel, batch++) {
    const idle: FuzzConnection[] = [];
    const all: FuzzConnection[] = [];
    await Promise.all(
      indexes.slice(b, b + parallel).map((index) =>
        runConnection({
          index,
          seed: options.seed,
          opts,
          problems,
          count,
          idle,
          all,
          trace: options.trace ?? false,
        }),
      ),
    );
    for (const c of idle) c.socket.destroy();
    for (const c of all) {
      totals.framesSent += c.framesSent;
      totals.framesReceived += c.framesReceived;
      totals.bytesSent += c.bytesSent;
    }
    if (options.afterBatch) await options.afterBatch(batch);
  }
  return { connections: indexes.length, ...totals, problems, outcomes };
}
