/**
 * SDK Producer against a real broker, through a fault-injecting proxy where a test needs faults:
 * message fields, send retry as the seed says (immediate for transient faults, exponential backoff
 * for flow control, the last error after maxAttempts, non-retriable codes at once, same message id on
 * every attempt), abort, a broker restart mid-loop, and automatic batching.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { messagingServiceDefinition } from '../../src/protocol/codec.js';
import {
  Producer,
  VelaClientError,
  decodeMessageId,
  newMessageId,
  type SendReceipt,
} from '../../src/index.js';
import { prepareMessage } from '../../src/client/message.js';
import { encodeSendRequest } from '../../src/client/send-encoder.js';
import type { MessageQueue } from '../../src/protocol/wire-types.js';
import { startBroker } from '../../src/server.js';
import { sleep } from '../helpers.js';
import { FaultProxy } from './fault-proxy.js';
import { startTestBroker, unique, type TestBroker, use, closeAll, waitFor } from './support.js';

describe('Producer', () => {
  let b: TestBroker;
  let proxy: FaultProxy;
  before(async () => {
    b = await startTestBroker();
    proxy = await FaultProxy.start(b.endpoints);
  });
  after(async () => {
    await closeAll();
    await proxy.close();
    await b.close();
  });

  async function topic(type?: 'FIFO'): Promise<string> {
    const t = unique('PT');
    await b.running.broker.topics.upsert(t, type ? { attributes: { 'message.type': type } } : {});
    return t;
  }

  /** Calls the proxy saw for a topic's messages, by message id set. */
  const callsFor = (ids: Set<string>) => proxy.sends.filter((s) => s.messageIds.some((id) => ids.has(id)));

  test('sends normal messages with tag, keys and properties; v1 message ids; receipts', async () => {
    const t = await topic();
    const p = use(new Producer({ endpoints: b.endpoints, topics: [t] }));
    await p.start();
    const r = await p.send({
      topic: t,
      body: 'hello',
      tag: 'TagA',
      keys: ['k1', 'k2'],
      properties: { a: '1' },
    });
    assert.match(r.messageId, /^01[0-9A-F]{32}$/);
    assert.equal(decodeMessageId(r.messageId)?.pid, process.pid & 0xffff);
    assert.equal(typeof r.offset, 'number');
    const [stored] = await b.running.broker.findMessageById(r.messageId, t);
    assert.ok(stored);
    assert.equal(stored.body.toString(), 'hello');
    assert.equal(stored.tag, 'TagA');
    assert.deepEqual(stored.keys, ['k1', 'k2']);
    assert.equal(stored.properties.a, '1');
    assert.equal(stored.queueOffset, r.offset);
    assert.equal(b.running.broker.sessions.get(p.clientId)?.clientType, 'PRODUCER');
    await p.close();
    assert.equal(
      b.running.broker.sessions.get(p.clientId),
      undefined,
      'NotifyClientTermination ended the session',
    );
    await p.close(); // idempotent
    await assert.rejects(
      p.send({ topic: t, body: 'x' }),
      (e: VelaClientError) => e.codeName === 'PRECONDITION_FAILED',
    );
  });

  test('FIFO messages keep their message group; a DELAY message is scheduled and can be recalled', async () => {
    const fifo = await topic('FIFO');
    const p = use(new Producer({ endpoints: proxy.endpoints }));
    const r = await p.send({ topic: fifo, body: 'f', messageGroup: 'order-1' });
    const [stored] = await b.running.broker.findMessageById(r.messageId, fifo);
    assert.equal(stored?.messageGroup, 'order-1');
    // A normal message on a FIFO topic: refused, not retried.
    const before = proxy.sends.length;
    await assert.rejects(p.send({ topic: fifo, body: 'n' }), (e: VelaClientError) => {
      assert.equal(e.code, 40014);
      assert.equal(e.retriable, false);
      return true;
    });
    assert.equal(proxy.sends.length - before, 1, 'non-retriable codes are thrown at once');
    // DELAY: sent with its delivery time, scheduled by the broker, with a handle to recall it.
    const delay = unique('DelayT');
    await b.running.broker.topics.upsert(delay, { attributes: { 'message.type': 'DELAY' } });
    const at = Date.now() + 60_000;
    const receipt = await p.send({ topic: delay, body: 'd', deliveryTimestamp: at });
    assert.ok(receipt.recallHandle, 'a recall handle');
    assert.equal((await b.running.broker.timer.status(delay)).topics[0]?.nextDueAt, at);
    await p.recallMessage(delay, receipt.recallHandle);
    assert.equal((await b.running.broker.timer.status(delay)).scheduled, 0);
    await assert.rejects(
      p.send({ topic: fifo, body: 'x', messageGroup: 'g', deliveryTimestamp: Date.now() }),
      (e: VelaClientError) => e.codeName === 'BAD_REQUEST',
    );
    await p.close();
  });

  test('request headers: client id, protocol, date-time, request id, language, version, namespace', async () => {
    const t = unique('NsT');
    await b.running.broker.topics.upsert(`nsx%${t}`, {});
    const p = use(new Producer({ endpoints: proxy.endpoints, namespace: 'nsx' }));
    const r = await p.send({ topic: t, body: 'ns' });
    assert.equal((await b.running.broker.findMessageById(r.messageId, `nsx%${t}`)).length, 1);
    const h = proxy.sendHeaders.at(-1)!;
    assert.equal(h['x-mq-client-id'], p.clientId);
    assert.equal(h['x-mq-protocol'], 'v2');
    assert.match(h['x-mq-date-time']!, /^\d{8}T\d{6}Z$/);
    assert.match(h['x-mq-request-id']!, /^[0-9a-f-]{36}$/);
    assert.equal(h['x-mq-language'], 'HTTP');
    assert.ok(h['x-mq-client-version']);
    assert.equal(h['x-mq-namespace'], 'nsx');
    const other = use(new Producer({ endpoints: proxy.endpoints, namespace: 'nsx' }));
    assert.notEqual(other.clientId, p.clientId, 'client ids are unique per instance');
    await p.close();
  });

  test('transient faults (lost connection, internal error, no answer) are retried at once, same message id', async () => {
    const t = await topic();
    const p = use(
      new Producer({
        endpoints: proxy.endpoints,
        topics: [t],
        requestTimeoutMs: 400,
        batching: false,
      }),
    );
    await p.start();
    proxy.faults.push('unavailable', 'internal');
    const started = Date.now();
    const r = await p.send({ topic: t, body: 'retry-me' });
    assert.ok(Date.now() - started < 1000, `immediate retries (${Date.now() - started} ms)`);
    const calls = callsFor(new Set([r.messageId]));
    assert.deepEqual(
      calls.map((c) => c.fault),
      ['unavailable', 'internal', 'forwarded'],
    );
    // A slow broker: the request times out and is sent again.
    proxy.faults.push('hang');
    const r2 = await p.send({ topic: t, body: 'slow' });
    assert.deepEqual(
      callsFor(new Set([r2.messageId])).map((c) => c.fault),
      ['hang', 'forwarded'],
    );
    assert.equal((await b.running.broker.findMessageById(r2.messageId, t)).length, 1);
    await p.close();
  });

  test('flow control backs off 1 s, 1.6 s, 2.56 s … (±20 % jitter, capped at 120 s), via an injected sleep', async () => {
    const t = await topic();
    const slept: number[] = [];
    const p = use(
      new Producer({
        endpoints: proxy.endpoints,
        topics: [t],
        maxAttempts: 6,
        batching: false,
        sleep: async (ms) => void slept.push(ms),
        random: () => 0.5,
      }),
    );
    proxy.faults.push('flow-control', 'flow-control', 'flow-control', 'flow-control', 'flow-control');
    const r = await p.send({ topic: t, body: 'busy' });
    assert.deepEqual(
      slept.map((x) => Math.round(x)),
      [1000, 1600, 2560, 4096, 6554],
    );
    assert.equal(callsFor(new Set([r.messageId])).length, 6);
    assert.ok(new Set(callsFor(new Set([r.messageId])).flatMap((c) => c.messageIds)).size === 1, 'one id');
    await p.close();

    // Jitter bounds and the cap.
    for (const [random, factor] of [
      [0, 0.8],
      [0.999999, 1.2],
    ] as const) {
      const waits: number[] = [];
      const q = use(
        new Producer({
          endpoints: proxy.endpoints,
          maxAttempts: 3,
          batching: false,
          initialBackoffMs: 100_000,
          sleep: async (ms) => void waits.push(ms),
          random: () => random,
        }),
      );
      proxy.faults.push('flow-control', 'flow-control', 'flow-control');
      const err = await q.send({ topic: t, body: 'busy' }).catch((e: unknown) => e);
      assert.ok(err instanceof VelaClientError && err.flowControl && err.code === 42900);
      assert.equal(waits.length, 2, 'no wait after the last attempt');
      assert.ok(Math.abs(waits[0]! - 100_000 * factor) < 1, `first wait ${waits[0]}`);
      assert.ok(waits[1]! <= 120_000, `capped: ${waits[1]}`);
      await q.close();
    }
  });

  test('the last error is thrown after maxAttempts; BAD_REQUEST-class codes are not retried', async () => {
    const t = await topic();
    const p = use(new Producer({ endpoints: proxy.endpoints, topics: [t], batching: false }));
    await p.start();
    const before = proxy.sends.length;
    proxy.faults.push('internal', 'internal', 'unavailable');
    const err = await p.send({ topic: t, body: 'x' }).catch((e: unknown) => e);
    assert.ok(err instanceof VelaClientError);
    assert.equal(err.transport, true);
    assert.equal(err.retriable, true);
    assert.equal(proxy.sends.length - before, 3);
    proxy.faults.push('bad-request');
    const bad = await p.send({ topic: t, body: 'x' }).catch((e: unknown) => e);
    assert.ok(bad instanceof VelaClientError && bad.code === 40000 && !bad.retriable);
    assert.equal(proxy.sends.length - before, 4);
    await p.close();
  });

  test('abort: an aborted send rejects with the signal reason and is not retried', async () => {
    const t = await topic();
    const p = use(new Producer({ endpoints: proxy.endpoints, topics: [t], requestTimeoutMs: 5000 }));
    await p.start();
    await assert.rejects(p.send({ topic: t, body: 'x' }, { signal: AbortSignal.abort() }), {
      name: 'AbortError',
    });
    proxy.faults.push('hang');
    const ac = new AbortController();
    const before = proxy.sends.length;
    const pending = p.send({ topic: t, body: 'x' }, { signal: ac.signal });
    // Abort once the request is on the wire (not after a fixed sleep, which a busy machine outlasts).
    await waitFor(() => proxy.sends.length > before, { what: 'the send to reach the broker' });
    const t0 = Date.now();
    ac.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    assert.ok(Date.now() - t0 < 100);
    assert.equal(proxy.sends.length - before, 1);
    await p.close();
  });

  test('abort in a batch: callers sharing one signal give up together; one without a signal still gets its receipt', async () => {
    const t = await topic();
    const p = use(
      new Producer({ endpoints: proxy.endpoints, topics: [t], requestTimeoutMs: 500, batchLingerMs: 20 }),
    );
    await p.start();
    // Three callers with one (application-wide) signal share a request; aborting it cancels the
    // request at once, and nothing is sent again.
    proxy.faults.push('hang');
    const shutdown = new AbortController();
    let before = proxy.sends.length;
    const shared = [1, 2, 3].map((i) => p.send({ topic: t, body: `s${i}` }, { signal: shutdown.signal }));
    await waitFor(() => proxy.sends.length > before, { what: 'the shared request to reach the broker' });
    assert.equal(proxy.sends.at(-1)!.messageIds.length, 3, 'one request for the three');
    const t0 = Date.now();
    shutdown.abort();
    for (const s of shared) await assert.rejects(s, { name: 'AbortError' });
    assert.ok(Date.now() - t0 < 100);
    assert.equal(proxy.sends.length - before, 1);

    // A caller with a signal and one without share a request that hangs: the first gives up alone;
    // the request is not cancelled for the second, which times out and is sent again.
    proxy.faults.push('hang');
    const mine = new AbortController();
    before = proxy.sends.length;
    const aborted = p.send({ topic: t, body: 'gives-up' }, { signal: mine.signal });
    const patient = p.send({ topic: t, body: 'waits' });
    await waitFor(() => proxy.sends.length > before, { what: 'the mixed request to reach the broker' });
    assert.equal(proxy.sends.at(-1)!.messageIds.length, 2, 'one request for the two');
    mine.abort();
    await assert.rejects(aborted, { name: 'AbortError' });
    const receipt = await patient;
    const calls = callsFor(new Set([receipt.messageId]));
    assert.deepEqual(
      calls.map((c) => c.fault),
      ['hang', 'forwarded'],
    );
    assert.equal((await b.running.broker.findMessageById(receipt.messageId, t)).length, 1);
    await p.close();
  });

  test('automatic batching: concurrent sends share requests, each caller gets its own receipt', async () => {
    const t = await topic();
    const p = use(new Producer({ endpoints: proxy.endpoints, topics: [t] }));
    await p.start();
    const n = 300;
    const receipts = await Promise.all(
      Array.from({ length: n }, (_, i) => p.send({ topic: t, body: `body-${i}`, keys: [`key-${i}`] })),
    );
    const ids = new Set(receipts.map((r) => r.messageId));
    assert.equal(ids.size, n, 'one id per message');
    const calls = callsFor(ids);
    assert.ok(calls.length < n / 10, `${calls.length} SendMessage calls for ${n} sends`);
    assert.ok(Math.max(...calls.map((c) => c.messageIds.length)) <= 256, 'maxBatchMessages');
    for (let i = 0; i < n; i += 37) {
      const [stored] = await b.running.broker.findMessageById(receipts[i]!.messageId, t);
      assert.equal(stored?.body.toString(), `body-${i}`, 'the receipt is the caller’s own');
      assert.equal(stored?.queueOffset, receipts[i]!.offset);
    }
    // A bad message in a batch fails alone.
    const mixed = await Promise.allSettled([
      p.send({ topic: t, body: 'ok-1' }),
      p.send({ topic: t, body: 'bad', properties: { UNIQ_KEY: 'reserved' } }),
      p.send({ topic: t, body: 'ok-2' }),
    ]);
    assert.deepEqual(
      mixed.map((s) => s.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal(((mixed[1] as PromiseRejectedResult).reason as VelaClientError).code, 40007);
    // FIFO messages bypass batching.
    const fifo = await topic('FIFO');
    const fr = await Promise.all(
      Array.from({ length: 10 }, (_, i) => p.send({ topic: fifo, body: `f${i}`, messageGroup: `g${i % 2}` })),
    );
    assert.equal(callsFor(new Set(fr.map((r) => r.messageId))).length, 10);
    await p.close();
  });

  test('every queue of a route has its id, queue 0 included: each request is written by the hand encoder', async () => {
    const t = await topic();
    const p = use(new Producer({ endpoints: b.endpoints, topics: [t] }));
    await p.start();
    // proto3 leaves queue 0's id off the wire; the decoded route must still say 0, or the
    // SendMessage writer (which takes an integer queue id) hands queue 0's requests to protobufjs.
    const route = await (p as unknown as { route(topic: string): Promise<MessageQueue[]> }).route(t);
    assert.deepEqual(
      route.map((q) => q.id).sort((x, y) => x - y),
      Array.from({ length: route.length }, (_, i) => i),
    );
    const { wire } = prepareMessage({ topic: t, body: 'x' }, '', newMessageId(), false);
    for (const q of route) assert.ok(encodeSendRequest([wire], q.id), `queue ${q.id}`);
    await p.close();
  });

  test('close() flushes pending batches and waits for them', async () => {
    const t = await topic();
    const p = use(new Producer({ endpoints: b.endpoints, topics: [t], batchLingerMs: 50 }));
    await p.start();
    const pending = Array.from({ length: 20 }, (_, i) => p.send({ topic: t, body: `c${i}` }));
    await new Promise((r) => process.nextTick(r)); // the sends are queued, not yet on the wire
    await p.close();
    const receipts = await Promise.all(pending);
    assert.equal(receipts.length, 20);
  });

  test('a start that gets no Settings reply fails with REQUEST_TIMEOUT instead of hanging', async () => {
    // A server that routes to itself and accepts Telemetry but never answers it.
    const server = new grpc.Server();
    const streams: grpc.ServerDuplexStream<unknown, unknown>[] = [];
    let port = 0;
    server.addService(messagingServiceDefinition(), {
      QueryRoute: (_call: unknown, cb: grpc.sendUnaryData<unknown>) =>
        cb(null, {
          status: { code: 20000, message: 'OK' },
          message_queues: [
            {
              topic: { name: 'T' },
              id: 0,
              permission: 4,
              broker: {
                name: 'b',
                id: 0,
                endpoints: { scheme: 1, addresses: [{ host: '127.0.0.1', port }] },
              },
              accept_message_types: [1],
            },
          ],
        }),
      Telemetry: (call: grpc.ServerDuplexStream<unknown, unknown>) => void streams.push(call),
    });
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    const p = use(new Producer({ endpoints: `127.0.0.1:${port}`, topics: ['T'], settingsTimeoutMs: 200 }));
    const t0 = Date.now();
    const err = await p.start().catch((e: unknown) => e);
    assert.ok(err instanceof VelaClientError, String(err));
    assert.equal(err.codeName, 'REQUEST_TIMEOUT');
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(streams.length, 1);
    await p.close();
    // Nothing listening at all: a retriable transport error.
    const nowhere = use(new Producer({ endpoints: '127.0.0.1:1', topics: ['T'], requestTimeoutMs: 300 }));
    const err2 = await nowhere.start().catch((e: unknown) => e);
    assert.ok(err2 instanceof VelaClientError && err2.transport && err2.retriable, String(err2));
    await nowhere.close();
    server.forceShutdown();
  });
});

