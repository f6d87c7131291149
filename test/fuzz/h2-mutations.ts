/**
 * What the HTTP/2 fuzzer (h2-fuzz.ts) sends: a seeded generator, gRPC requests encoded with the
 * codec, and the frames of one connection's session — valid requests, and mutations of every kind
 * (`MUTATIONS`), or only frames a correct client may send (`LEGAL_MUTATIONS`), after which the
 * connection must still serve.
 */
import {
  Flag,
  FrameType,
  H2Error,
  MAX_WINDOW,
  Setting,
  frame,
  goawayFrame,
  rstStreamFrame,
  settingsFrame,
} from '../../src/common/http2/frames.js';
import { HpackEncoder } from '../../src/common/http2/hpack.js';
import { encode, fromMillis, messagingMethods } from '../../src/protocol/codec.js';
import { frameMessage } from '../../src/protocol/transport/grpc-wire.js';
import { requestBytes, type FuzzTargets } from './edge-fuzz.js';
import { rng } from '../support/rng.js';

// ---- a small seeded generator --------------------------------------------------------------------

export class Rand {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = rng(seed);
  }
  float(): number {
    return this.next();
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) b[i] = this.int(256);
    return b;
  }
  weighted<T>(xs: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, w] of xs) total += w;
    let at = this.next() * total;
    for (const [x, w] of xs) {
      if ((at -= w) < 0) return x;
    }
    return xs[xs.length - 1]![0];
  }
}

