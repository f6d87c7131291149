/**
 * A seeded fuzzer for the broker's edges: every gRPC MessagingService RPC (unary, server-streaming and
 * Telemetry) gets random requests built from the protobuf schema — odd names, huge and negative
 * numbers, unknown enum values, invalid UTF-8, deep and repeated fields — sent as they are or with
 * their bytes mutated (flipped, cut short, padded); the admin HTTP API gets random methods, paths,
 * query strings and bodies. Every answer must be a status the broker chose: a RocketMQ code (never an
 * internal error) over gRPC, a 4xx/2xx over HTTP; never a dead connection.
 *
 * `npm test` runs a few seconds of it (test/integration/fuzz.test.ts); `npm run fuzz` runs longer.
 */
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { messagingMethods, encode, decode } from '../../src/protocol/codec.js';
import { Code, codeName } from '../../src/common/codes.js';
import { rng } from '../support/rng.js';

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const chance = (r: Rand, p: number) => r() < p;

/** Replaced by invalid UTF-8 of the same length once encoded. */
const BAD_UTF8_MARK = 'BADUTF8MARK!';

export interface FuzzTargets {
  /** A topic and a group that exist, so that some requests get past the name checks. */
  topic: string;
  group: string;
}

function oddString(r: Rand, t: FuzzTargets): string {
  switch (Math.floor(r() * 14)) {
    case 0:
      return '';
    case 1:
      return 'x'.repeat(1 + Math.floor(r() * 20_000));
    case 2:
      return '\u0000\u001b[2J\r\n\u202e\u0085';
    case 3:
      return '%RETRY%' + t.group;
    case 4:
      return '%DLQ%' + t.group;
    case 5:
      return '../../etc/passwd';
    case 6:
      return '\ud800\udfff💥 名前';
    case 7:
      return BAD_UTF8_MARK;
    case 8:
      return `${t.group}%BROADCAST%x`;
    case 9:
      return String(Math.floor(r() * 1e6));
    case 10:
    case 11:
      return t.topic;
    default:
      return t.group;
  }
}

function oddNumber(r: Rand, kind: string): number {
  const unsigned = kind.startsWith('u') || kind.startsWith('fixed');
  const v = pick(r, [
    0,
    1,
    -1,
    2 ** 31 - 1,
    -(2 ** 31),
    2 ** 32 - 1,
    Number.MAX_SAFE_INTEGER,
    -Number.MAX_SAFE_INTEGER,
    Math.floor(r() * 1000),
    Math.floor(r() * 2 ** 40),
    32,
    1024,
    100_000,
  ]);
  if (kind === 'int32' || kind === 'sint32' || kind === 'sfixed32') return v | 0;
  if (kind === 'uint32' || kind === 'fixed32') return v >>> 0;
  return unsigned ? Math.abs(v) : v;
}

function scalar(r: Rand, kind: string, t: FuzzTargets): unknown {
  switch (kind) {
    case 'string':
      return oddString(r, t);
    case 'bytes':
      return chance(r, 0.05)
        ? Buffer.alloc(Math.floor(r() * 6 * 1024 * 1024))
        : Buffer.from(Array.from({ length: Math.floor(r() * 64) }, () => Math.floor(r() * 256)));
    case 'bool':
      return chance(r, 0.5);
    case 'double':
    case 'float':
      return pick(r, [0, -1, 1e308, -1e308, NaN, Infinity, 0.5]);
    default:
      return oddNumber(r, kind);
  }
}

/** Fields most requests need to get past the first checks: present nearly always. */
const ESSENTIAL = new Set([
  'group',
  'topic',
  'name',
  'message_queue',
  'receipt_handle',
  'entries',
  'messages',
]);

