/**
 * Ordered consumption: a group with consumeMessageOrderly gets each message group in storage order,
 * one at a time, across all its consumers; a failing head holds back only its own group.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { tempDir } from '../helpers.js';
import { RawClient, startTestBroker } from './raw-client.js';
import { storeOf } from '../../src/internal.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

let running: RunningBroker;
let client: RawClient;
let seq = 0;
const unique = (p: string) => `${p}_${process.pid}_${++seq}`;
const sp = (m: Any) => m.system_properties;
const body = (m: Any) => m.body.toString() as string;

let close: () => Promise<void>;

before(async () => {
  ({ running, client, close } = await startTestBroker());
});

after(() => close());

async function setup(
  opts: { fifoTopic?: boolean; orderly?: boolean; retryMaxTimes?: number; queues?: number } = {},
) {
  const topic = unique('T');
  const group = unique('G');
  await running.broker.topics.upsert(topic, {
    readQueueNums: opts.queues ?? 1,
    writeQueueNums: opts.queues ?? 1,
    ...(opts.fifoTopic !== false ? { attributes: { 'message.type': 'FIFO' } } : {}),
  });
  await running.broker.groups.upsert(group, {
    consumeMessageOrderly: opts.orderly !== false,
    fifoRetryIntervalMs: 150,
    ...(opts.retryMaxTimes !== undefined ? { retryMaxTimes: opts.retryMaxTimes } : {}),
  });
  return { topic, group };
}

async function sendGroups(topic: string, groups: string[], perGroup: number): Promise<void> {
  for (let i = 0; i < perGroup; i++) {
    await client.send(
      topic,
      groups.map((g) => ({ messageType: 2, messageGroup: g, body: Buffer.from(`${g}#${i}`) })),
    );
  }
}

test('per-group order with two consumers: each group in order, one message at a time', async () => {
  const { topic, group } = await setup({ queues: 2 });
  const groups = ['A', 'B', 'C', 'D'];
  await sendGroups(topic, groups, 12);
  const acked = new Set<string>();
  const order = new Map<string, number[]>();
  const consumer = async () => {
    const c = new RawClient(client.address);
    let idle = 0;
    while (idle < 3) {
      const { messages } = await c.receiveMessages(group, topic, { batch: 3, invisibleMs: 10_000 });
      if (messages.length === 0) {
        idle++;
        continue;
      }
      idle = 0;
      for (const m of messages) {
        const [g, n] = body(m).split('#') as [string, string];
        if (Number(n) > 0)
          assert.ok(
            acked.has(`${g}#${Number(n) - 1}`),
            `${g}#${n} delivered before ${g}#${Number(n) - 1} was acked`,
          );
        order.set(g, [...(order.get(g) ?? []), Number(n)]);
      }
      await new Promise((r) => setTimeout(r, 2)); // "process"
      await c.ack(
        group,
        topic,
        messages.map((m: Any) => sp(m).receipt_handle),
      );
      for (const m of messages) acked.add(body(m));
    }
    c.close();
  };
  await Promise.all([consumer(), consumer()]);
  for (const g of groups)
    assert.deepEqual(
      order.get(g),
      Array.from({ length: 12 }, (_, i) => i),
      `order of ${g}`,
    );
});

test('an ack landing while a receive reads the store cannot let a later message overtake held ones (issue 10)', async () => {
  const { topic, group } = await setup();
  await sendGroups(topic, ['A'], 2);
  const first = await client.receiveMessages(group, topic);
  assert.deepEqual(first.messages.map(body), ['A#0'], 'A#1 is held behind A#0');
  await client.send(topic, [{ messageType: 2, messageGroup: 'A', body: Buffer.from('A#2') }]);
  // The next receive reads A#2 from the store while A#0 is still in flight; hold it inside that read
  // and let the ack of A#0 arrive meanwhile, as a consumer acking concurrently would.
  const store = storeOf(running.broker);
  const read = store.read.bind(store);
  let entered!: () => void;
  const inRead = new Promise<void>((r) => (entered = r));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  store.read = async (...args) => {
    if (args[0] === topic) {
      entered();
      await gate;
    }
    return read(...args);
  };
  const order: string[] = [];
  try {
    const receiving = client.receiveMessages(group, topic);
    await inRead;
    const acking = client.ack(group, topic, [sp(first.messages[0]).receipt_handle]);
    await new Promise((r) => setTimeout(r, 100)); // the ack has reached the broker
    release();
    const [r] = await Promise.all([receiving, acking]);
    order.push('A#0', ...r.messages.map(body));
  } finally {
    store.read = read;
  }
  for (;;) {
    const r = await client.receiveMessages(group, topic);
    if (r.messages.length === 0) break;
    order.push(...r.messages.map(body));
    await client.ack(
      group,
      topic,
      r.messages.map((m: Any) => sp(m).receipt_handle),
    );
  }
  assert.deepEqual(order, ['A#0', 'A#1', 'A#2'], 'A#2 must not overtake the held A#1');
});

test('a failing head holds back only its own group; it comes back after the fixed interval', async () => {
  const { topic, group } = await setup();
  await sendGroups(topic, ['A', 'B'], 3);
  // Taken before the request: the broker cannot start the 400 ms before it gets it, however long
  // the answer then takes to arrive.
  const failedAt = Date.now();
  const first = await client.receiveMessages(group, topic, { invisibleMs: 400 });
  assert.deepEqual(first.messages.map(body).sort(), ['A#0', 'B#0'], 'one head per group, same queue');
  const a0 = first.messages.find((m: Any) => body(m) === 'A#0');
  await client.ack(group, topic, [sp(first.messages.find((m: Any) => body(m) === 'B#0')).receipt_handle]);
  // B keeps flowing while A#0 is in flight.
  for (const want of ['B#1', 'B#2']) {
    const r = await client.receiveMessages(group, topic, { invisibleMs: 400 });
    assert.deepEqual(r.messages.map(body), [want]);
    await client.ack(group, topic, [sp(r.messages[0]).receipt_handle]);
  }
  void a0;
  // A#0 times out (400 ms) and is delivered again, still ahead of A#1.
  const again = await client.receiveMessages(group, topic, { invisibleMs: 400, pollMs: 2000 });
  assert.deepEqual(again.messages.map(body), ['A#0']);
  assert.equal(sp(again.messages[0]).delivery_attempt, 2);
  assert.equal(again.messages[0].user_properties.ORIGIN_MESSAGE_ID, sp(a0).message_id);
  assert.ok(Date.now() - failedAt >= 390);
  await client.ack(group, topic, [sp(again.messages[0]).receipt_handle]);
  const rest = await client.receiveMessages(group, topic, { batch: 32, pollMs: 500 });
  assert.deepEqual(rest.messages.map(body), ['A#1']);
});

test('a push consumer nack waits the fixed interval; an exhausted head goes to the DLQ and its group moves on', async () => {
  const { topic, group } = await setup({ retryMaxTimes: 1 });
  await sendGroups(topic, ['A'], 3);
  const push = async () =>
    (
      await client.receive({
        group: { name: group },
        message_queue: { topic: { name: topic }, id: -1 },
        filter_expression: { type: 1, expression: '*' },
        batch_size: 32,
        auto_renew: true,
        long_polling_timeout: { seconds: 2 },
      })
    )
      .filter((f) => f.message)
      .map((f) => f.message);
  let [m] = await push();
  assert.equal(body(m), 'A#0');
  const nacked = Date.now(); // before the nack is sent (see above)
  await client.changeInvisible(group, topic, sp(m).receipt_handle, 0);
  [m] = await push();
  assert.equal(body(m), 'A#0');
  assert.ok(Date.now() - nacked >= 140, 'the fixed FIFO interval (150 ms) is the floor');
  assert.equal(sp(m).delivery_attempt, 2);
  await client.changeInvisible(group, topic, sp(m).receipt_handle, 0); // out of attempts → DLQ
  [m] = await push();
  assert.equal(body(m), 'A#1', 'the group continues with the next message');
  const dlq = await running.broker.deadLetters(group);
  assert.deepEqual(
    dlq.messages.map((x) => x.body.toString()),
    ['A#0'],
  );
});

test('an orderly group on a NORMAL topic is ordered per queue', async () => {
  const { topic, group } = await setup({ fifoTopic: false });
  await client.send(topic, [{ body: Buffer.from('n0') }, { body: Buffer.from('n1') }]);
  const r = await client.receiveMessages(group, topic, { batch: 32 });
  assert.deepEqual(r.messages.map(body), ['n0'], 'one at a time for the whole queue');
  await client.ack(group, topic, [sp(r.messages[0]).receipt_handle]);
  assert.deepEqual((await client.receiveMessages(group, topic)).messages.map(body), ['n1']);
});

test('a FIFO topic read by a non-orderly group is consumed concurrently', async () => {
  const { topic, group } = await setup({ orderly: false });
  await sendGroups(topic, ['A'], 3);
  const r = await client.receiveMessages(group, topic, { batch: 32 });
  assert.deepEqual(r.messages.map(body), ['A#0', 'A#1', 'A#2']);
});

test('FIFO state survives a restart: held messages stay behind their in-flight head, acked ones do not return', async () => {
  const d = tempDir();
  try {
    const opts = {
      dataDir: d.path,
      grpcPort: 0,
      httpPort: 0,
      remotingPort: 0,
      consume: { minInvisibleMs: 100 },
    };
    let b = await startBroker(opts);
    await b.broker.topics.upsert('FR', {
      readQueueNums: 1,
      writeQueueNums: 1,
      attributes: { 'message.type': 'FIFO' },
    });
    await b.broker.groups.upsert('FRG', { consumeMessageOrderly: true });
    let c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    for (const m of ['A#0', 'B#0', 'A#1', 'B#1', 'A#2']) {
      await c.send('FR', [{ messageType: 2, messageGroup: m[0], body: Buffer.from(m) }]);
    }
    const r = await c.receiveMessages('FRG', 'FR', { invisibleMs: 30_000 });
    assert.deepEqual(r.messages.map(body), ['A#0', 'B#0']);
    const handleA0 = sp(r.messages.find((m: Any) => body(m) === 'A#0')).receipt_handle;
    await c.ack('FRG', 'FR', [sp(r.messages.find((m: Any) => body(m) === 'B#0')).receipt_handle]);
    c.close();
    await b.close();

    b = await startBroker(opts);
    c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    const next = await c.receiveMessages('FRG', 'FR', { invisibleMs: 30_000 });
    assert.deepEqual(next.messages.map(body), ['B#1'], 'A is still held behind A#0; B#0 was acked');
    await c.ack('FRG', 'FR', [handleA0, sp(next.messages[0]).receipt_handle]);
    const rest: string[] = [];
    for (;;) {
      const x = await c.receiveMessages('FRG', 'FR', { invisibleMs: 30_000 });
      if (x.messages.length === 0) break;
      rest.push(...x.messages.map(body));
      await c.ack(
        'FRG',
        'FR',
        x.messages.map((m: Any) => sp(m).receipt_handle),
      );
    }
    assert.deepEqual(rest, ['A#1', 'A#2']);
    c.close();
    await b.close();
  } finally {
    d.cleanup();
  }
});