/** The generator of connection `index` of a run: independent of every other connection. */
export function connectionSeed(seed: number, index: number): number {
  return (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
}

const ERROR_NAMES = Object.fromEntries(Object.entries(H2Error).map(([k, v]) => [v, k])) as Record<
  number,
  string
>;
export const errorName = (code: number) => ERROR_NAMES[code] ?? `0x${code.toString(16)}`;

// ---- gRPC requests -------------------------------------------------------------------------------

const METHODS = ['QueryRoute', 'Heartbeat', 'SendMessage', 'QueryAssignment'] as const;

export function requestMessage(r: Rand, method: string, t: FuzzTargets, port: number): Buffer {
  const endpoints = { scheme: 1, addresses: [{ host: '127.0.0.1', port }] };
  const type = messagingMethods().get(method)!.requestType;
  switch (method) {
    case 'QueryRoute':
      return Buffer.from(encode(type, { topic: { name: t.topic }, endpoints }));
    case 'Heartbeat':
      return Buffer.from(encode(type, { group: { name: t.group }, client_type: 1 }));
    case 'QueryAssignment':
      return Buffer.from(encode(type, { topic: { name: t.topic }, group: { name: t.group }, endpoints }));
    default:
      return Buffer.from(
        encode(type, {
          messages: [
            {
              topic: { name: t.topic },
              body: r.bytes(r.int(64)),
              system_properties: {
                message_id: `H2FUZZ${r.int(1e9)}`,
                message_type: 1,
                body_encoding: 1,
                born_timestamp: fromMillis(Date.now()),
                born_host: 'h2fuzz',
              },
            },
          ],
        }),
      );
  }
}

export function requestHeaders(
  method: string,
  port: number,
  clientId: string,
  extra: [string, string][] = [],
): [string, string][] {
  return [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', messagingMethods().get(method)!.path],
    [':authority', `127.0.0.1:${port}`],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ['x-mq-client-id', clientId],
    ['x-mq-protocol', 'v2'],
    ...extra,
  ];
}

// ---- building frames -----------------------------------------------------------------------------

/** What a connection's generator knows of the streams it used. */
export class Session {
  nextId = 1;
  /** Requests opened without END_STREAM (the server may hold them open). */
  readonly open: number[] = [];
  /** Highest odd id named by a HEADERS frame: a new stream must be above it. */
  maxHeadersId = 0;
  /** Bytes were sent that may leave the server's reader mid-frame: no request can follow. */
  framingBroken = false;
  readonly encoder: HpackEncoder;
  readonly clientId: string;

  constructor(
    readonly r: Rand,
    readonly port: number,
    readonly targets: FuzzTargets,
    indexing: boolean,
  ) {
    this.encoder = new HpackEncoder({
      huffman: r.chance(0.5),
      ...(indexing ? { indexing: { volatile: new Set(['x-mq-client-id']) } } : {}),
    });
    this.clientId = `h2fuzz-${r.int(1e9)}`;
  }

  newId(): number {
    const id = Math.max(this.nextId, this.maxHeadersId + 2 - (this.maxHeadersId % 2 === 0 ? 1 : 0));
    this.nextId = id + 2;
    this.maxHeadersId = Math.max(this.maxHeadersId, id);
    return id;
  }

  /** Some stream id: idle, open, closed, 0, even, the largest, or with the reserved bit. */
  someId(): number {
    const r = this.r;
    switch (r.int(9)) {
      case 0:
        return 0;
      case 1:
        return this.nextId;
      case 2:
        return this.nextId + 2 * (1 + r.int(1000));
      case 3:
        return this.open.length > 0 ? r.pick(this.open) : 1;
      case 4:
        return this.nextId > 1 ? 1 + 2 * r.int((this.nextId - 1) / 2) : 1;
      case 5:
        return 2 * (1 + r.int(100));
      case 6:
        return 0x7fffffff;
      case 7:
        return (0x80000000 | (this.nextId > 1 ? this.nextId - 2 : 1)) >>> 0;
      default:
        return 1 + r.int(50);
    }
  }

  frame(type: number, flags: number, id: number, payload?: Uint8Array): Buffer {
    const sid = id & 0x7fffffff;
    if (type === FrameType.HEADERS && sid % 2 === 1) this.maxHeadersId = Math.max(this.maxHeadersId, sid);
    const f = frame(type, flags, 0, payload);
    f.writeUInt32BE(id >>> 0, 5);
    return f;
  }

  /** A complete request's frames: HEADERS (maybe split over CONTINUATION, padded, with priority), DATA. */
  request(
    id: number,
    opts: { method?: string; body?: Buffer; end?: boolean; extra?: [string, string][]; plain?: boolean } = {},
  ): Buffer[] {
    const r = this.r;
    const method = opts.method ?? r.pick(METHODS);
    const body = opts.body ?? frameMessage(requestMessage(r, method, this.targets, this.port));
    const block = this.encoder.encode(requestHeaders(method, this.port, this.clientId, opts.extra));
    const out = this.headerFrames(id, block, opts.end !== false && body.length === 0, !opts.plain);
    if (body.length > 0) out.push(...this.dataFrames(id, body, opts.end !== false, !opts.plain));
    if (opts.end === false) this.open.push(id);
    return out;
  }

  headerFrames(id: number, block: Buffer, endStream: boolean, vary: boolean): Buffer[] {
    const r = this.r;
    const end = endStream ? Flag.END_STREAM : 0;
    let prefix = Buffer.alloc(0);
    let suffix = Buffer.alloc(0);
    let flags = end;
    if (vary && r.chance(0.2)) {
      const pad = r.int(40);
      flags |= Flag.PADDED;
      prefix = Buffer.from([pad]);
      suffix = Buffer.alloc(pad);
    }
    if (vary && r.chance(0.2)) {
      flags |= Flag.PRIORITY;
      const p = Buffer.alloc(5);
      p.writeUInt32BE(((r.chance(0.3) ? 0x80000000 : 0) | (r.int(id) & ~1)) >>> 0, 0); // never itself
      p[4] = r.int(256);
      prefix = Buffer.concat([prefix, p]);
    }
    const cuts = vary && r.chance(0.25) ? 1 + r.int(4) : 0;
    if (cuts === 0 || block.length < 2) {
      return [
        this.frame(FrameType.HEADERS, flags | Flag.END_HEADERS, id, Buffer.concat([prefix, block, suffix])),
      ];
    }
    const points = [...new Set(Array.from({ length: cuts }, () => 1 + r.int(block.length - 1)))].sort(
      (a, b) => a - b,
    );
    const pieces = [0, ...points].map((p, i) => block.subarray(p, points[i] ?? block.length));
    const out = [this.frame(FrameType.HEADERS, flags, id, Buffer.concat([prefix, pieces[0]!, suffix]))];
    pieces.slice(1).forEach((piece, i) => {
      const last = i === pieces.length - 2;
      out.push(this.frame(FrameType.CONTINUATION, last ? Flag.END_HEADERS : 0, id, piece));
    });
    return out;
  }

  dataFrames(id: number, body: Buffer, endStream: boolean, vary: boolean): Buffer[] {
    const r = this.r;
    const out: Buffer[] = [];
    const size = vary && r.chance(0.3) ? 1 + r.int(Math.max(1, body.length)) : 16_384;
    for (let p = 0; p < body.length; p += size) {
      const piece = body.subarray(p, p + size);
      const last = p + size >= body.length;
      const flags = last && endStream ? Flag.END_STREAM : 0;
      if (vary && r.chance(0.15)) {
        const pad = r.int(30);
        out.push(
          this.frame(
            FrameType.DATA,
            flags | Flag.PADDED,
            id,
            Buffer.concat([Buffer.from([pad]), piece, Buffer.alloc(pad)]),
          ),
        );
      } else out.push(this.frame(FrameType.DATA, flags, id, piece));
    }
    if (vary && endStream && r.chance(0.1) && out.length > 0) {
      // END_STREAM on an empty DATA frame after the body instead.
      const lastFrame = out[out.length - 1]!;
      lastFrame[4]! &= ~Flag.END_STREAM;
      out.push(this.frame(FrameType.DATA, Flag.END_STREAM, id));
    }
    return out;
  }
}

/** A header block the decoder should refuse, or one that decodes to something odd. */
function bogusHpack(r: Rand): Buffer {
  switch (r.int(12)) {
    case 0:
      return r.bytes(1 + r.int(200));
    case 1: // an integer far beyond 2^32
      return Buffer.from([0xff, ...Array.from({ length: 4 + r.int(12) }, () => 0xff), 0x7f]);
    case 2: // index 0
      return Buffer.from([0x80]);
    case 3: // an index beyond both tables
      return Buffer.from([0xff, 0x80 + r.int(100), 0x01]);
    case 4: // a table size update above the limit
      return Buffer.from([0x3f, 0xe1, 0xff, 0x03]);
    case 5: // a size update after a field
      return Buffer.from([0x82, 0x20]);
    case 6: // a string longer than the block
      return Buffer.from([0x00, 0x7f, 0x80, 0x01, 0x61]);
    case 7: // Huffman with EOS inside
      return Buffer.from([0x00, 0x84, 0xff, 0xff, 0xff, 0xff, 0x01, 0x61]);
    case 8: // Huffman whose padding is not all ones / longer than 7 bits
      return Buffer.from([0x00, 0x82, 0x00, 0x00, 0x81, 0x00]);
    case 9: // size updates to 0 then 4096, then a literal with indexing and an index into the table
      return Buffer.from([0x20, 0x3f, 0xe1, 0x1f, 0x40, 0x01, 0x78, 0x01, 0x79, 0xbe]);
    case 10: // a name with upper case, an empty name
      return Buffer.from([0x00, 0x01, 0x58, 0x01, 0x79, 0x00, 0x00, 0x00]);
    default: // a value too long for the header list (431)
      return Buffer.concat([
        Buffer.from([0x00, 0x01, 0x78, 0x7f, 0x81, 0xa2, 0x05]),
        Buffer.alloc(90_000 - 127 - 0x81 + 1, 0x61),
      ]);
  }
}

const SETTING_VALUES = [
  0,
  1,
  16_383,
  16_384,
  65_535,
  16_777_215,
  16_777_216,
  MAX_WINDOW,
  0x80000000,
  0xffffffff,
];

export type Mutation = (s: Session) => Buffer[];

/** name, weight, frames. */
export const MUTATIONS: readonly (readonly [string, number, Mutation])[] = [
  ['request', 6, (s) => s.request(s.newId(), { end: !s.r.chance(0.2) })],
  [
    'fuzzed-message',
    2,
    (s) => {
      const method = s.r.pick([...messagingMethods().keys()]);
      const m = messagingMethods().get(method)!;
      return s.request(s.newId(), {
        method,
        body: frameMessage(requestBytes(m.requestType, () => s.r.float(), s.targets)),
      });
    },
  ],
  [
    'random-frame',
    4,
    (s) => {
      const r = s.r;
      const type = r.chance(0.8) ? r.int(10) : r.int(256);
      return [s.frame(type, r.int(256), s.someId(), r.bytes(r.chance(0.9) ? r.int(40) : r.int(20_000)))];
    },
  ],
  [
    'truncated-frame',
    1,
    (s) => {
      const f = s.request(s.newId())[0]!;
      s.framingBroken = true;
      return [f.subarray(0, s.r.int(f.length))];
    },
  ],
  [
    'length-lie',
    1,
    (s) => {
      const r = s.r;
      const payload = r.bytes(r.int(50));
      const f = s.frame(r.int(10), r.int(256), s.someId(), payload);
      f.writeUIntBE(Math.min(0xffffff, payload.length + 1 + r.int(100)), 0, 3);
      s.framingBroken = true;
      return [f];
    },
  ],
  [
    'oversized-frame',
    1,
    (s) => {
      const r = s.r;
      const f = s.frame(r.pick([0, 1, 4, 8, 9]), 0, s.someId(), r.bytes(r.int(100)));
      f.writeUIntBE(r.pick([1024 * 1024 + 1, 0xffffff, 2 * 1024 * 1024]), 0, 3);
      s.framingBroken = true;
      return [f];
    },
  ],
  [
    'large-data',
    1,
    (s) => {
      const id = s.newId();
      const n = 16_385 + s.r.int(200_000);
      return [
        ...s.request(id, { end: false, body: Buffer.alloc(0) }),
        s.frame(FrameType.DATA, s.r.chance(0.5) ? Flag.END_STREAM : 0, id, Buffer.alloc(n, 7)),
      ];
    },
  ],
  [
    'padding-edge',
    3,
    (s) => {
      const r = s.r;
      const headers = r.chance(0.5);
      const id = headers ? s.newId() : s.open.length > 0 ? r.pick(s.open) : s.someId();
      const body = headers
        ? s.encoder.encode(requestHeaders('QueryRoute', s.port, s.clientId))
        : frameMessage(requestMessage(r, 'QueryRoute', s.targets, s.port));
      const len = body.length + 1;
      const pad = r.pick([0, len - 1, len, len + 1, 255, body.length]);
      const payload = r.chance(0.2) ? Buffer.alloc(0) : Buffer.concat([Buffer.from([pad & 0xff]), body]);
      const type = headers ? FrameType.HEADERS : FrameType.DATA;
      return [s.frame(type, Flag.PADDED | Flag.END_STREAM | (headers ? Flag.END_HEADERS : 0), id, payload)];
    },
  ],
  [
    'continuation',
    3,
    (s) => {
      const r = s.r;
      const id = s.newId();
      const block = s.encoder.encode(
        requestHeaders('Heartbeat', s.port, s.clientId, [['x-pad', 'p'.repeat(r.int(3000))]]),
      );
      const head = s.frame(FrameType.HEADERS, Flag.END_STREAM, id, block.subarray(0, 5));
      const rest = block.subarray(5);
      switch (r.int(7)) {
        case 0: // something else inside the block
          return [
            head,
            s.frame(r.pick([0, 2, 3, 6, 8]), 0, r.chance(0.5) ? id : 0, r.bytes(8)),
            s.frame(FrameType.CONTINUATION, Flag.END_HEADERS, id, rest),
          ];
        case 1: // on another stream
          return [head, s.frame(FrameType.CONTINUATION, Flag.END_HEADERS, id + 2, rest)];
        case 2: // many empty ones
          return [
            head,
            ...Array.from({ length: r.int(400) }, () => s.frame(FrameType.CONTINUATION, 0, id)),
            s.frame(FrameType.CONTINUATION, Flag.END_HEADERS, id, rest),
          ];
        case 3: // without HEADERS
          return [s.frame(FrameType.CONTINUATION, Flag.END_HEADERS, id, block)];
        case 4: // never finished
          return [head, s.frame(FrameType.CONTINUATION, 0, id, rest)];
        case 5: // split in one-byte pieces (mid-integer, mid-string)
          return [
            head,
            ...[...rest].map((b, i) =>
              s.frame(
                FrameType.CONTINUATION,
                i === rest.length - 1 ? Flag.END_HEADERS : 0,
                id,
                Buffer.from([b]),
              ),
            ),
          ];
        default: // flags that do not belong on CONTINUATION
          return [
            head,
            s.frame(FrameType.CONTINUATION, Flag.END_HEADERS | Flag.END_STREAM | Flag.PADDED, id, rest),
          ];
      }
    },
  ],
  [
    'bogus-hpack',
    3,
    (s) => [s.frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, s.newId(), bogusHpack(s.r))],
  ],
  [
    'window-update',
    3,
    (s) => {
      const r = s.r;
      const inc = r.pick([0, 1, 65_535, MAX_WINDOW, 0x80000000, 0xffffffff, r.int(2 ** 31)]);
      const p = Buffer.alloc(4);
      p.writeUInt32BE(inc >>> 0);
      const payload = r.chance(0.1)
        ? p.subarray(0, r.int(4))
        : r.chance(0.05)
          ? Buffer.concat([p, Buffer.from([0])])
          : p;
      const out = [s.frame(FrameType.WINDOW_UPDATE, 0, r.chance(0.4) ? 0 : s.someId(), payload)];
      if (r.chance(0.3)) out.push(out[0]!); // twice: an overflow
      return out;
    },
  ],
  [
    'settings',
    3,
    (s) => {
      const r = s.r;
      const entries = Array.from(
        { length: 1 + r.int(4) },
        () =>
          [r.pick([...Object.values(Setting), 0, 7, 0x8, 0xffff]), r.pick(SETTING_VALUES)] as [
            number,
            number,
          ],
      );
      const f = settingsFrame(entries);
      switch (r.int(6)) {
        case 0:
          return [s.frame(FrameType.SETTINGS, Flag.ACK, 0, r.bytes(r.int(12)))];
        case 1:
          return [s.frame(FrameType.SETTINGS, 0, 1 + r.int(9), f.subarray(9))];
        case 2:
          return [s.frame(FrameType.SETTINGS, 0, 0, f.subarray(9, f.length - 1 - r.int(5)))];
        default:
          return [f];
      }
    },
  ],
  [
    'rst-priority',
    3,
    (s) => {
      const r = s.r;
      const id = s.someId();
      if (r.chance(0.5)) {
        const code = r.pick([0, 1, 2, 8, 0xff, 0xffffffff]);
        const f = rstStreamFrame(0, code);
        return [
          s.frame(FrameType.RST_STREAM, 0, id, r.chance(0.1) ? f.subarray(9, 9 + r.int(4)) : f.subarray(9)),
        ];
      }
      const p = Buffer.alloc(5);
      p.writeUInt32BE(((r.chance(0.2) ? 0x80000000 : 0) | (r.chance(0.3) ? id : s.someId())) >>> 0);
      p[4] = r.int(256);
      return [
        s.frame(FrameType.PRIORITY, 0, id, r.chance(0.1) ? Buffer.concat([p, r.bytes(1 + r.int(3))]) : p),
      ];
    },
  ],
  [
    'ping-goaway-push',
    2,
    (s) => {
      const r = s.r;
      switch (r.int(5)) {
        case 0:
          return [s.frame(FrameType.PING, r.chance(0.5) ? Flag.ACK : 0, 0, r.bytes(8))];
        case 1:
          return [s.frame(FrameType.PING, 0, r.chance(0.5) ? 1 : 0, r.bytes(r.pick([0, 7, 9, 64])))];
        case 2:
          return [
            goawayFrame(r.int(s.nextId + 3), r.pick([0, 1, 2, 0xb, 0xffffffff]), r.chance(0.5) ? 'bye' : ''),
          ];
        case 3:
          return [s.frame(FrameType.GOAWAY, 0, r.chance(0.5) ? 1 : 0, r.bytes(r.int(12)))];
        default:
          return [s.frame(FrameType.PUSH_PROMISE, Flag.END_HEADERS, s.someId(), r.bytes(4 + r.int(20)))];
      }
    },
  ],
  [
    'data-misc',
    3,
    (s) => {
      const r = s.r;
      const msg = frameMessage(requestMessage(r, 'QueryRoute', s.targets, s.port));
      switch (r.int(6)) {
        case 0: // DATA on any stream
          return [
            s.frame(FrameType.DATA, r.chance(0.5) ? Flag.END_STREAM : 0, s.someId(), r.bytes(r.int(40))),
          ];
        case 1: // a message prefix of 4 GiB, then the end
          return s.request(s.newId(), { body: Buffer.from([0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]) });
        case 2: // the compressed flag without grpc-encoding; gzip that is not gzip
          return s.request(s.newId(), {
            body: Buffer.from([1, 0, 0, 0, 4, 1, 2, 3, 4]),
            ...(r.chance(0.5) ? { extra: [['grpc-encoding', 'gzip']] as [string, string][] } : {}),
          });
        case 3: // two messages in a unary call; a message cut short
          return s.request(s.newId(), {
            body: r.chance(0.5) ? Buffer.concat([msg, msg]) : msg.subarray(0, r.int(msg.length)),
          });
        case 4: // DATA after END_STREAM
          if (s.nextId <= 1) return [];
          return [s.frame(FrameType.DATA, 0, s.nextId - 2, msg)];
        default: // content-length that does not match
          return s.request(s.newId(), {
            body: msg,
            extra: [['content-length', String(r.pick([0, msg.length + 1, -1]))]],
          });
      }
    },
  ],
  [
    'odd-headers',
    3,
    (s) => {
      const r = s.r;
      const id = s.newId();
      const base = requestHeaders(r.pick(METHODS), s.port, s.clientId);
      const variants: (() => [string, string][])[] = [
        () => base.filter(([n]) => n !== ':path'),
        () => [...base, [':status', '200']],
        () => [...base.slice(4), ...base.slice(0, 4)], // pseudo-headers after regular ones
        () => [[':method', 'POST'], ...base],
        () => base.map(([n, v]) => (n === ':method' ? [n, 'GET'] : [n, v])),
        () => base.map(([n, v]) => (n === 'content-type' ? [n, 'text/plain'] : [n, v])),
        () =>
          base.map(([n, v]) =>
            n === ':path' ? [n, '/apache.rocketmq.v2.MessagingService/Nope%00'] : [n, v],
          ),
        () => [...base, ['connection', 'close']],
        () => [...base, ['te', 'gzip']],
        () => [...base, ['grpc-timeout', r.pick(['', '0n', '99999999999S', '-1m', '5x', '1H'])]],
        () => [...base, ['grpc-encoding', r.pick(['br', 'identity', 'gzip, deflate'])]],
        () => [...base, ['X-Upper', 'v']],
        () => [...base, ['x-mq-client-id', 'x'.repeat(r.int(2000))]],
      ];
      const block = s.encoder.encode(r.pick(variants)());
      const body = frameMessage(requestMessage(r, 'Heartbeat', s.targets, s.port));
      return [
        ...s.headerFrames(id, block, r.chance(0.3), true),
        s.frame(FrameType.DATA, Flag.END_STREAM, id, body),
      ];
    },
  ],
  [
    'trailers',
    1,
    (s) => {
      if (s.open.length === 0) return s.request(s.newId(), { end: false });
      const id = s.r.pick(s.open);
      const block = s.encoder.encode([['x-trailer', 'v']]);
      return [
        s.frame(FrameType.HEADERS, Flag.END_HEADERS | (s.r.chance(0.7) ? Flag.END_STREAM : 0), id, block),
      ];
    },
  ],
  [
    'old-stream-id',
    1,
    (s) => {
      if (s.maxHeadersId < 3) return [];
      const id = 1 + 2 * s.r.int((s.maxHeadersId - 1) / 2);
      const block = s.encoder.encode(requestHeaders('QueryRoute', s.port, s.clientId));
      return [frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, id, block)];
    },
  ],
  [
    'burst',
    1,
    (s) => {
      const out: Buffer[] = [];
      const n = 10 + s.r.int(300);
      for (let i = 0; i < n; i++) out.push(...s.request(s.newId(), { plain: true, method: 'Heartbeat' }));
      return out;
    },
  ],
  [
    'rapid-reset',
    1,
    (s) => {
      const out: Buffer[] = [];
      const n = 10 + s.r.int(1000);
      for (let i = 0; i < n; i++) {
        const id = s.newId();
        out.push(
          ...s.request(id, { plain: true, end: false, method: 'QueryRoute' }),
          rstStreamFrame(id, H2Error.CANCEL),
        );
      }
      s.open.splice(0);
      return out;
    },
  ],
];