/** A random request of `type`: each field present or not, with odd values. */
export function randomMessage(
  type: protobuf.Type,
  r: Rand,
  t: FuzzTargets,
  depth = 0,
  /** The name of the field this message is the value of (`group`, `topic`, …). */
  within = '',
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of type.fieldsArray) {
    if (!chance(r, ESSENTIAL.has(f.name) ? 0.95 : depth > 3 ? 0.2 : 0.6)) continue;
    f.resolve();
    const one = (): unknown => {
      const rt = f.resolvedType;
      if (rt instanceof protobuf.Type) return depth > 5 ? {} : randomMessage(rt, r, t, depth + 1, f.name);
      if (rt instanceof protobuf.Enum) {
        const values = Object.values(rt.values);
        return chance(r, 0.8) ? pick(r, values) : pick(r, [99, -1, 2 ** 31 - 1]);
      }
      // Mostly the names that exist, so that requests get past the name checks to the deeper code.
      if (f.name === 'resource_namespace') return chance(r, 0.9) ? '' : oddString(r, t);
      if (f.name === 'name' && chance(r, 0.8)) return within === 'group' ? t.group : t.topic;
      return scalar(r, f.type, t);
    };
    if (f instanceof protobuf.MapField) {
      const m: Record<string, unknown> = {};
      const n = chance(r, 0.05) ? 2000 : Math.floor(r() * 4);
      for (let i = 0; i < n; i++) m[`${oddString(r, t).slice(0, 200)}${i}`] = one();
      out[f.name] = m;
    } else if (f.repeated) {
      const n = chance(r, 0.05) ? 1500 : Math.floor(r() * 4);
      out[f.name] = Array.from({ length: n }, one);
    } else {
      out[f.name] = one();
    }
  }
  return out;
}

/** Encode, put invalid UTF-8 where marked, and sometimes mutate the bytes. */
export function requestBytes(type: protobuf.Type, r: Rand, t: FuzzTargets): Buffer {
  let buf: Buffer;
  try {
    buf = Buffer.from(encode(type, randomMessage(type, r, t)));
  } catch {
    buf = Buffer.alloc(0); // a value protobufjs cannot encode: send an empty request instead
  }
  const mark = Buffer.from(BAD_UTF8_MARK);
  for (let i = buf.indexOf(mark); i >= 0; i = buf.indexOf(mark, i + 1)) {
    Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80, 0xf8, 0x88, 0x80, 0x80, 0xc0]).copy(buf, i);
  }
  if (!chance(r, 0.2) || buf.length === 0) return buf;
  const b = Buffer.from(buf);
  switch (Math.floor(r() * 4)) {
    case 0: // flip some bytes
      for (let i = 0; i < 1 + r() * 4; i++) b[Math.floor(r() * b.length)] = Math.floor(r() * 256);
      return b;
    case 1: // cut short
      return b.subarray(0, Math.floor(r() * b.length));
    case 2: // a huge length prefix or varint
      return Buffer.concat([b, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])]);
    default: // repeat a slice
      return Buffer.concat([b, b.subarray(Math.floor(r() * b.length))]);
  }
}

export interface Problem {
  what: string;
  detail: string;
}

/** gRPC-level outcomes that are a broker's answer, not a failure. */
const ACCEPTED_GRPC = new Set([
  grpc.status.OK,
  grpc.status.CANCELLED, // we cancel streams ourselves
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.RESOURCE_EXHAUSTED, // over the transport's limits, by design
  grpc.status.INVALID_ARGUMENT,
]);

/** How often each outcome was seen (`Method code`), to see how deep a run reached. */
export const outcomes = new Map<string, number>();
const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);

function checkStatus(
  what: string,
  status: { code?: number; message?: string } | undefined,
  problems: Problem[],
) {
  if (!status) return problems.push({ what, detail: 'an answer without a status' });
  const code = status.code ?? 0;
  count(
    `${what.split('#')[0]} ${codeName(code)}${process.env.FUZZ_DETAIL ? ' ' + (status.message ?? '').slice(0, 80) : ''}`,
  );
  if (code === Code.INTERNAL_SERVER_ERROR || codeName(code).startsWith('UNKNOWN'))
    problems.push({ what, detail: `status ${code} ${status.message ?? ''}`.slice(0, 300) });
}

function metadataFor(r: Rand, i: number): grpc.Metadata {
  const md = new grpc.Metadata();
  const id = chance(r, 0.85) ? `fuzz-${i % 7}` : pick(r, ['', 'c'.repeat(600), 'a b@host#1']);
  if (id) md.set('x-mq-client-id', id);
  if (chance(r, 0.05)) md.set('x-mq-namespace', pick(r, ['ns', 'bad%ns', 'n'.repeat(100), '']));
  if (chance(r, 0.05)) md.set('grpc-encoding', 'gzip');
  return md;
}

