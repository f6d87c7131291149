/** Interop: the official Node client's Producer (rocketmq-client-nodejs 1.0.8) against Vela. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer } from 'rocketmq-client-nodejs';
import {
  clientLogger,
  createGroup,
  createTopic,
  receiveN,
  simpleConsumer,
  startInteropBroker,
  type InteropBroker,
} from './support.js';

describe('interop: Producer', () => {
  let b: InteropBroker;
  before(async () => {
    b = await startInteropBroker();
  });
  after(async () => {
    await b.close();
  });

  test('startup with topics waits for Settings, sends, and shuts down', async () => {
    const topic = await createTopic(b, 'ProdLife');
    const logger = clientLogger();
    const producer = new Producer({ endpoints: b.endpoints, namespace: '', topic, logger });
    // With a topic configured, startup() returns only after the Settings reply (it would hang
    // forever without one), so bound it.
    await withTimeout(producer.startup(), 5000, 'producer startup');
    assert.equal(producer.isRunning(), true);
    const session = b.running.broker.sessions.get(producer.clientId);
    assert.equal(session?.clientType, 'PRODUCER');
    assert.equal(session?.language, 'NODE_JS');
    assert.deepEqual(session?.topics, [topic]);
    // The reply must have carried max_body_size (else every send fails client-side with max 0).
    const receipt = await producer.send({ topic, body: Buffer.from('life') });
    assert.match(receipt.messageId, /^[0-9A-F]{34}$/);
    await withTimeout(producer.shutdown(), 5000, 'producer shutdown');
    assert.equal(producer.isRunning(), false);
    assert.deepEqual(logger.errors, [], 'the client logged no error');
    // NotifyClientTermination ended the producer's session on the broker.
    assert.equal(b.running.broker.sessions.get(producer.clientId), undefined);
  });

  test('send with tag, keys and user properties: receipt and delivered message agree', async () => {
    const topic = await createTopic(b, 'ProdProps');
    const group = await createGroup(b, 'GProdProps');
    const producer = new Producer({ endpoints: b.endpoints, namespace: '', topic, logger: clientLogger() });
    await producer.startup();
    const consumer = await simpleConsumer(b, group, topic);
    try {
      const body = Buffer.from('hello vela');
      const properties = new Map([
        ['orderId', '42'],
        ['unicode', 'héllo ✓'],
      ]);
      const receipt = await producer.send({ topic, tag: 'TagX', keys: ['k1', 'k2'], body, properties });
      assert.match(receipt.messageId, /^[0-9A-F]{34}$/, 'client-generated V1 id echoed');
      assert.equal(typeof receipt.offset, 'number');
      assert.ok(Number.isInteger(receipt.offset) && receipt.offset >= 0);

      // The broker stored it under the client's id.
      const stored = await b.running.broker.findMessageById(receipt.messageId, topic);
      assert.equal(stored.length, 1);

      const [m] = await receiveN(consumer, 1);
      assert.ok(m, 'the message was delivered');
      assert.equal(m.messageId, receipt.messageId);
      assert.equal(m.topic, topic);
      assert.equal(m.tag, 'TagX');
      assert.deepEqual([...m.keys].sort(), ['k1', 'k2']);
      assert.deepEqual(Object.fromEntries(m.properties), Object.fromEntries(properties));
      assert.deepEqual(m.body, body);
      assert.equal(m.corrupted, undefined, 'body digest matches');
      assert.equal(m.deliveryAttempt, 1);
      assert.equal(m.offset, receipt.offset, 'queue offset on delivery equals the receipt offset');
      assert.equal(m.messageGroup, '', 'no message group on a normal message');
      assert.ok(m.bornTimestamp instanceof Date);
    } finally {
      await consumer.shutdown();
      await producer.shutdown();
    }
  });

  test('receipt offsets are per-queue offsets of the stored messages', async () => {
    const topic = await createTopic(b, 'ProdOffsets');
    const producer = new Producer({ endpoints: b.endpoints, namespace: '', topic, logger: clientLogger() });
    await producer.startup();
    try {
      const receipts = [];
      for (let i = 0; i < 10; i++) {
        receipts.push(await producer.send({ topic, body: Buffer.from(`m${i}`) }));
      }
      assert.equal(new Set(receipts.map((r) => r.messageId)).size, 10, 'distinct ids');
      for (const r of receipts) {
        const [stored] = await b.running.broker.findMessageById(r.messageId, topic);
        assert.ok(stored, `stored ${r.messageId}`);
        assert.equal(stored.queueOffset, r.offset);
      }
    } finally {
      await producer.shutdown();
    }
  });

  test('FIFO topic: send with messageGroup; messages arrive with their group, in order per group', async () => {
    const topic = await createTopic(b, 'ProdFifo', 'FIFO');
    const group = await createGroup(b, 'GProdFifo');
    const producer = new Producer({ endpoints: b.endpoints, namespace: '', topic, logger: clientLogger() });
    await producer.startup();
    const consumer = await simpleConsumer(b, group, topic);
    try {
      const sent: { id: string; group: string; seq: number }[] = [];
      for (let seq = 0; seq < 5; seq++) {
        for (const g of ['Order-001', 'Order-002', 'Account-Alice']) {
          const r = await producer.send({ topic, messageGroup: g, body: Buffer.from(`${g}#${seq}`) });
          assert.equal(typeof r.offset, 'number');
          sent.push({ id: r.messageId, group: g, seq });
        }
      }
      // All messages of one group were stored in one queue (the server chooses it from the group).
      for (const g of ['Order-001', 'Order-002', 'Account-Alice']) {
        const queues = new Set<number>();
        for (const s of sent.filter((x) => x.group === g)) {
          const [stored] = await b.running.broker.findMessageById(s.id, topic);
          assert.ok(stored);
          queues.add(stored.queueId);
        }
        assert.equal(queues.size, 1, `group ${g} stored in one queue`);
      }

      const got = await receiveN(consumer, sent.length);
      assert.equal(got.length, sent.length);
      const byId = new Map(sent.map((s) => [s.id, s]));
      const seen = new Map<string, number[]>();
      for (const m of got) {
        const s = byId.get(m.messageId);
        assert.ok(s, `known id ${m.messageId}`);
        assert.equal(m.messageGroup, s.group);
        assert.equal(m.body.toString(), `${s.group}#${s.seq}`);
        seen.set(s.group, [...(seen.get(s.group) ?? []), s.seq]);
      }
      for (const [g, seqs] of seen) assert.deepEqual(seqs, [0, 1, 2, 3, 4], `order of ${g}`);
    } finally {
      await consumer.shutdown();
      await producer.shutdown();
    }
  });

  test('producer without topics starts at once and sends after fetching the route', async () => {
    const topic = await createTopic(b, 'ProdNoTopics');
    const producer = new Producer({ endpoints: b.endpoints, namespace: '', logger: clientLogger() });
    await producer.startup();
    try {
      const r = await producer.send({ topic, tag: 't', body: Buffer.from('x') });
      assert.match(r.messageId, /^[0-9A-F]{34}$/);
      assert.equal(typeof r.offset, 'number');
    } finally {
      await producer.shutdown();
    }
  });

  test('the route advertises the topic type: a normal message to a FIFO topic is refused', async () => {
    const topic = await createTopic(b, 'ProdFifoMismatch', 'FIFO');
    const producer = new Producer({
      endpoints: b.endpoints,
      namespace: '',
      topic,
      maxAttempts: 1,
      logger: clientLogger(),
    });
    await producer.startup();
    try {
      // The client validates against the route's accept_message_types (FIFO only) before sending.
      await assert.rejects(producer.send({ topic, body: Buffer.from('no group') }), /accept message types/);
    } finally {
      await producer.shutdown();
    }
  });
});

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
