/**
 * Queue-granularity consumption through the gRPC endpoint: pulls by offset, committed offsets,
 * assignment among pull consumers, rewind, broadcast, and pulls below the retained range.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { storeOf } from '../../src/internal.js';
import { Code } from '../../src/common/codes.js';
import { allocateAveragely } from '../../src/broker/assignment.js';
import { tempDir, sleep } from '../helpers.js';
import { RawClient, startTestBroker } from './raw-client.js';
import { fromMillis } from '../../src/protocol/codec.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

let running: RunningBroker;
let client: RawClient;
let seq = 0;
const unique = (p: string) => `${p}_${process.pid}_${++seq}`;
const body = (m: Any) => m.body.toString() as string;

let close: () => Promise<void>;

before(async () => {
  ({ running, client, close } = await startTestBroker());
});

after(() => close());

async function setup(queues = 1): Promise<{ topic: string; group: string }> {
  const topic = unique('T');
  const group = unique('G');
  await running.broker.topics.upsert(topic, { readQueueNums: queues, writeQueueNums: queues });
  await running.broker.groups.upsert(group, {});
  return { topic, group };
}

/** A pull consumer session (Settings with client_type PULL_CONSUMER). */
async function pullConsumer(
  group: string,
  properties: Record<string, string> = {},
): Promise<{ c: RawClient; end: () => void }> {
  const c = new RawClient(client.address);
  const { reply, end } = await c.telemetry({
    client_type: 4,
    subscription: { group: { name: group } },
    client_properties: properties,
  });
  assert.equal(reply.status.code, Code.OK);
  return { c, end };
}

async function assignment(c: RawClient, group: string, topic: string): Promise<number[]> {
  const r = await c.unary('QueryAssignment', {
    topic: { name: topic },
    group: { name: group },
    endpoints: { scheme: 1, addresses: [{ host: '127.0.0.1', port: running.grpcPort }] },
  });
  assert.equal(r.status.code, Code.OK);
  return r.assignments.map((a: Any) => a.message_queue.id ?? 0).sort((a: number, b: number) => a - b);
}

test('allocateAveragely: every queue exactly one owner, sizes differ by at most one', () => {
  const queues = [0, 1, 2, 3, 4, 5, 6, 7];
  for (const n of [1, 2, 3, 5, 8, 11]) {
    const clients = Array.from({ length: n }, (_, i) => `c${i}`);
    const owned = clients.map((c) => allocateAveragely(queues, clients, c));
    assert.deepEqual(
      owned.flat().sort((a, b) => a - b),
      n <= 8 ? queues : queues,
      `${n} consumers`,
    );
    const sizes = owned.map((o) => o.length).filter((x) => x > 0);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1);
  }
  assert.deepEqual(allocateAveragely([0, 1, 2, 3, 4, 5, 6, 7], ['a', 'b', 'c'], 'a'), [0, 1, 2]);
  assert.deepEqual(allocateAveragely([0, 1, 2, 3, 4, 5, 6, 7], ['c', 'a', 'b'], 'c'), [6, 7]);
  assert.deepEqual(allocateAveragely([0, 1], ['a', 'b', 'c'], 'c'), []);
});

test('pulls by offset, bounded by count; long polling at the end; next_offset to continue', async () => {
  const { topic, group } = await setup();
  await client.send(
    topic,
    Array.from({ length: 10 }, (_, i) => ({ body: Buffer.from(`m${i}`) })),
  );
  const first = await client.pull(group, topic, 0, 0, { batch: 4 });
  assert.equal(first.status.code, Code.OK);
  assert.deepEqual(first.messages.map(body), ['m0', 'm1', 'm2', 'm3']);
  assert.equal(first.nextOffset, 4);
  assert.equal(first.messages[0].system_properties.queue_offset ?? 0, 0);
  const rest = await client.pull(group, topic, 0, first.nextOffset, { batch: 100 });
  assert.equal(rest.messages.length, 6);
  assert.equal(rest.nextOffset, 10);
  const t0 = Date.now();
  const empty = await client.pull(group, topic, 0, 10, { pollMs: 300 });
  assert.equal(empty.status.code, Code.MESSAGE_NOT_FOUND);
  assert.equal(empty.nextOffset, 10);
  assert.ok(Date.now() - t0 >= 280);
  const waiting = client.pull(group, topic, 0, 10, { pollMs: 5000 });
  await sleep(100);
  await client.send(topic, [{ body: Buffer.from('late') }]);
  const late = await waiting;
  assert.deepEqual(late.messages.map(body), ['late']);
  const bad = await client.pull(group, topic, 3, 0);
  assert.equal(bad.status.code, Code.BAD_REQUEST, 'a queue the topic does not have');
});

