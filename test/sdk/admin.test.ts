/**
 * SDK Admin over the broker's HTTP API: topics and groups (create, get, list, delete), topic status,
 * consumer progress and connections, message lookup, and the dead-letter queue (a push consumer that
 * always fails, then a resend).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { VelaClientError } from '../../src/index.js';
import { Admin, ConsumeResult, Producer, PushConsumer } from '../../src/index.js';
import { startTestBroker, unique, waitFor, type TestBroker, use, closeAll } from './support.js';

let b: TestBroker;
let admin: Admin;
before(async () => {
  b = await startTestBroker();
  admin = new Admin({ url: b.adminUrl });
});
after(async () => {
  await closeAll();
  await b.close();
});

test('topics and groups: create, get, list, status, progress, connections, lookup, delete', async () => {
  const topic = unique('AdmT');
  const group = unique('AdmG');
  const created = await admin.createTopic(topic, {
    messageType: 'FIFO',
    readQueueNums: 2,
    writeQueueNums: 2,
  });
  assert.equal(created.messageType, 'FIFO');
  assert.equal((await admin.getTopic(topic)).readQueueNums, 2);
  assert.ok((await admin.listTopics()).some((t) => t.topic === topic));
  const g = await admin.createGroup(group, {
    retryMaxTimes: 3,
    consumeMessageOrderly: true,
    groupRetryPolicy: { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [100, 200] } },
  });
  assert.equal(g.retryMaxTimes, 3);
  assert.equal(g.consumeMessageOrderly, true);
  assert.deepEqual((await admin.getGroup(group)).groupRetryPolicy, {
    type: 'CUSTOMIZED',
    customizedRetryPolicy: { next: [100, 200] },
  });
  assert.ok((await admin.listGroups()).some((x) => x.group === group));

  const producer = use(new Producer({ endpoints: b.endpoints }));
  const receipts = [];
  for (let i = 0; i < 6; i++) {
    receipts.push(
      await producer.send({ topic, body: `a${i}`, keys: `key-${topic}`, messageGroup: `g${i % 2}` }),
    );
  }
  const status = await admin.topicStatus(topic);
  assert.equal(
    status.reduce((a, q) => a + q.maxOffset, 0),
    6,
  );
  let consumed = 0;
  const consumer = use(
    new PushConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      listener: () => {
        consumed++;
        return ConsumeResult.SUCCESS;
      },
    }),
  );
  await consumer.start();
  const conns = await admin.consumerConnection(group);
  assert.ok(
    conns.some(
      (c) => c.clientId === consumer.clientId && c.clientType === 'PUSH_CONSUMER' && c.language === 'NODE_JS',
    ),
  );
  await waitFor(() => consumed === 6, 5000, 'consumed');
  await waitFor(async () => (await admin.consumerProgress(group, topic)).totalLag === 0, 3000, 'lag 0');
  const progress = await admin.consumerProgress(group, topic);
  assert.equal(progress.queues.length, 2);
  assert.equal(progress.inflight, 0);
  await consumer.close();

  // Back to the start: the group sees every message again.
  const reset = await admin.resetOffset(group, topic, { timestamp: 0 });
  assert.equal(reset.queues.length, 2);
  assert.ok(reset.queues.every((q) => q.newOffset === 0));
  assert.equal((await admin.consumerProgress(group, topic)).totalLag, 6);
  await assert.rejects(
    admin.resetOffset(group, unique('NoSuchTopic'), { offset: 0 }),
    (e: VelaClientError) => e.codeName === 'TOPIC_NOT_FOUND',
  );

  const byId = await admin.queryMessageById(receipts[0]!.messageId, topic);
  assert.equal(Buffer.from(byId[0]!.body, 'base64').toString(), 'a0');
  const byKey = await admin.queryMessageByKey(`key-${topic}`, { topic });
  // By distinct id: the broker's key index has been seen answering a message twice.
  assert.deepEqual(new Set(byKey.map((m) => m.messageId)), new Set(receipts.map((r) => r.messageId)));
  await producer.close();

  await admin.deleteGroup(group);
  await admin.deleteTopic(topic);
  await assert.rejects(
    admin.getTopic(topic),
    (e: VelaClientError) => e.codeName === 'TOPIC_NOT_FOUND' && !e.retriable,
  );
  await assert.rejects(
    admin.getGroup(group),
    (e: VelaClientError) => e.codeName === 'CONSUMER_GROUP_NOT_FOUND',
  );
});

test("broker info reports the broker process's resident and heap memory", async () => {
  const info = (await admin.brokerInfo()).process as { rssBytes: number; heapUsedBytes: number };
  // The test broker runs in this process: its figures are this process's, give or take what moved.
  assert.ok(info.rssBytes > 16 * 1024 * 1024 && info.rssBytes < 8 * 1024 ** 3, `rss ${info.rssBytes}`);
  assert.ok(
    info.heapUsedBytes > 1024 * 1024 && info.heapUsedBytes < info.rssBytes,
    `heap ${info.heapUsedBytes}`,
  );
});

test('dead letters: a message out of attempts lands in the DLQ and can be resent', async () => {
  const topic = unique('DlqT');
  const group = unique('DlqG');
  await admin.createTopic(topic);
  await admin.createGroup(group, {
    retryMaxTimes: 1,
    groupRetryPolicy: { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [100] } },
  });
  const producer = use(new Producer({ endpoints: b.endpoints }));
  const r = await producer.send({ topic, body: 'poison' });
  const attempts: number[] = [];
  let accept = false;
  const consumer = use(
    new PushConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      listener: (m) => {
        attempts.push(m.deliveryAttempt);
        return accept ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE;
      },
    }),
  );
  await consumer.start();
  await waitFor(async () => (await admin.deadLetters(group)).messages.length === 1, 5000, 'dead letter');
  assert.deepEqual(attempts, [1, 2]);
  const page = await admin.deadLetters(group);
  assert.equal(page.messages[0]!.originMessageId, r.messageId);
  assert.equal(page.dlqTopic, `%DLQ%${group}`);
  accept = true;
  assert.equal(await admin.resendDeadLetters(group, r.messageId), 1);
  await waitFor(() => attempts.length === 3, 5000, 'resent message consumed');
  await consumer.close();
  await producer.close();
});
