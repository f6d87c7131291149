/**
 * FIFO after retention: when retention deletes messages an orderly group has not read (or held), the
 * group's low-water mark moves up to the queue's first stored offset, so it does not stop reading
 * FIFO_SPAN offsets later; held messages that retention removed are given up, not waited for.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyOf, openCore, type Core } from './harness.js';

let core: Core;
let used = 10;
before(async () => {
  core = await openCore({
    store: { segmentSize: 4096, diskUsage: async () => ({ totalBytes: 100, usedBytes: used }) },
  });
});
after(() => core.close());

const fifoLow = (group: string, topic: string) => core.ctx.states.get(group, topic)!.fifo.get(0)!.low;

async function retain(topic: string): Promise<number> {
  used = 80; // disk pressure: the oldest segments go (up to 10 a run)
  for (let i = 0; i < 10 && core.store.queueState(topic, 0).minOffset < 2; i++)
    await core.store.runRetention();
  used = 10;
  const min = core.store.queueState(topic, 0).minOffset;
  assert.ok(min > 0, 'retention removed the head of the queue');
  return min;
}

let n = 0;
async function setup() {
  const topic = `FR${++n}`;
  const group = `FRG${n}`;
  await core.topics.upsert(topic, {
    readQueueNums: 1,
    writeQueueNums: 1,
    attributes: { 'message.type': 'FIFO' },
  });
  await core.groups.upsert(group, { consumeMessageOrderly: true, fifoRetryIntervalMs: 100 });
  return { topic, group };
}

test('messages the group never read are removed: its low-water mark follows the queue', async () => {
  const { topic, group } = await setup();
  assert.deepEqual(await core.receive(group, topic), [], 'the group starts following the empty queue');
  await core.send(
    Array.from({ length: 20 }, (_, i) => ({ topic, messageGroup: `g${i}`, body: Buffer.alloc(900, 65) })),
  );
  const min = await retain(topic);
  const got = await core.receive(group, topic, { batch: 32 });
  assert.ok(got.length > 0);
  assert.ok(fifoLow(group, topic) >= min, `low ${fifoLow(group, topic)} stays below the first offset ${min}`);
});

test('a held message removed by retention is given up, not waited for', async () => {
  const { topic, group } = await setup();
  // A0 goes out and stays in flight; A1 is held behind it; the X messages fill segments.
  await core.send([{ topic, messageGroup: 'A', body: Buffer.from('A0') }]);
  await core.send([{ topic, messageGroup: 'A', body: Buffer.from('A1') }]);
  await core.send(
    Array.from({ length: 20 }, (_, i) => ({ topic, messageGroup: `x${i}`, body: Buffer.alloc(900, 66) })),
  );
  const first = await core.receive(group, topic, { batch: 32, invisibleMs: 3600_000 });
  const a0 = first.find((d) => bodyOf(d) === 'A0')!;
  assert.ok(a0 && !first.some((d) => bodyOf(d) === 'A1'), 'A1 is held behind A0');
  const rest = first.filter((d) => d !== a0).map((d) => d.receiptHandle);
  assert.ok((await core.acks.ackMany(group, topic, rest)).every((e) => e === null));
  const min = await retain(topic);
  assert.ok(min > 1, 'A0 and A1 are gone');
  await core.acks.ackMany(group, topic, [a0.receiptHandle]);
  await core.send([{ topic, messageGroup: 'A', body: Buffer.from('A2') }]);
  const next = await core.receive(group, topic);
  assert.deepEqual(next.map(bodyOf), ['A2'], 'A2 follows: A1, removed, is not waited for');
  assert.ok(fifoLow(group, topic) >= min);
});