/** One gRPC call of `method` with a random request; what went wrong, if anything, goes to `problems`. */
async function callOnce(
  client: grpc.Client,
  name: string,
  r: Rand,
  t: FuzzTargets,
  i: number,
  problems: Problem[],
): Promise<void> {
  const m = messagingMethods().get(name)!;
  const what = `${name}#${i}`;
  const md = metadataFor(r, i);
  const deadline = Date.now() + 1500;
  const decodeRes = (b: Buffer) =>
    decode(m.responseType, b) as { status?: { code?: number; message?: string } };
  const onError = (err: grpc.ServiceError) => {
    count(`${name} grpc:${err.code}`);
    count(`${name} grpc:${err.code}`);
    if (!ACCEPTED_GRPC.has(err.code)) problems.push({ what, detail: `gRPC ${err.code} ${err.details}` });
  };
  if (m.requestStream) {
    // Telemetry: a random command (or a few), the first answer, then we hang up.
    await new Promise<void>((resolve) => {
      const call = client.makeBidiStreamRequest(m.path, (b: Buffer) => b, decodeRes, md, { deadline });
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        call.cancel();
        resolve();
      };
      call.on('data', (res: { status?: { code?: number; message?: string }; settings?: unknown }) => {
        if (res.status) checkStatus(what, res.status, problems);
        finish();
      });
      call.on('error', (err: grpc.ServiceError) => {
        if (!done) onError(err);
        finish();
      });
      call.on('end', finish);
      for (let k = 0; k < 1 + Math.floor(r() * 3); k++) call.write(requestBytes(m.requestType, r, t));
      setTimeout(finish, 300).unref();
    });
    return;
  }
  const bytes = requestBytes(m.requestType, r, t);
  if (m.responseStream) {
    await new Promise<void>((resolve) => {
      const call = client.makeServerStreamRequest(m.path, (b: Buffer) => b, decodeRes, bytes, md, {
        deadline,
      });
      let first = true;
      call.on('data', (res: { status?: { code?: number; message?: string } }) => {
        if (first && !('status' in res)) problems.push({ what, detail: 'first frame is not a status' });
        if (res.status) checkStatus(what, res.status, problems);
        first = false;
      });
      call.on('error', (err: grpc.ServiceError) => {
        onError(err);
        resolve();
      });
      call.on('end', () => resolve());
    });
    return;
  }
  await new Promise<void>((resolve) => {
    client.makeUnaryRequest(
      m.path,
      (b: Buffer) => b,
      decodeRes,
      bytes,
      md,
      { deadline },
      (err, res) => {
        if (err) onError(err);
        else checkStatus(what, res?.status, problems);
        resolve();
      },
    );
  });
}

/** `iterations` random gRPC calls over every RPC, `concurrency` at a time. */
export async function fuzzGrpc(opts: {
  address: string;
  seed: number;
  iterations: number;
  targets: FuzzTargets;
  concurrency?: number;
}): Promise<Problem[]> {
  const r = rng(opts.seed);
  const names = [...messagingMethods().keys()];
  const client = new grpc.Client(opts.address, grpc.credentials.createInsecure(), {
    'grpc.max_send_message_length': 64 * 1024 * 1024,
  });
  const problems: Problem[] = [];
  try {
    let next = 0;
    const worker = async () => {
      while (next < opts.iterations) {
        const i = next++;
        await callOnce(client, pick(r, names), r, opts.targets, i, problems);
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, worker));
  } finally {
    client.close();
  }
  return problems;
}

// --- the admin HTTP API ------------------------------------------------------------------------------

const ROUTES: readonly [string, string][] = [
  ['GET', '/api/broker'],
  ['GET', '/api/overview'],
  ['GET', '/api/topics'],
  ['POST', '/api/topics'],
  ['GET', '/api/topics/:topic'],
  ['DELETE', '/api/topics/:topic'],
  ['GET', '/api/topics/:topic/status'],
  ['GET', '/api/topics/:topic/route'],
  ['GET', '/api/topics/:topic/messages'],
  ['GET', '/api/topic-stats'],
  ['GET', '/api/groups'],
  ['POST', '/api/groups'],
  ['GET', '/api/groups/:group'],
  ['DELETE', '/api/groups/:group'],
  ['GET', '/api/groups/:group/progress'],
  ['GET', '/api/groups/:group/connections'],
  ['GET', '/api/groups/:group/detail'],
  ['POST', '/api/groups/:group/reset-offset'],
  ['GET', '/api/groups/:group/dlq'],
  ['POST', '/api/groups/:group/dlq/resend'],
  ['GET', '/api/group-stats'],
  ['GET', '/api/messages'],
  ['GET', '/api/messages/:id'],
  ['GET', '/api/messages/:id/deliveries'],
  ['GET', '/api/timer'],
  ['GET', '/api/transactions'],
  ['GET', '/api/acl'],
  ['POST', '/api/acl'],
  ['PUT', '/api/acl'],
  ['GET', '/api/acl/users'],
  ['POST', '/api/acl/users'],
  ['GET', '/api/acl/users/:username'],
  ['PUT', '/api/acl/users/:username'],
  ['DELETE', '/api/acl/users/:username'],
  ['GET', '/healthz'],
  ['GET', '/metrics'],
];

