/**
 * First contact behaves like RocketMQ (issue 10 §3), with the broker's defaults: a consumer group is
 * created on first use; the seeds' short invisible durations are accepted and timed exactly; a new
 * group starts at the earliest retained message.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { Code } from '../../src/common/codes.js';
import { storeOf } from '../../src/internal.js';
import { sleep, tempDir } from '../helpers.js';
import { RawClient } from './raw-client.js';
import { LOADED_SLACK_MS, startTestBroker } from '../support/harness.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

let running: RunningBroker;
let client: RawClient;
let dir: ReturnType<typeof tempDir>;
let seq = 0;
const unique = (p: string) => `${p}_${process.pid}_${++seq}`;
const body = (m: Any) => m.body.toString() as string;

before(async () => {
  dir = tempDir('vela-first-contact-');
  // Nothing but the ports and a small segment size (for the retention case) changed from the defaults.
  running = await startBroker({
    dataDir: dir.path,
    grpcPort: 0,
    httpPort: 0,
    remotingPort: 0,
    store: { segmentSize: 4096 },
  });
  client = new RawClient(`127.0.0.1:${running.grpcPort}`);
});
after(async () => {
  client.close();
  await running.close();
  dir.cleanup();
});

test('a consumer group nobody created is created on first use, with the default settings', async () => {
  const topic = unique('FcT');
  await running.broker.topics.upsert(topic, {});
  await client.send(topic, [{ body: Buffer.from('hello') }]);
  const r = await client.receiveMessages('YourConsumerGroup', topic, { invisibleMs: 30_000 });
  assert.equal(r.status.code, Code.OK);
  assert.deepEqual(r.messages.map(body), ['hello']);
  const g = running.broker.groups.get('YourConsumerGroup');
  assert.equal(g?.retryMaxTimes, 16);
  assert.equal(g?.consumeMessageOrderly, false);
});

test('autoCreateGroups: false still requires groups to be created first', async () => {
  const strict = await startTestBroker({ autoCreateGroups: false });
  const c = new RawClient(strict.endpoints);
  try {
    await strict.running.broker.topics.upsert('StrictT', {});
    const r = await c.receiveMessages('NotCreated', 'StrictT');
    assert.equal(r.status.code, Code.CONSUMER_GROUP_NOT_FOUND);
    assert.equal(strict.running.broker.groups.get('NotCreated'), undefined);
  } finally {
    c.close();
    await strict.close();
  }
});

test("the seeds' 50 ms invisible duration is accepted and the message is visible again after it", async () => {
  const topic = unique('FcInv');
  const group = unique('FcInvG');
  await running.broker.topics.upsert(topic, {});
  await client.send(topic, [{ body: Buffer.from('short') }]);
  const sentAt = Date.now();
  const first = await client.receiveMessages(group, topic, { invisibleMs: 50 });
  const gotAt = Date.now();
  assert.deepEqual(first.messages.map(body), ['short']);
  const again = await client.receiveMessages(group, topic, { invisibleMs: 50, pollMs: 2000 });
  const backAt = Date.now();
  assert.deepEqual(again.messages.map(body), ['short']);
  assert.equal(again.messages[0].system_properties.delivery_attempt, 2);
  assert.ok(backAt - sentAt >= 50, `not before its deadline (${backAt - sentAt} ms)`);
  assert.ok(
    backAt - gotAt <= 50 + LOADED_SLACK_MS,
    `soon after its deadline (${backAt - gotAt} ms after the 50 ms one was received)`,
  );
  // Settled, so that the last receive below finds nothing however long the checks between take.
  await client.ack(group, topic, [again.messages[0].system_properties.receipt_handle]);
  // The range: under the floor refused, 12 h the most.
  for (const ms of [10, 12 * 3600_000 + 1]) {
    const r = await client.receiveMessages(group, topic, { invisibleMs: ms });
    assert.equal(r.status.code, Code.ILLEGAL_INVISIBLE_TIME, `${ms} ms`);
  }
  assert.equal(
    (await client.receiveMessages(group, topic, { invisibleMs: 12 * 3600_000 })).status.code,
    Code.MESSAGE_NOT_FOUND,
  );
});

test('a new group starts at the earliest retained message', async () => {
  // Segments of 4 KiB that retention may remove as soon as they are 1 ms old (run by hand here).
  const b = await startTestBroker({
    store: { segmentSize: 4096, retentionMs: 1, retentionCheckIntervalMs: 3_600_000 },
  });
  const c = new RawClient(b.endpoints);
  try {
    await b.running.broker.topics.upsert('Early', { readQueueNums: 1, writeQueueNums: 1 });
    for (let i = 0; i < 40; i++) await c.send('Early', [{ body: Buffer.alloc(400, 97), messageId: `E${i}` }]);
    // A group that never consumed the topic: everything, from the first message.
    await b.running.broker.groups.upsert('Before', {});
    const all = await c.receiveMessages('Before', 'Early', { batch: 32 });
    assert.equal(all.messages[0].system_properties.message_id, 'E0');
    await sleep(5);
    const store = storeOf(b.running.broker);
    const report = await store.runRetention();
    assert.ok(report.deletedSegments.length > 0, 'retention removed the oldest segments');
    const { minOffset, maxOffset } = store.queueState('Early', 0);
    assert.ok(minOffset > 0 && minOffset < maxOffset);
    const fresh = await c.receiveMessages('After', 'Early', { batch: 32 });
    assert.equal(
      fresh.messages[0].system_properties.message_id,
      `E${minOffset}`,
      'a new group starts at the earliest message still stored',
    );
    assert.equal(fresh.messages[0].system_properties.queue_offset, minOffset);
  } finally {
    c.close();
    await b.close();
  }
});
