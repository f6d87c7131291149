/** Revive: expiries become retries, FIFO waits or dead letters, at the right time. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyOf, openCore, type Core } from './harness.js';
import { VelaError } from '../../../src/common/errors.js';
import { RETRY_QUEUES, dlqTopicOf, retryTopicOf } from '../../../src/broker/consume/retry-records.js';

let core: Core;
before(async () => {
  core = await openCore();
});
after(() => core.close());

let n = 0;
async function setup(opts: { orderly?: boolean; retryMaxTimes?: number } = {}) {
  const topic = `RT${++n}`;
  const group = `RG${n}`;
  await core.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
  await core.groups.upsert(group, {
    consumeMessageOrderly: opts.orderly ?? false,
    retryMaxTimes: opts.retryMaxTimes ?? 16,
    fifoRetryIntervalMs: 300,
  });
  return { topic, group };
}

test("a simple consumer's expired message is due again at once, as a new message with its origin", async () => {
  const { topic, group } = await setup();
  await core.send([{ topic, messageId: 'ORIG-1', body: Buffer.from('x') }]);
  await core.receive(group, topic, { invisibleMs: 500 });
  await core.advance(499);
  assert.deepEqual(await core.receive(group, topic), [], 'not before its deadline');
  await core.advance(1);
  const [d] = await core.receive(group, topic);
  assert.equal(d?.deliveryAttempt, 2);
  assert.notEqual(d?.message.messageId, 'ORIG-1');
  assert.equal(d?.message.properties.ORIGIN_MESSAGE_ID, 'ORIG-1');
  assert.equal(core.progress.retryBacklog(group, topic), 0, 'the retry was handed out');
});

test('out of attempts: the message goes to the DLQ, once, with its original id', async () => {
  const { topic, group } = await setup({ retryMaxTimes: 1 });
  await core.send([{ topic, messageId: 'ORIG-2', body: Buffer.from('y') }]);
  for (let attempt = 1; attempt <= 2; attempt++) {
    const [d] = await core.receive(group, topic, { invisibleMs: 100 });
    assert.equal(d?.deliveryAttempt, attempt);
    await core.advance(100);
  }
  assert.deepEqual(await core.receive(group, topic), []);
  const dlq = (await core.store.read(dlqTopicOf(group), 0, 0)).messages;
  assert.deepEqual(
    dlq.map((m) => [m.messageId, m.body.toString()]),
    [['ORIG-2', 'y']],
  );
  assert.equal(core.ctx.deadLettered.get(group), 1);
});

test('many expiries at once are failed together: every one comes back, none twice', async () => {
  const { topic, group } = await setup();
  await core.send(Array.from({ length: 50 }, (_, i) => ({ topic, body: Buffer.from(`m${i}`) })));
  const first = [
    ...(await core.receive(group, topic, { invisibleMs: 100 })),
    ...(await core.receive(group, topic, { invisibleMs: 100 })),
  ];
  assert.equal(first.length, 50);
  await core.advance(100);
  assert.equal((await core.store.queueState(retryTopicOf(group, topic), 0)).maxOffset, 50);
  const again = [...(await core.receive(group, topic)), ...(await core.receive(group, topic))];
  assert.deepEqual(again.map(bodyOf).sort(), first.map(bodyOf).sort());
});

test('FIFO: a failed head waits the fixed interval in place, then goes before the rest of its group', async () => {
  const { topic, group } = await setup({ orderly: true });
  await core.send(['A0', 'A1', 'B0'].map((b) => ({ topic, messageGroup: b[0], body: Buffer.from(b) })));
  const first = await core.receive(group, topic, { invisibleMs: 200, autoRenew: true });
  assert.deepEqual(first.map(bodyOf), ['A0', 'B0']);
  await core.acks.changeInvisibleDuration(group, topic, first[0]!.receiptHandle, 0); // nack A0
  await core.acks.ackMany(group, topic, [first[1]!.receiptHandle]);
  assert.deepEqual(await core.receive(group, topic), [], 'A1 stays behind A0, which waits');
  await core.advance(299);
  assert.deepEqual(await core.receive(group, topic), []);
  await core.advance(1);
  const [again] = await core.receive(group, topic);
  assert.equal(bodyOf(again!), 'A0');
  assert.equal(again!.deliveryAttempt, 2);
  assert.equal(core.progress.progress(group, topic)[0]!.ready, 0);
  await core.acks.ackMany(group, topic, [again!.receiptHandle]);
  assert.deepEqual((await core.receive(group, topic)).map(bodyOf), ['A1']);
});

test('an expiry whose state was forgotten meanwhile (group or topic deleted) writes no retry', async () => {
  const { topic, group } = await setup();
  await core.send([{ topic, messageId: 'GONE-1', body: Buffer.from('x') }]);
  await core.receive(group, topic, { invisibleMs: 500 });
  core.clock.advance(500);
  core.ctx.heap.fireDue(); // the expiry is gathered; failing it waits for the next turn of the loop
  core.ctx.states.delete(group, topic); // what deleting the group does, serialized, meanwhile
  await new Promise((r) => setImmediate(r));
  await core.ctx.drain();
  const rt = retryTopicOf(group, topic);
  let stored = 0;
  for (let q = 0; q < RETRY_QUEUES; q++) stored += core.store.queueState(rt, q).maxOffset;
  assert.equal(stored, 0, 'a retry written now would outlive the purge of the retry topic');
});

test('an expiry that cannot be stored (a full disk) is tried again a second later, not left in flight for good', async () => {
  const { topic, group } = await setup();
  await core.send([{ topic, messageId: 'FULL-1', body: Buffer.from('full') }]);
  await core.receive(group, topic, { invisibleMs: 500 });
  const append = core.store.append.bind(core.store);
  let refused = 0;
  core.store.append = (messages) => {
    if (messages.some((m) => m.topic === retryTopicOf(group, topic))) {
      refused++;
      return Promise.reject(new VelaError('TOO_MANY_REQUESTS', 'the disk is full'));
    }
    return append(messages);
  };
  try {
    await core.advance(500);
    assert.equal(refused, 1, 'the retry could not be stored');
    assert.deepEqual(await core.receive(group, topic), []);
  } finally {
    core.store.append = append;
  }
  await core.advance(999);
  assert.deepEqual(await core.receive(group, topic), [], 'not tried again at once');
  await core.advance(1);
  const [d] = await core.receive(group, topic);
  assert.equal(bodyOf(d!), 'full', 'the retry is stored once there is room again');
  assert.equal(d!.deliveryAttempt, 2);
});
