/** Ack, changeInvisibleDuration and the DLQ verb: receipt handles, and changes serialized with receives. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyOf, openCore, type Core } from './harness.js';
import { isVelaError } from '../../../src/common/errors.js';
import { dlqTopicOf, retryTopicOf } from '../../../src/broker/consume/retry-records.js';

let core: Core;
before(async () => {
  core = await openCore();
});
after(() => core.close());

let n = 0;
async function setup(messages = 1) {
  const topic = `AT${++n}`;
  const group = `AG${n}`;
  await core.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
  await core.groups.upsert(group, { retryPolicy: { type: 'CUSTOMIZED', next: [7000] } });
  await core.send(Array.from({ length: messages }, (_, i) => ({ topic, body: Buffer.from(`m${i}`) })));
  return { topic, group };
}
const invalid = (err: unknown) => isVelaError(err, 'INVALID_RECEIPT_HANDLE');

test('an ack settles the delivery once; a second ack, a forged or an expired handle are refused', async () => {
  const { topic, group } = await setup(2);
  const [a, b] = await core.receive(group, topic, { invisibleMs: 1000 });
  assert.deepEqual(await core.acks.ackMany(group, topic, [a!.receiptHandle]), [null]);
  const [again, forged] = await core.acks.ackMany(group, topic, [a!.receiptHandle, `${b!.receiptHandle}x`]);
  assert.ok(invalid(again), 'acked already');
  assert.ok(invalid(forged), 'forged');
  core.clock.advance(1000);
  const [expired] = await core.acks.ackMany(group, topic, [b!.receiptHandle]);
  assert.ok(invalid(expired) && /expired/.test(expired!.message));
  assert.equal(core.progress.progress(group, topic)[0]!.inflight, 1, 'b waits for its expiry to be failed');
});

test('a handle is bound to its group and topic', async () => {
  const { topic, group } = await setup();
  const other = await setup();
  const [a] = await core.receive(group, topic);
  const [wrong] = await core.acks.ackMany(other.group, other.topic, [a!.receiptHandle]);
  assert.ok(invalid(wrong));
});

test('changeInvisibleDuration: a new deadline from now and a new handle; the old handle stops working', async () => {
  const { topic, group } = await setup();
  const [a] = await core.receive(group, topic, { invisibleMs: 1000 });
  core.clock.advance(800);
  const h2 = await core.acks.changeInvisibleDuration(group, topic, a!.receiptHandle, 1000);
  assert.notEqual(h2, a!.receiptHandle);
  assert.ok(invalid((await core.acks.ackMany(group, topic, [a!.receiptHandle]))[0]), 'superseded');
  await core.advance(500); // past the first deadline: nothing expires
  assert.equal(core.progress.progress(group, topic)[0]!.inflight, 1);
  assert.deepEqual(await core.receive(group, topic), []);
  await core.advance(500); // the new deadline
  const back = await core.receive(group, topic);
  assert.deepEqual(
    back.map((d) => [bodyOf(d), d.deliveryAttempt]),
    [['m0', 2]],
  );
  assert.ok(invalid((await core.acks.ackMany(group, topic, [h2]))[0]), 'expired with its delivery');
});

test("a push consumer's nack waits the group's retry interval, never less", async () => {
  const { topic, group } = await setup();
  const [a] = await core.receive(group, topic, { invisibleMs: 60_000, autoRenew: true });
  const h = await core.acks.changeInvisibleDuration(group, topic, a!.receiptHandle, 0);
  assert.equal(h, a!.receiptHandle);
  const [retry] = (await core.store.read(retryTopicOf(group, topic), 1, 0)).messages;
  assert.equal(retry?.deliveryTimestamp, core.clock.now() + 7000, 'due after the policy, not at once');
  core.clock.advance(6999);
  assert.deepEqual(await core.receive(group, topic), []);
  core.clock.advance(1);
  assert.deepEqual((await core.receive(group, topic)).map(bodyOf), ['m0']);
});

test('ForwardMessageToDeadLetterQueue moves the message to the DLQ and settles it', async () => {
  const { topic, group } = await setup();
  const [a] = await core.receive(group, topic);
  await core.acks.forwardToDeadLetter(group, topic, a!.receiptHandle);
  const dlq = await core.store.read(dlqTopicOf(group), 0, 0);
  assert.deepEqual(
    dlq.messages.map((m) => m.body.toString()),
    ['m0'],
  );
  assert.ok(core.topics.get(dlqTopicOf(group)), 'the DLQ topic exists');
  assert.equal(core.progress.progress(group, topic)[0]!.inflight, 0);
  await assert.rejects(core.acks.forwardToDeadLetter(group, topic, a!.receiptHandle), invalid);
});

test('an ack that arrives while a receive is reading waits for it: a receive decides on one state', async () => {
  const { topic, group } = await setup(1);
  const [a] = await core.receive(group, topic);
  await core.send([{ topic, body: Buffer.from('m1') }]);
  // Hold the next receive inside its store read.
  const read = core.store.read.bind(core.store);
  let entered!: () => void;
  const inRead = new Promise<void>((r) => (entered = r));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  core.store.read = async (...args) => {
    entered();
    await gate;
    return read(...args);
  };
  const events: string[] = [];
  try {
    const receiving = core.receive(group, topic).then((d) => events.push(`receive ${d.map(bodyOf)}`));
    await inRead;
    const acking = core.acks.ackMany(group, topic, [a!.receiptHandle]).then(() => events.push('ack'));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(events, [], 'the ack has not overtaken the receive');
    release();
    await Promise.all([receiving, acking]);
  } finally {
    core.store.read = read;
  }
  assert.deepEqual(events, ['receive m1', 'ack']);
});

test('acks of one group and topic arriving together share one journal record; each caller gets its own results', async () => {
  const { topic, group } = await setup(4);
  const ds = await core.receive(group, topic, { invisibleMs: 1000 });
  assert.equal(ds.length, 4);
  const journal = core.ctx.journal;
  const append = journal.append.bind(journal);
  let records = 0;
  journal.append = (...r) => {
    records += r.length;
    return append(...r);
  };
  try {
    // One AckMessage per message, as the official clients send them, plus one with a forged handle.
    const answers = await Promise.all([
      core.acks.ackMany(group, topic, [ds[0]!.receiptHandle]),
      core.acks.ackMany(group, topic, [ds[1]!.receiptHandle, `${ds[2]!.receiptHandle}x`]),
      core.acks.ackMany(group, topic, [ds[2]!.receiptHandle]),
      core.acks.ackMany(group, topic, [ds[3]!.receiptHandle]),
    ]);
    assert.deepEqual(answers[0], [null]);
    assert.equal(answers[1]!.length, 2);
    assert.equal(answers[1]![0], null);
    assert.ok(invalid(answers[1]![1]), 'forged');
    assert.deepEqual(answers[2], [null]);
    assert.deepEqual(answers[3], [null]);
  } finally {
    journal.append = append;
  }
  assert.equal(records, 1, 'one journal record for the four calls');
  assert.equal(core.progress.progress(group, topic)[0]!.inflight, 0);
  // Acked: a second ack of any of them is refused.
  assert.ok(invalid((await core.acks.ackMany(group, topic, [ds[3]!.receiptHandle]))[0]));
});