test('committed offsets: GetOffset before any commit, UpdateOffset, QueryOffset policies; they survive a restart', async () => {
  const d = tempDir();
  try {
    let b = await startBroker({ dataDir: d.path, grpcPort: 0, httpPort: 0, remotingPort: 0 });
    await b.broker.topics.upsert('OT', { readQueueNums: 2, writeQueueNums: 2 });
    await b.broker.groups.upsert('OG', {});
    let c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    await c.send(
      'OT',
      Array.from({ length: 6 }, () => ({})),
    );
    const mq = (id: number) => ({ topic: { name: 'OT' }, id });
    assert.equal(
      (await c.unary('GetOffset', { group: { name: 'OG' }, message_queue: mq(0) })).status.code,
      Code.OFFSET_NOT_FOUND,
    );
    assert.equal(
      (await c.unary('UpdateOffset', { group: { name: 'OG' }, message_queue: mq(0), offset: 2 })).status.code,
      Code.OK,
    );
    assert.equal(
      (await c.unary('UpdateOffset', { group: { name: 'OG' }, message_queue: mq(1), offset: 3 })).status.code,
      Code.OK,
    );
    assert.equal(
      (await c.unary('QueryOffset', { message_queue: mq(0), query_offset_policy: 0 })).offset ?? 0,
      0,
    );
    assert.equal((await c.unary('QueryOffset', { message_queue: mq(0), query_offset_policy: 1 })).offset, 3);
    assert.equal(
      (
        await c.unary('QueryOffset', {
          message_queue: mq(0),
          query_offset_policy: 2,
          timestamp: fromMillis(Date.now() + 60_000),
        })
      ).offset,
      3,
    );
    c.close();
    await b.close();

    b = await startBroker({ dataDir: d.path, grpcPort: 0, httpPort: 0, remotingPort: 0 });
    c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    assert.equal((await c.unary('GetOffset', { group: { name: 'OG' }, message_queue: mq(0) })).offset, 2);
    assert.equal((await c.unary('GetOffset', { group: { name: 'OG' }, message_queue: mq(1) })).offset, 3);
    const progress: Any = await (await fetch(`http://127.0.0.1:${b.httpPort}/api/groups/OG/progress`)).json();
    assert.deepEqual(
      progress.queues.map((q: Any) => [q.queueId, q.consumerOffset, q.lag]),
      [
        [0, 2, 1],
        [1, 3, 0],
      ],
    );
    assert.ok(progress.queues[0].lastConsumeTimestamp > 0);
    c.close();
    await b.close();
  } finally {
    d.cleanup();
  }
});

test('8 queues, 1 → 3 → 2 pull consumers: every queue owned by exactly one live consumer', async () => {
  const { topic, group } = await setup(8);
  const a = await pullConsumer(group);
  assert.deepEqual(await assignment(a.c, group, topic), [0, 1, 2, 3, 4, 5, 6, 7]);
  const b = await pullConsumer(group);
  const c = await pullConsumer(group);
  const three = [
    await assignment(a.c, group, topic),
    await assignment(b.c, group, topic),
    await assignment(c.c, group, topic),
  ];
  assert.deepEqual(
    three.flat().sort((x, y) => x - y),
    [0, 1, 2, 3, 4, 5, 6, 7],
  );
  assert.deepEqual(three.map((q) => q.length).sort(), [2, 3, 3]);
  await b.c.unary('NotifyClientTermination', { group: { name: group } });
  b.end();
  const two = [await assignment(a.c, group, topic), await assignment(c.c, group, topic)];
  assert.deepEqual(
    two.flat().sort((x, y) => x - y),
    [0, 1, 2, 3, 4, 5, 6, 7],
    'the leaver’s queues move at once',
  );
  assert.deepEqual(
    two.map((q) => q.length),
    [4, 4],
  );
  for (const x of [a, b, c]) {
    x.end();
    x.c.close();
  }
});

test('a pull below the retained range answers where to continue, not an error that stops the consumer', async () => {
  const d = tempDir();
  let used = 10;
  try {
    const b = await startBroker({
      dataDir: d.path,
      grpcPort: 0,
      httpPort: 0,
      remotingPort: 0,
      store: { segmentSize: 4096 },
      diskUsage: async () => ({ totalBytes: 100, usedBytes: used }),
    });
    await b.broker.topics.upsert('RetT', { readQueueNums: 1, writeQueueNums: 1 });
    await b.broker.groups.upsert('RetG', {});
    const c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    for (let i = 0; i < 20; i++) await c.send('RetT', [{ body: Buffer.alloc(900, i) }]);
    used = 80; // disk pressure: the oldest segments go
    await storeOf(b.broker).runRetention();
    const min = storeOf(b.broker).queueState('RetT', 0).minOffset;
    assert.ok(min > 0, 'retention removed the head of the queue');
    const r = await c.pull('RetG', 'RetT', 0, 0);
    assert.equal(r.status.code, Code.ILLEGAL_OFFSET);
    assert.match(r.status.message, /removed by retention/);
    assert.equal(r.nextOffset, min);
    const from = await c.pull('RetG', 'RetT', 0, r.nextOffset);
    assert.equal(from.status.code, Code.OK);
    assert.equal(from.messages[0].system_properties.queue_offset, min);
    c.close();
    await b.close();
  } finally {
    d.cleanup();
  }
});

