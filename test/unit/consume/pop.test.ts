/** POP: which messages a receive hands out, in which order, and what it remembers. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyOf, openCore, type Core } from './harness.js';
import { retryRecord } from '../../../src/broker/consume/retry-records.js';

let core: Core;
before(async () => {
  core = await openCore();
});
after(() => core.close());

let n = 0;
async function setup(opts: { queues?: number; orderly?: boolean; type?: string } = {}) {
  const topic = `T${++n}`;
  const group = `G${n}`;
  await core.topics.upsert(topic, {
    readQueueNums: opts.queues ?? 1,
    writeQueueNums: opts.queues ?? 1,
    ...(opts.type ? { attributes: { 'message.type': opts.type } } : {}),
  });
  await core.groups.upsert(group, { consumeMessageOrderly: opts.orderly ?? false, fifoRetryIntervalMs: 100 });
  return { topic, group };
}

test('hands out every queue up to the batch, and continues where it stopped', async () => {
  const { topic, group } = await setup({ queues: 2 });
  for (const q of [0, 1])
    await core.send([0, 1, 2].map((i) => ({ topic, queueId: q, body: Buffer.from(`${q}-${i}`) })));
  const first = await core.receive(group, topic, { batch: 4 });
  assert.equal(first.length, 4);
  const second = await core.receive(group, topic, { batch: 4 });
  assert.deepEqual(
    [...first, ...second].map(bodyOf).sort(),
    ['0-0', '0-1', '0-2', '1-0', '1-1', '1-2'],
    'each message once',
  );
  assert.deepEqual(await core.receive(group, topic), []);
  const rows = core.progress.progress(group, topic);
  assert.deepEqual(
    rows.map((r) => [r.consumerOffset, r.inflight]),
    [
      [3, 3],
      [3, 3],
    ],
  );
  for (const d of [...first, ...second]) assert.equal(d.deliveryAttempt, 1);
});

test('an orderly group: one message per message group at a time, the others held in order', async () => {
  const { topic, group } = await setup({ orderly: true, type: 'FIFO' });
  await core.send(
    ['A0', 'B0', 'A1', 'A2', 'B1'].map((b) => ({ topic, messageGroup: b[0], body: Buffer.from(b) })),
  );
  const first = await core.receive(group, topic);
  assert.deepEqual(first.map(bodyOf), ['A0', 'B0'], 'the head of each group');
  assert.deepEqual(await core.receive(group, topic), [], 'nothing more while the heads are in flight');
  assert.equal(core.progress.progress(group, topic)[0]!.lag, 5, 'held messages count as lag');
  await core.acks.ackMany(group, topic, [first[0]!.receiptHandle]);
  assert.deepEqual((await core.receive(group, topic)).map(bodyOf), ['A1'], 'A moves on; B is still blocked');
  await core.acks.ackMany(group, topic, [first[1]!.receiptHandle]);
  assert.deepEqual((await core.receive(group, topic)).map(bodyOf), ['B1']);
});

test('due retries come before new messages; one not yet due waits for its time', async () => {
  const { topic, group } = await setup();
  await core.send([{ topic, body: Buffer.from('new') }]);
  const [orig] = await core.receive(group, topic);
  assert.ok(orig);
  const now = core.clock.now();
  const m = (await core.store.read(topic, 0, 0)).messages[0]!;
  await core.store.append([
    retryRecord(m, group, topic, 1, now, 0, '[]'),
    retryRecord(m, group, topic, 2, now + 5000, 5000, '[]'),
  ]);
  await core.send([{ topic, body: Buffer.from('newer') }]);
  const got = await core.receive(group, topic);
  assert.deepEqual(
    got.map((d) => [bodyOf(d), d.deliveryAttempt]),
    [
      ['new', 2],
      ['newer', 1],
    ],
    'the due retry (attempt 2) first, then the new message; the other retry is not due',
  );
  assert.notEqual(got[0]!.message.messageId, orig.message.messageId, 'a retry has its own message id');
  assert.equal(got[0]!.message.topic, topic, 'and shows its original topic');
  core.clock.advance(5000);
  const later = await core.receive(group, topic);
  assert.deepEqual(
    later.map((d) => [bodyOf(d), d.deliveryAttempt]),
    [['new', 3]],
  );
});

test('a tag filter skips what it does not match, for good', async () => {
  const { topic, group } = await setup();
  await core.send(['A', 'B', 'A'].map((tag, i) => ({ topic, tag, body: Buffer.from(`${tag}${i}`) })));
  const { parseFilter } = await import('../../../src/broker/filter.js');
  const got = await core.receive(group, topic, { filter: parseFilter('TAG', 'A') });
  assert.deepEqual(got.map(bodyOf), ['A0', 'A2']);
  assert.deepEqual(await core.receive(group, topic), [], 'B1 was passed over for this group');
});
