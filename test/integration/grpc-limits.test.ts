/**
 * No client can take the broker down through its gRPC port: oversized and bomb requests are refused
 * before they are decoded, fast, with the right status, while other clients keep being served; calls
 * beyond a connection's stream limit wait their turn; cancellation reaches parked receives; and a
 * client cannot end or take over another client's session by sending its client id.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { gzipSync, createGzip } from 'node:zlib';
import { Code } from '../../src/common/codes.js';
import { encode, fromMillis, type, decode } from '../../src/protocol/codec.js';
import { RawClient } from './raw-client.js';
import { startTestBroker, uniqueName, waitFor, type TestBroker } from '../support/harness.js';

let b: TestBroker;
let client: RawClient;

before(async () => {
  b = await startTestBroker({
    grpc: { maxConcurrentStreams: 8, maxClientsPerConnection: 4, keepaliveIntervalMs: 0 },
  });
  client = new RawClient(b.endpoints);
});

after(async () => {
  client.close();
  await b.close();
});

async function topicAndGroup(): Promise<{ topic: string; group: string }> {
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await b.running.broker.topics.upsert(topic, {});
  await b.running.broker.groups.upsert(group, {});
  return { topic, group };
}

/** One gRPC call over a fresh HTTP/2 connection, with full control of the bytes and headers. */
async function rawCall(
  method: string,
  framed: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; message: string; frames: Buffer[]; ms: number }> {
  const session = http2.connect(`http://${b.endpoints}`);
  session.on('error', () => {});
  const t0 = performance.now();
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': `/apache.rocketmq.v2.MessagingService/${method}`,
        'content-type': 'application/grpc',
        te: 'trailers',
        'x-mq-client-id': 'raw-test',
        ...headers,
      });
      const chunks: Buffer[] = [];
      let trailers: http2.IncomingHttpHeaders = {};
      let head: http2.IncomingHttpHeaders = {};
      req.on('response', (h) => (head = h));
      req.on('trailers', (t) => (trailers = t));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', reject);
      req.on('close', () => {
        const all = Buffer.concat(chunks);
        const frames: Buffer[] = [];
        for (let at = 0; at + 5 <= all.length;) {
          const n = all.readUInt32BE(at + 1);
          frames.push(all.subarray(at + 5, at + 5 + n));
          at += 5 + n;
        }
        const st = trailers['grpc-status'] ?? head['grpc-status'];
        resolve({
          status: st === undefined ? -1 : Number(st),
          message: String(trailers['grpc-message'] ?? head['grpc-message'] ?? ''),
          frames,
          ms: performance.now() - t0,
        });
      });
      req.end(framed);
    });
  } finally {
    session.close();
  }
}

function frame(payload: Buffer, compressed = false): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(payload.length, 1);
  payload.copy(out, 5);
  return out;
}

const SendResponse = type('SendMessageResponse');

/** Another client is still served at once. */
async function stillServing(topic: string): Promise<void> {
  const t0 = performance.now();
  const r = await client.send(topic, [{ messageId: `ALIVE-${Date.now()}` }]);
  assert.equal(r.status.code, Code.OK);
  assert.ok(performance.now() - t0 < 2000, 'the broker answered another client promptly');
}

test('decode bomb: megabytes of empty messages are refused before decoding, fast', async () => {
  const { topic } = await topicAndGroup();
  const bomb = Buffer.alloc(4 * 1024 * 1024);
  for (let i = 0; i < bomb.length; i += 2) bomb[i] = 0x0a; // SendMessageRequest.messages: empty Message
  const rss = process.memoryUsage().rss;
  const r = await rawCall('SendMessage', frame(bomb));
  assert.equal(r.status, 0);
  const res = decode(SendResponse, r.frames[0]!) as { status: { code: number; message: string } };
  assert.equal(res.status.code, Code.PAYLOAD_TOO_LARGE);
  assert.match(res.status.message, /more than 1024 entries/);
  assert.ok(r.ms < 3000, `answered in ${r.ms} ms`);
  assert.ok(process.memoryUsage().rss - rss < 200 * 1024 * 1024, 'no memory blow-up');
  await stillServing(topic);
});