const JSON_KEYS = [
  'topic',
  'group',
  'readQueueNums',
  'writeQueueNums',
  'perm',
  'attributes',
  'retryMaxTimes',
  'consumeMessageOrderly',
  'groupRetryPolicy',
  'fifoRetryIntervalMs',
  'queueId',
  'offset',
  'timestamp',
  'username',
  'password',
  'subject',
  'policies',
  'msgId',
  'limit',
];

function oddJson(r: Rand, t: FuzzTargets, depth = 0): unknown {
  switch (Math.floor(r() * (depth > 2 ? 5 : 8))) {
    case 0:
      return oddString(r, t).slice(0, 5000);
    case 1:
      return oddNumber(r, 'int64');
    case 2:
      return pick(r, [null, true, false, -0, 1e308]);
    case 3:
      return t.topic;
    case 4:
      return pick(r, [
        'FIFO',
        'NORMAL',
        'BROADCASTING',
        { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [1, -1] } },
      ]);
    case 5:
      return Array.from({ length: Math.floor(r() * 4) }, () => oddJson(r, t, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = 0; i < 1 + r() * 5; i++) o[pick(r, JSON_KEYS)] = oddJson(r, t, depth + 1);
      return o;
    }
  }
}

/** `iterations` random admin API requests; a 5xx or a dead server is a problem. */
export async function fuzzAdmin(opts: {
  baseUrl: string;
  seed: number;
  iterations: number;
  targets: FuzzTargets;
  concurrency?: number;
}): Promise<Problem[]> {
  const r = rng(opts.seed ^ 0x5eed);
  const t = opts.targets;
  const problems: Problem[] = [];
  let next = 0;
  const one = async (i: number) => {
    const [method0, template] = pick(r, ROUTES);
    const method = chance(r, 0.05) ? pick(r, ['PATCH', 'PUT', 'DELETE', 'OPTIONS']) : method0;
    const path = template.replace(/:[a-z]+/g, () =>
      encodeURIComponent(chance(r, 0.5) ? pick(r, [t.topic, t.group]) : oddString(r, t).slice(0, 3000)),
    );
    const query = chance(r, 0.4)
      ? '?' +
        Array.from(
          { length: 1 + Math.floor(r() * 3) },
          () =>
            `${pick(r, ['topic', 'group', 'offset', 'limit', 'key', 'id', 'queueId', 'from', 'to'])}=${encodeURIComponent(
              String(oddJson(r, t, 3)),
            )}`,
        ).join('&')
      : '';
    const headers: Record<string, string> = {};
    let body: string | undefined;
    if (method !== 'GET' && method !== 'OPTIONS' && chance(r, 0.9)) {
      const json = chance(r, 0.85);
      headers['content-type'] = json
        ? 'application/json'
        : pick(r, ['text/plain', 'application/x-www-form-urlencoded']);
      body =
        json && chance(r, 0.9) ? JSON.stringify(oddJson(r, t)) : pick(r, ['{', '[]', 'x=1', '\u0000', '']);
    }
    const what = `${method} ${template}#${i}`;
    try {
      const res = await fetch(`${opts.baseUrl}${path}${query}`, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(5000),
      });
      const text = await res.text();
      count(`${method} ${template} ${res.status}`);
      count(`${method} ${template} ${res.status}`);
      if (res.status >= 500) problems.push({ what, detail: `HTTP ${res.status} ${text.slice(0, 300)}` });
    } catch (err) {
      problems.push({ what, detail: `no answer: ${(err as Error).message}` });
    }
  };
  const worker = async () => {
    while (next < opts.iterations) await one(next++);
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker));
  return problems;
}
