/**
 * SDK pieces that need no broker: message ids, backoff arithmetic, endpoint parsing, error mapping,
 * option validation, and the dispatcher's ordering and concurrency rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { VelaClientError } from '../../src/index.js';
import {
  decodeMessageId,
  newMessageId,
  Producer,
  PullConsumer,
  PushConsumer,
  ConsumeResult,
} from '../../src/index.js';
import { backoffDelay, connectTimeout, nackDelayMs, receiveRetryDelay } from '../../src/client/backoff.js';
import { parseEndpoints, grpcTarget } from '../../src/client/endpoints.js';
import {
  fromStatus,
  fromTransport,
  VelaClientError as VelaClientErrorClass,
} from '../../src/client/errors.js';
import { ConsumeDispatcher, type DispatchTicket } from '../../src/client/consume-dispatcher.js';
import { fromMillis } from '../../src/protocol/codec.js';
import type { MessageView } from '../../src/client/message.js';
import { sleep } from '../helpers.js';
import { Code } from '../../src/common/codes.js';

test('message ids: v1 layout, 34 uppercase hex, pid, seconds since 2021, increasing sequence', () => {
  const now = Date.UTC(2025, 5, 1, 12, 0, 0);
  const a = newMessageId(now);
  const b = newMessageId(now);
  assert.match(a, /^01[0-9A-F]{32}$/);
  const da = decodeMessageId(a)!;
  const db = decodeMessageId(b)!;
  assert.equal(da.pid, process.pid & 0xffff);
  assert.equal(da.timestamp, now);
  assert.equal(db.sequence, (da.sequence + 1) >>> 0);
  assert.equal(a.slice(0, 18), b.slice(0, 18), 'version, MAC and pid are fixed');
});

test('backoff: 1 s × 1.6^n with ±20 % jitter, capped; connect timeout floor; nack delays', () => {
  const p = { initialMs: 1000, multiplier: 1.6, jitter: 0.2, maxMs: 120_000 };
  assert.deepEqual(
    [1, 2, 3, 4].map((n) => Math.round(backoffDelay(p, n, () => 0.5))),
    [1000, 1600, 2560, 4096],
  );
  assert.equal(
    backoffDelay(p, 1, () => 0),
    800,
  );
  assert.ok(Math.abs(backoffDelay(p, 1, () => 0.9999999) - 1200) < 0.01);
  assert.equal(
    backoffDelay(p, 30, () => 0.5),
    120_000,
  );
  assert.equal(
    backoffDelay(p, 30, () => 0.9999),
    120_000,
    'jitter never passes the cap',
  );
  assert.equal(connectTimeout(p, 20_000, 1), 20_000);
  assert.equal(connectTimeout(p, 20_000, 7), 20_000, '1.6^6 s is still under the floor');
  assert.equal(Math.round(connectTimeout(p, 20_000, 8)), 26_844, 'then the backoff');
  assert.equal(connectTimeout(p, 20_000, 20), 120_000, 'capped');
  const exp = {
    max_attempts: 3,
    exponential_backoff: { initial: fromMillis(100), max: fromMillis(1000), multiplier: 2 },
  };
  assert.deepEqual(
    [1, 2, 3, 5].map((n) => nackDelayMs(exp, n)),
    [100, 200, 400, 1000],
  );
  const custom = { max_attempts: 3, customized_backoff: { next: [fromMillis(10), fromMillis(30)] } };
  assert.deepEqual(
    [1, 2, 3].map((n) => nackDelayMs(custom, n)),
    [10, 30, 30],
  );
  assert.deepEqual(
    [1, 2, 3, 10].map((n) => receiveRetryDelay(true, n)),
    [100, 200, 400, 5000],
  );
});

test('endpoints: host:port lists, default port, IPv6, schemes', () => {
  assert.deepEqual(parseEndpoints('127.0.0.1:8081'), {
    scheme: 1,
    addresses: [{ host: '127.0.0.1', port: 8081 }],
  });
  assert.deepEqual(parseEndpoints('broker.local'), {
    scheme: 3,
    addresses: [{ host: 'broker.local', port: 8081 }],
  });
  assert.deepEqual(parseEndpoints('[::1]:9000'), { scheme: 2, addresses: [{ host: '::1', port: 9000 }] });
  const two = parseEndpoints('10.0.0.1:1;10.0.0.2:2');
  assert.equal(grpcTarget(two), 'ipv4:10.0.0.1:1,10.0.0.2:2');
  assert.throws(
    () => parseEndpoints('host:notaport'),
    (e: VelaClientError) => e.codeName === 'ILLEGAL_ACCESS_POINT',
  );
});

test('errors: statuses and transport failures map to typed, classified errors', () => {
  const flow = fromStatus({ code: 42900, message: 'busy' }, 'SendMessage');
  assert.ok(flow.flowControl && flow.retriable && flow.codeName === 'TOO_MANY_REQUESTS');
  for (const code of [50000, 50001, 50002, 50400, 50401])
    assert.ok(fromStatus({ code }, 'X').retriable, String(code));
  for (const code of [40000, 40002, 40014, 40300, 40402, 41301, 50100])
    assert.ok(!fromStatus({ code }, 'X').retriable, String(code));
  const lost = fromTransport({ code: GrpcStatus.UNAVAILABLE, details: 'refused' }, 'SendMessage');
  assert.ok(lost.transport && lost.retriable && lost.grpcCode === GrpcStatus.UNAVAILABLE);
  const slow = fromTransport({ code: GrpcStatus.DEADLINE_EXCEEDED }, 'SendMessage');
  assert.ok(slow.retriable && slow.codeName === 'REQUEST_TIMEOUT');
  const big = fromTransport({ code: GrpcStatus.RESOURCE_EXHAUSTED }, 'ReceiveMessage');
  assert.ok(!big.retriable);
});

test('options are validated when the client is built', () => {
  assert.throws(
    () => new Producer({ endpoints: '' }),
    (e: VelaClientError) => e.codeName === 'ILLEGAL_ACCESS_POINT',
  );
  assert.throws(
    () => new Producer({ endpoints: 'h:1', maxAttempts: 0 }),
    (e: VelaClientError) => e.codeName === 'BAD_REQUEST',
  );
  assert.throws(
    () =>
      new PushConsumer({
        endpoints: 'h:1',
        group: 'g',
        subscriptions: { t: '*' },
        listener: () => ConsumeResult.SUCCESS,
        receiveBatchSize: 2048,
      }),
    /receiveBatchSize/,
  );
  assert.throws(
    () => new PushConsumer({ endpoints: 'h:1', group: 'g', subscriptions: { t: '*' } } as never),
    /listener/,
  );
});

test('dispatcher: FIFO keys run one at a time in order, others in parallel, bounded overall', async () => {
  const log: string[] = [];
  let running = 0;
  let peak = 0;
  const d = new ConsumeDispatcher(() => 3, {
    consume: (m, t) => {
      peak = Math.max(peak, ++running);
      log.push(`start ${m.messageId}`);
      void sleep(5).then(() => {
        running--;
        t.consumed(true);
      });
    },
    settle: (m, _ok, t) => {
      void sleep(2).then(() => {
        log.push(`settled ${m.messageId}`);
        t.settled();
      });
    },
  });
  const msg = (id: string) => ({ messageId: id, body: Buffer.alloc(0) }) as MessageView;
  d.push([msg('a1'), msg('b1'), msg('a2'), msg('c1'), msg('a3'), msg('d1')], (m) => m.messageId[0]!);
  await new Promise<void>((resolve) => {
    const check = () => (d.size === 0 ? resolve() : setTimeout(check, 5));
    check();
  });
  assert.equal(peak, 3);
  for (const [x, y] of [
    ['a1', 'a2'],
    ['a2', 'a3'],
  ]) {
    assert.ok(log.indexOf(`settled ${x}`) < log.indexOf(`start ${y}`), `${y} waits for ${x} to settle`);
  }
  assert.deepEqual(await d.stop(), []);
});

test('dispatcher: a message leaves the receive window once its listener is done, not once its ack is answered', async () => {
  // Acks stay unanswered until the test answers them.
  const unanswered: DispatchTicket[] = [];
  const d = new ConsumeDispatcher(() => 16, {
    consume: (_m, t) => queueMicrotask(() => t.consumed(true)),
    settle: (_m, _ok, t) => void unanswered.push(t),
  });
  const batch = (prefix: string, n: number) =>
    Array.from(
      { length: n },
      (_, i) => ({ messageId: `${prefix}${i}`, body: Buffer.alloc(0) }) as MessageView,
    );
  const hasRoom = async (limit: number) => {
    let room = false;
    void d.waitForRoom(limit).then(() => (room = true));
    await sleep(5);
    return room;
  };
  try {
    d.push(batch('a', 4), () => null);
    await sleep(5);
    assert.equal(unanswered.length, 4, 'every listener is done and its ack on its way');
    assert.equal(d.size, 4, 'received and not yet settled');
    assert.equal(d.held(4), 0, 'but nothing held against a window of 4');
    assert.ok(await hasRoom(4), 'so receiving goes on while the acks wait for their answer');

    d.push(batch('b', 5), () => null);
    await sleep(5);
    assert.equal(d.held(4), 5, 'acks past a whole window unanswered count again');
    assert.equal(await hasRoom(4), false, 'so a broker slow to answer acks stops the receiving');
    for (const answer of unanswered.splice(0, 2)) answer.settled();
    assert.ok(await hasRoom(4), 'and answers make room again');
  } finally {
    for (const answer of unanswered.splice(0)) answer.settled();
    assert.deepEqual(await d.stop(), []);
  }
});

test('dispatcher: the receive window closes on body bytes as well as on messages', async () => {
  // Listeners run only when the test lets them; acks stay unanswered until the test answers them.
  const waitingListeners: DispatchTicket[] = [];
  const unanswered: DispatchTicket[] = [];
  const d = new ConsumeDispatcher(() => 16, {
    consume: (_m, t) => void waitingListeners.push(t),
    settle: (_m, _ok, t) => void unanswered.push(t),
  });
  const sized = (id: string, bytes: number) => ({ messageId: id, body: Buffer.alloc(bytes) }) as MessageView;
  const hasRoom = async (limit: number, limitBytes: number) => {
    let room = false;
    void d.waitForRoom(limit, limitBytes).then(() => (room = true));
    await sleep(5);
    return room;
  };
  try {
    d.push([sized('a', 600), sized('b', 500)], () => null);
    assert.equal(d.heldBytes(1000), 1100, 'bodies whose listener is not done are held');
    assert.ok(await hasRoom(100, 2000), 'under both limits: room');
    assert.equal(
      await hasRoom(100, 1000),
      false,
      'two messages of a hundred, but past the byte window: no room',
    );
    waitingListeners.shift()!.consumed(true);
    await sleep(5);
    assert.equal(d.heldBytes(1000), 500, 'a consumed body leaves the window while its ack is on its way');
    assert.ok(await hasRoom(100, 1000), 'and makes room');

    waitingListeners.shift()!.consumed(true);
    d.push([sized('c', 900), sized('d', 900)], () => null);
    for (const t of waitingListeners.splice(0)) t.consumed(true);
    await sleep(5);
    assert.equal(unanswered.length, 4, 'every ack on its way, none answered');
    assert.equal(d.heldBytes(1000), 1900, 'unanswered acks past a whole byte window count again');
    assert.equal(await hasRoom(100, 1000), false, 'so a broker slow to answer acks stops the receiving');
    for (const answer of unanswered.splice(0, 3)) answer.settled();
    assert.ok(await hasRoom(100, 1000), 'and answers make room again');
  } finally {
    for (const t of waitingListeners.splice(0)) t.consumed(true);
    for (const answer of unanswered.splice(0)) answer.settled();
    assert.deepEqual(await d.stop(), []);
  }
});

test('push consumer settling: a retriable ack failure is retried up to settleMaxAttempts, then given up', async () => {
  const consumer = new PushConsumer({
    endpoints: '127.0.0.1:1',
    group: 'g',
    subscriptions: { t: '*' },
    listener: () => ConsumeResult.SUCCESS,
    settleMaxAttempts: 3,
  });
  // The settling path alone, its broker calls stubbed: the first ack goes through the batcher's
  // callback, retries through ackMessage; back-off sleeps are skipped.
  const inner = consumer as unknown as {
    settle(m: MessageView, ok: boolean, t: Pick<DispatchTicket, 'message' | 'settled'>): void;
    ackMessageThen(m: MessageView, done: (err: unknown, arg: unknown) => void, arg: unknown): void;
    ackMessage(m: MessageView): Promise<void>;
    timers: { sleep(ms: number): Promise<void> };
  };
  const sleeps: number[] = [];
  inner.timers = { sleep: async (ms) => void sleeps.push(ms) };
  const busy = () => new VelaClientErrorClass(Code.INTERNAL_SERVER_ERROR, 'try again');
  const m = { messageId: 'm1', topic: 't' } as MessageView;
  const settle = (first: unknown, then: unknown[]) => {
    let acks = 0;
    inner.ackMessageThen = (_m, done, arg) => queueMicrotask(() => done(first, arg));
    inner.ackMessage = async () => {
      const outcome = then[acks++];
      if (outcome !== undefined) throw outcome;
    };
    return new Promise<number>((resolve) =>
      inner.settle(m, true, { message: m, settled: () => resolve(acks) }),
    );
  };

  assert.equal(await settle(undefined, []), 0, 'acked at once: no retry');
  assert.equal(await settle(busy(), [undefined]), 1, 'a retriable failure: acked on the second attempt');
  assert.deepEqual(sleeps, [200]);
  assert.equal(await settle(busy(), [busy(), busy(), undefined]), 2, 'given up after 3 attempts in all');
  const fatal = new VelaClientErrorClass(Code.BAD_REQUEST, 'bad request');
  assert.equal(fatal.retriable, false);
  assert.equal(await settle(fatal, [undefined]), 0, 'a non-retriable failure is not retried');
  await consumer.close();
});

test('pull consumer: a queue pulled twice at once (the pull sent ahead lands on it after a rebalance) hands its messages out once', async () => {
  const c = new PullConsumer({ endpoints: '127.0.0.1:1', group: 'g', subscriptions: { t: '*' } });
  // No broker: the consumer's queues and its pulls are set by hand; each queue holds offsets 0–3 and a
  // pull answers two from where its queue's position was when it was sent.
  const internals = c as unknown as {
    start: () => Promise<void>;
    pullOnce: (pos: { next: number; queue: { id: number } }) => Promise<unknown>;
    positions: Map<string, object>;
  };
  internals.start = async () => {};
  const stop = new AbortController();
  const drained = new Set<number>();
  internals.pullOnce = async (pos) => {
    const from = pos.next;
    const offsets = [from, from + 1].filter((o) => o < 4);
    if (offsets.length === 0) drained.add(pos.queue.id);
    if (drained.has(0) && drained.has(2)) stop.abort(); // A and B read through: enough
    return {
      messages: offsets.map((o) => ({ messageId: `q${pos.queue.id}-${o}`, queueOffset: o })),
      next: from + offsets.length,
    };
  };
  const position = (id: number) => ({
    next: 0,
    epoch: 0,
    answers: 0,
    consumed: 0,
    committed: 0,
    conn: {},
    queue: { topic: { name: 't' }, id },
  });
  internals.positions = new Map([
    ['A', position(0)],
    ['X', position(1)],
    ['B', position(2)],
  ]);
  const seen: string[] = [];
  try {
    for await (const m of c.messages({ signal: stop.signal })) {
      seen.push(m.messageId);
      // Once X's first message is out, X moves to another consumer: with A and B left, the pull sent
      // ahead of B's (in flight) is B's again.
      if (m.messageId === 'q1-0') internals.positions.delete('X');
      if (seen.length >= 20) break;
    }
  } finally {
    stop.abort();
  }
  const repeated = seen.filter((id, i) => seen.indexOf(id) !== i);
  assert.deepEqual(repeated, [], `handed out twice: ${repeated.join(', ')} (${seen.join(', ')})`);
  assert.ok(seen.includes('q2-0') && seen.includes('q2-3'), `B read through: ${seen.join(', ')}`);
});