test('a request larger than the limit is refused from its length prefix (8 MiB SendMessage)', async () => {
  const { topic } = await topicAndGroup();
  const r = await rawCall('SendMessage', frame(Buffer.alloc(8 * 1024 * 1024)));
  const res = decode(SendResponse, r.frames[0]!) as { status: { code: number; message: string } };
  assert.equal(res.status.code, Code.PAYLOAD_TOO_LARGE);
  assert.match(res.status.message, /exceeds the limit/);
  await stillServing(topic);
  // The official client's transport (grpc-js) reads that answer too.
  const big = await client.send(topic, [{ messageId: 'BIG', body: Buffer.alloc(6 * 1024 * 1024, 1) }]);
  assert.equal(big.status.code, Code.PAYLOAD_TOO_LARGE);
});

test('gzip bombs (16 KiB and ~130 KiB of gzip) are refused once inflation passes the limit', async () => {
  const { topic } = await topicAndGroup();
  const pattern = Buffer.alloc(16 * 1024 * 1024);
  for (let i = 0; i < pattern.length; i += 2) pattern[i] = 0x0a;
  const small = gzipSync(pattern, { level: 9 });
  assert.ok(small.length < 20 * 1024, `${small.length} bytes of gzip`);
  // ~130 MiB inflated, streamed through gzip so the test does not hold it either.
  const large = await new Promise<Buffer>((resolve) => {
    const gz = createGzip({ level: 9 });
    const out: Buffer[] = [];
    gz.on('data', (c: Buffer) => out.push(c));
    gz.on('end', () => resolve(Buffer.concat(out)));
    const chunk = pattern.subarray(0, 1024 * 1024);
    for (let i = 0; i < 130; i++) gz.write(chunk);
    gz.end();
  });
  for (const bomb of [small, large]) {
    const r = await rawCall('SendMessage', frame(bomb, true), { 'grpc-encoding': 'gzip' });
    const res = decode(SendResponse, r.frames[0]!) as { status: { code: number } };
    assert.equal(res.status.code, Code.PAYLOAD_TOO_LARGE);
    assert.ok(r.ms < 3000, `answered in ${r.ms} ms`);
  }
  await stillServing(topic);
});

test('a gzip-compressed request within the limits is served', async () => {
  const { topic } = await topicAndGroup();
  const req = encode(type('SendMessageRequest'), {
    messages: [
      {
        topic: { name: topic },
        body: Buffer.from('compressed hello'),
        system_properties: { message_id: 'GZ-1', message_type: 1, body_encoding: 1 },
      },
    ],
  });
  const r = await rawCall('SendMessage', frame(gzipSync(req), true), { 'grpc-encoding': 'gzip' });
  const res = decode(SendResponse, r.frames[0]!) as { status: { code: number } };
  assert.equal(res.status.code, Code.OK);
  const bad = await rawCall('SendMessage', frame(gzipSync(req), true), { 'grpc-encoding': 'br' });
  assert.equal(bad.status, 12, 'UNIMPLEMENTED for an encoding the broker cannot read');
});

test('more calls than the stream limit on one connection wait their turn; others are served', async () => {
  const { topic, group } = await topicAndGroup();
  const consumer = new RawClient(b.endpoints, undefined, { 'grpc.use_local_subchannel_pool': 1 });
  try {
    // 20 parked long polls on one connection whose limit is 8.
    const polls = Array.from({ length: 20 }, () => consumer.receiveMessages(group, topic, { pollMs: 300 }));
    await stillServing(topic); // another connection
    const results = await Promise.all(polls);
    const got = results.reduce((n, r) => n + r.messages.length, 0);
    assert.ok(got >= 1, 'the sent message went to one of the polls');
    for (const r of results) assert.ok([Code.OK, Code.MESSAGE_NOT_FOUND].includes(r.status.code));
  } finally {
    consumer.close();
  }
});