const TYPE_NAMES = Object.fromEntries(Object.entries(FrameType).map(([k, v]) => [v, k])) as Record<
  number,
  string
>;

/** One line for a frame, for traces. */
export function describe(type: number, flags: number, id: number, payload: Buffer): string {
  const code =
    type === FrameType.RST_STREAM && payload.length === 4
      ? ` ${errorName(payload.readUInt32BE(0))}`
      : type === FrameType.GOAWAY && payload.length >= 8
        ? ` last ${payload.readUInt32BE(0)} ${errorName(payload.readUInt32BE(4))} ${payload.subarray(8).toString()}`
        : type === FrameType.WINDOW_UPDATE && payload.length === 4
          ? ` +${payload.readUInt32BE(0)}`
          : '';
  return `${TYPE_NAMES[type] ?? `type ${type}`} flags 0x${flags.toString(16)} stream ${id} length ${payload.length}${code}`;
}

/** Frames a correct client may send, however odd: the connection must go on serving after them. */
export const LEGAL_MUTATIONS: readonly (readonly [string, number, Mutation])[] = [
  ['request', 6, (s) => s.request(s.newId(), { end: !s.r.chance(0.3) })],
  [
    'legal-padding',
    3,
    (s) => {
      const r = s.r;
      const id = s.newId();
      const block = s.encoder.encode(requestHeaders('Heartbeat', s.port, s.clientId));
      const body = frameMessage(requestMessage(r, 'Heartbeat', s.targets, s.port));
      const hp = r.pick([0, 1, 255]);
      const dp = r.pick([0, 1, 255]);
      return [
        s.frame(
          FrameType.HEADERS,
          Flag.PADDED | Flag.END_HEADERS,
          id,
          Buffer.concat([Buffer.from([hp]), block, Buffer.alloc(hp)]),
        ),
        s.frame(FrameType.DATA, Flag.PADDED, id, Buffer.from([dp, ...Buffer.alloc(dp)])), // padding only
        s.frame(
          FrameType.DATA,
          Flag.PADDED | Flag.END_STREAM,
          id,
          Buffer.concat([Buffer.from([dp]), body, Buffer.alloc(dp)]),
        ),
      ];
    },
  ],
  [
    'legal-continuation',
    3,
    (s) => {
      const r = s.r;
      const id = s.newId();
      const block = s.encoder.encode(
        requestHeaders('Heartbeat', s.port, s.clientId, [['x-pad', 'p'.repeat(r.int(100))]]),
      );
      const body = frameMessage(requestMessage(r, 'Heartbeat', s.targets, s.port));
      const out = [s.frame(FrameType.HEADERS, 0, id, Buffer.alloc(0))]; // an empty first fragment
      // Small pieces (mid-integer, mid-string), within the server's bound on frames per block (256).
      const size = Math.max(1, Math.ceil(block.length / 200));
      for (let p = 0; p < block.length; p += size) {
        out.push(s.frame(FrameType.CONTINUATION, 0, id, block.subarray(p, p + size)));
      }
      out.push(s.frame(FrameType.CONTINUATION, Flag.END_HEADERS, id, Buffer.alloc(0)));
      out.push(s.frame(FrameType.DATA, Flag.END_STREAM, id, body));
      return out;
    },
  ],
  [
    'legal-window-update',
    3,
    (s) => {
      const r = s.r;
      const id = r.chance(0.5) ? 0 : s.open.length > 0 ? r.pick(s.open) : s.maxHeadersId > 0 ? 1 : 0;
      return [s.frame(FrameType.WINDOW_UPDATE, 0, id, u32(1 + r.int(65_535)))];
    },
  ],
  [
    'legal-settings',
    3,
    (s) => {
      const r = s.r;
      const entries: [number, number][] = [];
      for (let i = r.int(5); i >= 0; i--) {
        entries.push(
          r.pick<[number, number]>([
            [Setting.INITIAL_WINDOW_SIZE, r.pick([0, 1, 65_535, 1 << 20])],
            [Setting.MAX_FRAME_SIZE, r.pick([16_384, 65_536, 16_777_215])],
            [Setting.HEADER_TABLE_SIZE, r.pick([0, 1, 4096, 0xffffffff])],
            [Setting.ENABLE_PUSH, r.int(2)],
            [Setting.MAX_CONCURRENT_STREAMS, r.pick([0, 1, 100, 0xffffffff])],
            [Setting.MAX_HEADER_LIST_SIZE, r.pick([0, 1, 0xffffffff])],
            [7 + r.int(0xfff8), r.int(2 ** 32)], // unknown: ignored
          ]),
        );
      }
      return [settingsFrame(entries)];
    },
  ],
  [
    'legal-reset',
    2,
    (s) => {
      const r = s.r;
      if (s.open.length === 0) return [];
      const id = s.open.splice(r.int(s.open.length), 1)[0]!;
      return [rstStreamFrame(id, r.pick([H2Error.CANCEL, H2Error.NO_ERROR, H2Error.INTERNAL_ERROR, 0xffff]))];
    },
  ],
  [
    'legal-priority',
    2,
    (s) => {
      const r = s.r;
      const id = r.pick([s.nextId + 2 * r.int(50), s.maxHeadersId || 1, 1 + 2 * r.int(1000)]);
      const parent = r.pick([0, id + 2, Math.max(0, id - 2)]);
      const p = Buffer.alloc(5);
      p.writeUInt32BE(((r.chance(0.5) ? 0x80000000 : 0) | parent) >>> 0);
      p[4] = r.int(256);
      return [s.frame(FrameType.PRIORITY, 0, id, p)];
    },
  ],
  ['legal-ping', 2, (s) => [s.frame(FrameType.PING, s.r.chance(0.3) ? Flag.ACK : 0, 0, s.r.bytes(8))]],
  [
    'unknown-frame',
    2,
    (s) => {
      const r = s.r;
      return [
        s.frame(10 + r.int(246), r.int(256), r.pick([0, 1, s.nextId, 0x7fffffff]), r.bytes(r.int(100))),
      ];
    },
  ],
  [
    'legal-trailers',
    2,
    (s) => {
      const r = s.r;
      if (s.open.length === 0) return [];
      const id = s.open.splice(r.int(s.open.length), 1)[0]!;
      const body = frameMessage(requestMessage(r, 'QueryRoute', s.targets, s.port));
      return [
        s.frame(FrameType.DATA, 0, id, body),
        s.frame(
          FrameType.HEADERS,
          Flag.END_HEADERS | Flag.END_STREAM,
          id,
          s.encoder.encode([['x-trailer', 'v']]),
        ),
      ];
    },
  ],
  [
    'legal-end',
    2,
    (s) => {
      const r = s.r;
      if (s.open.length === 0) return [];
      const id = s.open.splice(r.int(s.open.length), 1)[0]!;
      const body = frameMessage(requestMessage(r, 'QueryRoute', s.targets, s.port));
      // the message in pieces, then END_STREAM on an empty frame
      const cut = r.int(body.length);
      return [
        s.frame(FrameType.DATA, 0, id, body.subarray(0, cut)),
        s.frame(FrameType.DATA, 0, id, body.subarray(cut)),
        s.frame(FrameType.DATA, Flag.END_STREAM, id),
      ];
    },
  ],
  [
    'legal-burst',
    1,
    (s) => {
      const out: Buffer[] = [];
      for (let n = 10 + s.r.int(200); n > 0; n--)
        out.push(...s.request(s.newId(), { plain: true, method: 'Heartbeat' }));
      return out;
    },
  ],
  [
    'legal-cancel-burst',
    1,
    (s) => {
      const out: Buffer[] = [];
      const before = s.open.length;
      for (let n = 5 + s.r.int(100); n > 0; n--) {
        const id = s.newId();
        out.push(
          ...s.request(id, { plain: true, end: false, method: 'QueryRoute' }),
          rstStreamFrame(id, H2Error.CANCEL),
        );
      }
      s.open.splice(before); // reset: no longer open
      return out;
    },
  ],
  [
    'legal-odd-request',
    2,
    (s) => {
      const r = s.r;
      const id = s.newId();
      const base = requestHeaders(r.pick(METHODS), s.port, s.clientId);
      const variants: (() => [string, string][])[] = [
        () =>
          base.map(([n, v]) => (n === ':path' ? [n, '/apache.rocketmq.v2.MessagingService/Nope'] : [n, v])),
        () => base.map(([n, v]) => (n === 'content-type' ? [n, 'text/plain'] : [n, v])),
        () => base.map(([n, v]) => (n === ':method' ? [n, 'GET'] : [n, v])),
        () => [...base, ['grpc-timeout', r.pick(['1n', '5x', '99999999S'])]],
        () => [...base, ['grpc-encoding', 'br']],
        () => [...base, ['x-big', 'b'.repeat(70_000)]], // over the header list limit: 431
      ];
      const body = frameMessage(requestMessage(r, 'Heartbeat', s.targets, s.port));
      return [
        s.frame(FrameType.HEADERS, Flag.END_HEADERS, id, s.encoder.encode(r.pick(variants)())),
        s.frame(FrameType.DATA, Flag.END_STREAM, id, body),
      ];
    },
  ],
];

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}
