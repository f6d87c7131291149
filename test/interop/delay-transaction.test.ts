/**
 * Interop: delay messages, recall and transactions with the official Node client
 * (rocketmq-client-nodejs 1.0.8): `deliveryTimestamp`, `recallMessage`, `beginTransaction` with
 * commit and rollback, and a `checker` answering the broker's orphaned-transaction check.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer, type MessageView } from 'rocketmq-client-nodejs';
import type { SimpleConsumer } from 'rocketmq-client-nodejs';
import { startTestBroker } from '../support/harness.js';
import { clientLogger, createGroup, createTopic, simpleConsumer, type InteropBroker } from './support.js';

const COMMIT = 1; // TransactionResolution.COMMIT
const ROLLBACK = 2;

/** Receive (and ack) what arrives within `ms`. */
async function drain(c: SimpleConsumer, ms: number): Promise<MessageView[]> {
  const out: MessageView[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    for (const m of await c.receive(16, 10_000)) {
      out.push(m);
      await c.ack(m);
    }
  }
  return out;
}

describe('interop: delay, recall and transactions', () => {
  let b: InteropBroker;
  const now = () => b.running.broker.clock.now();
  before(async () => {
    const t = await startTestBroker({
      consume: { minInvisibleMs: 1000 },
      transaction: { checkTimeoutMs: 1500, checkIntervalMs: 500 },
    });
    b = { running: t.running, endpoints: t.endpoints, close: t.close };
  });
  after(async () => {
    await b.close();
  });

  test('deliveryTimestamp: held until due, then delivered; recallMessage cancels one before its time', async () => {
    const topic = await createTopic(b, 'IDelay', 'DELAY');
    const group = await createGroup(b, 'GIDelay');
    const producer = new Producer({ endpoints: b.endpoints, namespace: '', topic, logger: clientLogger() });
    await producer.startup();
    const consumer = await simpleConsumer(b, group, topic, { awaitDuration: 500 });
    try {
      const due = now() + 1500;
      const kept = await producer.send({
        topic,
        body: Buffer.from('kept'),
        deliveryTimestamp: new Date(due),
      });
      const gone = await producer.send({
        topic,
        body: Buffer.from('gone'),
        deliveryTimestamp: new Date(due),
      });
      assert.ok(kept.recallHandle, 'a recall handle in the receipt');
      const recalled = await producer.recallMessage(topic, gone.recallHandle);
      assert.equal(recalled.messageId, gone.messageId);
      assert.equal((await drain(consumer, 800)).length, 0, 'nothing before its time');
      const got = await drain(consumer, Math.max(0, due - now()) + 1500);
      assert.deepEqual(
        got.map((m) => m.body.toString()),
        ['kept'],
      );
      const [m] = got;
      assert.equal(m!.messageId, kept.messageId);
      assert.equal(m!.deliveryTimestamp?.getTime(), due);
      assert.ok(now() >= due);
      await assert.rejects(producer.recallMessage(topic, kept.recallHandle), /already delivered/);
    } finally {
      await consumer.shutdown();
      await producer.shutdown();
    }
  });

  test('transactions: commit delivers, rollback discards, a checker resolves an orphan', async () => {
    const topic = await createTopic(b, 'ITx', 'TRANSACTION');
    const group = await createGroup(b, 'GITx');
    const checked: string[] = [];
    const producer = new Producer({
      endpoints: b.endpoints,
      namespace: '',
      topic,
      logger: clientLogger(),
      checker: {
        async check(m: MessageView) {
          checked.push(m.body.toString());
          return COMMIT;
        },
      },
    });
    await producer.startup();
    const consumer = await simpleConsumer(b, group, topic, { awaitDuration: 500 });
    try {
      const commit = producer.beginTransaction();
      const c = await producer.send({ topic, body: Buffer.from('committed') }, commit);
      assert.match(c.transactionId, /^[0-9A-F]{32}$/);
      const rollback = producer.beginTransaction();
      await producer.send({ topic, body: Buffer.from('rolled back') }, rollback);
      assert.equal((await drain(consumer, 300)).length, 0, 'half messages are invisible');
      await commit.commit();
      await rollback.rollback();
      // Left open: the broker asks this producer's checker, which answers COMMIT.
      const orphan = producer.beginTransaction();
      const o = await producer.send({ topic, body: Buffer.from('orphan') }, orphan);
      const got = await drain(consumer, 4000);
      assert.deepEqual(got.map((m) => m.body.toString()).sort(), ['committed', 'orphan']);
      assert.deepEqual(checked, ['orphan']);
      assert.ok(got.some((m) => m.messageId === o.messageId));
      assert.equal(b.running.broker.transactions.openCount, 0);
    } finally {
      await consumer.shutdown();
      await producer.shutdown();
    }
  });

  test('a checker answering ROLLBACK discards the orphan', async () => {
    const topic = await createTopic(b, 'ITxR', 'TRANSACTION');
    const group = await createGroup(b, 'GITxR');
    const producer = new Producer({
      endpoints: b.endpoints,
      namespace: '',
      topic,
      logger: clientLogger(),
      checker: { check: async () => ROLLBACK },
    });
    await producer.startup();
    const consumer = await simpleConsumer(b, group, topic, { awaitDuration: 500 });
    try {
      await producer.send({ topic, body: Buffer.from('orphan') }, producer.beginTransaction());
      const deadline = Date.now() + 5000;
      while (b.running.broker.transactions.openCount > 0 && Date.now() < deadline) await drain(consumer, 200);
      assert.equal(b.running.broker.transactions.openCount, 0, 'resolved by the checker');
      assert.equal((await drain(consumer, 500)).length, 0);
    } finally {
      await consumer.shutdown();
      await producer.shutdown();
    }
  });
});