test('a cancelled long poll is released at once: a later message goes to the next receive', async () => {
  const { topic, group } = await topicAndGroup();
  const session = http2.connect(`http://${b.endpoints}`);
  session.on('error', () => {});
  try {
    const req = session.request({
      ':method': 'POST',
      ':path': '/apache.rocketmq.v2.MessagingService/ReceiveMessage',
      'content-type': 'application/grpc',
      te: 'trailers',
      'x-mq-client-id': 'cancel-test',
    });
    req.on('error', () => {});
    req.end(
      frame(
        Buffer.from(
          encode(type('ReceiveMessageRequest'), {
            group: { name: group },
            message_queue: { topic: { name: topic }, id: 0 },
            filter_expression: { type: 1, expression: '*' },
            batch_size: 1,
            invisible_duration: fromMillis(60_000),
            long_polling_timeout: fromMillis(10_000),
          }),
        ),
      ),
    );
    await new Promise((r) => setTimeout(r, 200));
    req.close(http2.constants.NGHTTP2_CANCEL); // RST_STREAM
    await new Promise((r) => setTimeout(r, 100));
  } finally {
    session.close();
  }
  await client.send(topic, [{ messageId: 'AFTER-CANCEL' }]);
  const r = await client.receiveMessages(group, topic, { pollMs: 1000 });
  assert.equal(r.messages.length, 1, 'the cancelled receive did not take it');
});

test("another connection cannot end a client's session or release its messages by sending its id", async () => {
  const { topic, group } = await topicAndGroup();
  const id = uniqueName('victim');
  const victim = new RawClient(b.endpoints, id, { 'grpc.use_local_subchannel_pool': 1 });
  const attacker = new RawClient(b.endpoints, id, { 'grpc.use_local_subchannel_pool': 1 });
  const sessions = b.running.broker.sessions;
  let telemetry: { end: () => void } | undefined;
  try {
    telemetry = await victim.telemetry({
      client_type: 2,
      subscription: { group: { name: group }, subscriptions: [{ topic: { name: topic } }] },
    });
    await client.send(topic, [{ messageId: 'HELD' }]);
    const frames = await victim.receive({
      group: { name: group },
      message_queue: { topic: { name: topic }, id: -1 },
      filter_expression: { type: 1, expression: '*' },
      batch_size: 32,
      auto_renew: true,
      long_polling_timeout: fromMillis(0),
    });
    assert.equal(frames.filter((f) => f.message).length, 1);

    const bye = await attacker.unary('NotifyClientTermination', { group: { name: group } });
    assert.equal(bye.status.code, Code.OK);
    assert.ok(sessions.get(id), 'the session survived');
    assert.equal((await client.receiveMessages(group, topic)).messages.length, 0, 'still held');

    // Opening Telemetry with the same id on another connection neither takes the session over nor,
    // when that stream closes, ends it.
    const takeover = await attacker.telemetry({ client_type: 2, subscription: { group: { name: group } } });
    assert.equal(takeover.reply.status.code, Code.FORBIDDEN);
    takeover.end();
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(sessions.get(id), 'the session survived the other stream closing');
    assert.equal(sessions.get(id)!.telemetryOpen, true);

    // Nor does another connection's open stream keep the session alive once its own stream closes.
    const lingering = await attacker.telemetry({ client_type: 2, subscription: { group: { name: group } } });
    try {
      telemetry!.end();
      telemetry = undefined;
      await waitFor(() => sessions.get(id) === undefined, { what: 'the session to end with its stream' });
      const again = await client.receiveMessages(group, topic, { pollMs: 1000 });
      assert.equal(again.messages.length, 1, 'released when its own client left');
    } finally {
      lingering.end();
    }
  } finally {
    telemetry?.end();
    victim.close();
    attacker.close();
  }
});

test('one connection cannot open sessions for unlimited client ids', async () => {
  const conn = new RawClient(b.endpoints, 'quota-0', { 'grpc.use_local_subchannel_pool': 1 });
  try {
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) {
      conn.metadata.set('x-mq-client-id', uniqueName(`quota${i}`));
      codes.push((await conn.unary('Heartbeat', { client_type: 1 })).status.code);
    }
    assert.deepEqual(codes.slice(0, 4), [Code.OK, Code.OK, Code.OK, Code.OK]);
    assert.deepEqual(codes.slice(4), [Code.TOO_MANY_REQUESTS, Code.TOO_MANY_REQUESTS]);
  } finally {
    conn.close();
  }
});

test('unknown methods and non-gRPC requests get the protocol answers', async () => {
  const r = await rawCall('NoSuchMethod', frame(Buffer.alloc(0)));
  assert.equal(r.status, 12);
  const truncated = await rawCall('SendMessage', frame(Buffer.alloc(10)).subarray(0, 8));
  assert.equal(truncated.status, 13, 'INTERNAL for a cut-short request message');
  const ok = await rawCall('QueryRoute', frame(Buffer.alloc(0)), { 'grpc-timeout': 'bogus' });
  assert.equal(ok.status, 13);
});