test('a broker restart in the middle of a send loop loses no acknowledged message', async (tc) => {
  const b = await startTestBroker();
  const t = unique('Restart');
  await b.running.broker.topics.upsert(t, {});
  const port = b.running.grpcPort;
  const p = use(new Producer({ endpoints: b.endpoints, topics: [t] }));
  await p.start();
  const acked: SendReceipt[] = [];
  const failed: unknown[] = [];
  let stop = false;
  let i = 0;
  const worker = async () => {
    while (!stop) {
      try {
        acked.push(await p.send({ topic: t, body: `m${i++}` }));
      } catch (err) {
        failed.push(err);
      }
    }
  };
  const workers = Array.from({ length: 8 }, worker);
  await sleep(200);
  await b.running.close();
  const atRestart = acked.length;
  await sleep(100);
  const restarted = await startBroker({
    dataDir: b.dataDir,
    grpcPort: port,
    httpPort: 0,
    remotingPort: 0,
    consume: { minInvisibleMs: 100 },
    shutdownGraceMs: 1000,
  });
  const deadline = Date.now() + 8000;
  while (acked.length < atRestart + 200 && Date.now() < deadline) await sleep(20);
  stop = true;
  try {
    await Promise.all(workers);
    // The Telemetry session came back by itself (re-opened 1 s after the stream ended, Settings re-sent).
    const until = Date.now() + 3000;
    while (!restarted.broker.sessions.get(p.clientId)?.telemetryOpen && Date.now() < until) await sleep(20);
    assert.equal(restarted.broker.sessions.get(p.clientId)?.clientType, 'PRODUCER');
    await p.close();
    await sleep(1200);
    assert.equal(
      restarted.broker.sessions.get(p.clientId),
      undefined,
      'no Telemetry stream re-opened after close',
    );
    tc.diagnostic(`acknowledged ${acked.length} (${atRestart} before the restart), failed ${failed.length}`);
    assert.ok(
      acked.length > atRestart + 100,
      `sends resumed after the restart (${atRestart} → ${acked.length})`,
    );
    for (const r of acked) {
      const found = await restarted.broker.findMessageById(r.messageId, t);
      assert.ok(found.length >= 1, `acknowledged message ${r.messageId} is readable after the restart`);
    }
  } finally {
    await closeAll();
    await restarted.close();
    await b.close();
  }
});