test('resetOffsetByTime: a pull group and a simple-consumer group get the messages since then again', async () => {
  const { topic, group } = await setup(2);
  const simpleGroup = unique('G');
  await running.broker.groups.upsert(simpleGroup, {});
  await client.send(
    topic,
    Array.from({ length: 4 }, (_, i) => ({ body: Buffer.from(`old${i}`) })),
  );
  await sleep(30);
  const since = Date.now();
  await sleep(30);
  await client.send(
    topic,
    Array.from({ length: 4 }, (_, i) => ({ body: Buffer.from(`new${i}`) })),
  );

  // The simple group consumes everything, then is reset.
  for (;;) {
    const r = await client.receiveMessages(simpleGroup, topic);
    if (r.messages.length === 0) break;
    await client.ack(
      simpleGroup,
      topic,
      r.messages.map((m: Any) => m.system_properties.receipt_handle),
    );
  }
  // The pull group has committed the end of both queues.
  for (const q of [0, 1]) {
    await client.unary('UpdateOffset', {
      group: { name: group },
      message_queue: { topic: { name: topic }, id: q },
      offset: storeOf(running.broker).queueState(topic, q).maxOffset,
    });
  }
  const base = `http://127.0.0.1:${running.httpPort}/api/groups`;
  const post = (g: string) =>
    fetch(`${base}/${g}/reset-offset`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ topic, timestamp: since }),
    }).then((r) => r.json() as Promise<Any>);
  const pullReset = await post(group);
  assert.deepEqual(
    pullReset.queues.map((q: Any) => q.newOffset),
    [2, 2],
    'new offsets per queue, like mqadmin prints',
  );

  const again: string[] = [];
  for (const q of [0, 1]) {
    const end = storeOf(running.broker).queueState(topic, q).maxOffset;
    const moved = await client.pull(group, topic, q, end);
    assert.equal(
      moved.status.code,
      Code.ILLEGAL_OFFSET,
      'the running consumer hears of the reset at its next pull',
    );
    const r = await client.pull(group, topic, q, moved.nextOffset);
    again.push(...r.messages.map(body));
  }
  assert.deepEqual(again.sort(), ['new0', 'new1', 'new2', 'new3']);

  await post(simpleGroup);
  const redelivered: string[] = [];
  for (;;) {
    const r = await client.receiveMessages(simpleGroup, topic);
    if (r.messages.length === 0) break;
    redelivered.push(...r.messages.map(body));
  }
  assert.deepEqual(redelivered.sort(), ['new0', 'new1', 'new2', 'new3']);
});

test('broadcast: three pull consumers each own every queue, and broadcast simple consumers each get every message', async () => {
  const { topic, group } = await setup(2);
  await client.send(
    topic,
    Array.from({ length: 6 }, (_, i) => ({ body: Buffer.from(`b${i}`) })),
  );
  const consumers = await Promise.all(
    ['one', 'two', 'three'].map((name) =>
      pullConsumer(group, { 'vela.consume.mode': 'BROADCASTING', 'vela.consumer.name': name }),
    ),
  );
  for (const { c } of consumers) {
    assert.deepEqual(await assignment(c, group, topic), [0, 1]);
    const got: string[] = [];
    for (const q of [0, 1]) {
      const r = await c.pull(group, topic, q, 0);
      got.push(...r.messages.map(body));
      await c.unary('UpdateOffset', {
        group: { name: group },
        message_queue: { topic: { name: topic }, id: q },
        offset: r.nextOffset,
      });
    }
    assert.equal(got.length, 6);
  }
  assert.equal(
    (
      await consumers[0]!.c.unary('GetOffset', {
        group: { name: group },
        message_queue: { topic: { name: topic }, id: 0 },
      })
    ).offset,
    3,
  );
  assert.equal(
    (
      await client.unary('GetOffset', {
        group: { name: group },
        message_queue: { topic: { name: topic }, id: 0 },
      })
    ).status.code,
    Code.OFFSET_NOT_FOUND,
    'each broadcast consumer has its own progress',
  );
  for (const x of consumers) {
    x.end();
    x.c.close();
  }

  const simpleGroup = unique('G');
  await running.broker.groups.upsert(simpleGroup, {});
  const simple = await Promise.all(
    ['s1', 's2'].map(async (name) => {
      const c = new RawClient(client.address);
      await c.telemetry({
        client_type: 3,
        subscription: { group: { name: simpleGroup } },
        client_properties: { 'vela.consume.mode': 'BROADCASTING', 'vela.consumer.name': name },
      });
      return c;
    }),
  );
  for (const c of simple) {
    const r = await c.receiveMessages(simpleGroup, topic);
    assert.equal(r.messages.length, 6, 'every broadcast consumer gets every message');
    assert.equal(
      (
        await c.ack(
          simpleGroup,
          topic,
          r.messages.map((m: Any) => m.system_properties.receipt_handle),
        )
      ).status.code,
      Code.OK,
    );
    c.close();
  }
});
