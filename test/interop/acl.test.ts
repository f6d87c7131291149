/**
 * Interop: the official Node client (rocketmq-client-nodejs 1.0.8) with `sessionCredentials` against
 * Vela with access control on: it signs with uppercase hex over a UTC date-time (its own signing code,
 * not Vela's), its requests within the user's rights work, a wrong secret is refused with
 * UNAUTHORIZED and a forbidden topic or group with FORBIDDEN, as the client's exceptions show.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer, SimpleConsumer } from 'rocketmq-client-nodejs';
import { clientLogger, codeOf, receiveN, uniqueName } from './support.js';
import { startTestBroker, type TestBroker } from '../support/harness.js';
import { MIN_INVISIBLE_MS } from './support.js';

const ROOT = 'root:root-secret';
const ALICE = { accessKey: 'alice', accessSecret: 'alice-secret' };
const UNAUTHORIZED = 40100;
const FORBIDDEN = 40300;

describe('interop: Node client with ACL credentials', () => {
  let b: TestBroker;
  let allowedTopic: string;
  let allowedGroup: string;
  let forbiddenTopic: string;
  let forbiddenGroup: string;

  before(async () => {
    b = await startTestBroker({
      aclEnabled: true,
      aclInitUser: ROOT,
      consume: { minInvisibleMs: MIN_INVISIBLE_MS },
    });
    const broker = b.running.broker;
    allowedTopic = uniqueName('AclNodeT');
    allowedGroup = uniqueName('AclNodeG');
    forbiddenTopic = uniqueName('NoT');
    forbiddenGroup = uniqueName('NoG');
    for (const t of [allowedTopic, forbiddenTopic]) await broker.topics.upsert(t, {});
    for (const g of [allowedGroup, forbiddenGroup]) await broker.groups.upsert(g, {});
    await broker.acl.registry.createUser(ALICE.accessKey, ALICE.accessSecret);
    await broker.acl.registry.upsertAcl({
      subject: 'User:alice',
      resources: [`Topic:${allowedTopic}`, `Group:${allowedGroup}`],
      actions: ['Pub', 'Sub'],
      decision: 'Allow',
    });
  });
  after(() => b.close());

  const producer = (sessionCredentials: typeof ALICE, topic?: string) =>
    new Producer({
      endpoints: b.endpoints,
      namespace: '',
      sessionCredentials,
      ...(topic ? { topic } : {}),
      maxAttempts: 1,
      logger: clientLogger(),
    });

  test('signed requests within the user’s rights: send, receive and ack', async () => {
    const p = producer(ALICE, allowedTopic);
    await p.startup();
    const consumer = new SimpleConsumer({
      endpoints: b.endpoints,
      namespace: '',
      sessionCredentials: ALICE,
      consumerGroup: allowedGroup,
      subscriptions: new Map([[allowedTopic, '*']]),
      awaitDuration: 1000,
      logger: clientLogger(),
    });
    try {
      const receipt = await p.send({ topic: allowedTopic, body: Buffer.from('signed by node') });
      await consumer.startup();
      const [m] = await receiveN(consumer, 1);
      assert.equal(m?.messageId, receipt.messageId);
      assert.equal(m?.body.toString(), 'signed by node');
    } finally {
      await consumer.shutdown();
      await p.shutdown();
    }
  });

  test('a wrong secret key: UNAUTHORIZED', async () => {
    const p = producer({ ...ALICE, accessSecret: 'not-the-secret' });
    await p.startup();
    try {
      await assert.rejects(p.send({ topic: allowedTopic, body: Buffer.from('x') }), (e: unknown) => {
        assert.equal(codeOf(e), UNAUTHORIZED, String(e));
        return true;
      });
    } finally {
      await p.shutdown().catch(() => {});
    }
  });

  test('a topic outside the user’s rights: FORBIDDEN, nothing stored', async () => {
    const p = producer(ALICE);
    await p.startup();
    try {
      await assert.rejects(p.send({ topic: forbiddenTopic, body: Buffer.from('x') }), (e: unknown) => {
        assert.equal(codeOf(e), FORBIDDEN, String(e));
        return true;
      });
      assert.equal(b.running.broker.queueState(forbiddenTopic, 0).maxOffset, 0);
    } finally {
      await p.shutdown().catch(() => {});
    }
  });

  test('a consumer group outside the user’s rights: startup refused with FORBIDDEN', async () => {
    const consumer = new SimpleConsumer({
      endpoints: b.endpoints,
      namespace: '',
      sessionCredentials: ALICE,
      consumerGroup: forbiddenGroup,
      subscriptions: new Map([[allowedTopic, '*']]),
      awaitDuration: 1000,
      logger: clientLogger(),
    });
    await assert.rejects(consumer.startup(), (e: unknown) => {
      // startup() wraps the client exception (ForbiddenException) as the cause.
      assert.equal(codeOf((e as Error).cause), FORBIDDEN, String(e));
      return true;
    });
    await consumer.shutdown().catch(() => {});
  });
});
