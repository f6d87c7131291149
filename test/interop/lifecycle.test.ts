/**
 * Interop: startup and shutdown of the official Node client's Producer and SimpleConsumer against
 * Vela (the PushConsumer's lifecycle is covered by push-consumer.test.ts, in a child process).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer, SimpleConsumer } from 'rocketmq-client-nodejs';
import { sleep } from '../helpers.js';
import {
  clientLogger,
  codeOf,
  createGroup,
  createTopic,
  progressOf,
  receiveN,
  simpleConsumer,
  startInteropBroker,
  uniqueName,
  type InteropBroker,
} from './support.js';
import { startTestBroker } from '../support/harness.js';

const CONSUMER_GROUP_NOT_FOUND = 40403;

describe('interop: client lifecycle', { concurrency: true }, () => {
  let b: InteropBroker;
  before(async () => {
    b = await startInteropBroker();
  });
  after(async () => {
    await b.close();
  });

  test('producer: startup and shutdown leave no session and no error', async () => {
    const topic = await createTopic(b, 'LcProd');
    const ids: string[] = [];
    for (const opts of [{ topic }, {}]) {
      const logger = clientLogger();
      const producer = new Producer({ endpoints: b.endpoints, namespace: '', ...opts, logger });
      await producer.startup();
      ids.push(producer.clientId);
      await producer.send({ topic, body: Buffer.from('x') });
      assert.ok(b.running.broker.sessions.get(producer.clientId), 'session while running');
      await producer.shutdown();
      assert.equal(b.running.broker.sessions.get(producer.clientId), undefined, 'session ended');
      assert.deepEqual(logger.errors, []);
    }
    // No Telemetry stream comes back after shutdown (the client would re-send Settings if the
    // server had ended its stream, protocol.md §7.2).
    await sleep(1300);
    for (const id of ids) assert.equal(b.running.broker.sessions.get(id), undefined, `no session for ${id}`);
  });

  test('simple consumer: startup registers the session, shutdown ends it', async () => {
    const topic = await createTopic(b, 'LcSimple');
    const group = await createGroup(b, 'GLcSimple');
    const logger = clientLogger();
    const c = new SimpleConsumer({
      endpoints: b.endpoints,
      namespace: '',
      consumerGroup: group,
      subscriptions: new Map([[topic, '*']]),
      awaitDuration: 500,
      logger,
    });
    await c.startup();
    const s = b.running.broker.sessions.get(c.clientId);
    assert.equal(s?.clientType, 'SIMPLE_CONSUMER');
    assert.equal(s?.group, group);
    assert.deepEqual(s?.topics, [topic]);
    assert.deepEqual(await c.receive(1, 5000), []);
    await c.shutdown();
    assert.equal(b.running.broker.sessions.get(c.clientId), undefined);
    assert.deepEqual(logger.errors, []);
    await sleep(1300);
    assert.equal(b.running.broker.sessions.get(c.clientId), undefined, 'no zombie stream');
  });

  test('simple consumer shutdown does not release its in-flight messages early', async () => {
    const topic = await createTopic(b, 'LcRelease');
    const group = await createGroup(b, 'GLcRelease');
    const producer = new Producer({ endpoints: b.endpoints, namespace: '', logger: clientLogger() });
    await producer.startup();
    const sent = await producer.send({ topic, body: Buffer.from('held') });
    await producer.shutdown();

    const invisibleMs = 2000;
    const c1 = await simpleConsumer(b, group, topic, { awaitDuration: 500 });
    const t0 = Date.now();
    const [m] = await receiveN(c1, 1, { ack: false, invisibleMs });
    assert.equal(m?.messageId, sent.messageId);
    await c1.shutdown();
    // A simple consumer's delivery keeps its invisible time (it is not auto-renewed): the
    // shutdown must not make it visible at once, nor forget it.
    assert.deepEqual(progressOf(b, group, topic), { lag: 1, inflight: 1, ready: 0, brokerOffsets: 1 });

    const c2 = await simpleConsumer(b, group, topic, { awaitDuration: 3000 });
    try {
      const got = await receiveN(c2, 1, { timeoutMs: 5000 });
      const t = Date.now();
      assert.equal(got.length, 1);
      assert.notEqual(got[0]!.messageId, sent.messageId, 'a retry is a new message');
      assert.equal(got[0]!.properties.get('ORIGIN_MESSAGE_ID'), sent.messageId);
      assert.equal(got[0]!.deliveryAttempt, 2);
      assert.ok(t - t0 >= invisibleMs, `visible again after ${t - t0} ms (invisible ${invisibleMs})`);
      assert.equal(progressOf(b, group, topic).lag, 0);
    } finally {
      await c2.shutdown();
    }
  });

  test('simple consumer of an unknown group, groups not auto-created: startup fails instead of hanging', async () => {
    const strict = await startTestBroker({ autoCreateGroups: false });
    try {
      const topic = uniqueName('LcNoGroup');
      await strict.running.broker.topics.upsert(topic, {});
      const c = new SimpleConsumer({
        endpoints: strict.endpoints,
        namespace: '',
        consumerGroup: uniqueName('GLcMissing'),
        subscriptions: new Map([[topic, '*']]),
        awaitDuration: 500,
        logger: clientLogger(),
      });
      const t = Date.now();
      await assert.rejects(c.startup(), (err: Error) => {
        assert.equal(codeOf(err.cause), CONSUMER_GROUP_NOT_FOUND, String(err));
        return true;
      });
      assert.ok(Date.now() - t < 3000, 'rejected promptly');
      await c.shutdown().catch(() => {});
    } finally {
      await strict.close();
    }
  });

  test('producer of an unknown topic: startup fails after its route retries', async () => {
    const producer = new Producer({
      endpoints: b.endpoints,
      namespace: '',
      topic: uniqueName('LcMissingTopic'),
      logger: clientLogger(),
    });
    await assert.rejects(producer.startup(), /Failed to fetch topic routes/);
    await producer.shutdown().catch(() => {});
  });
});
