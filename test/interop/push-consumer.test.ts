/**
 * Interop: the official Node client's PushConsumer (rocketmq-client-nodejs 1.0.8) against Vela.
 * The consumer runs in a child process (push-consumer-child.ts): it never exits by itself.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer } from 'rocketmq-client-nodejs';
import { tempDir } from '../helpers.js';
import {
  clientLogger,
  createGroup,
  createTopic,
  progressOf,
  simpleConsumer,
  uniqueName,
  type InteropBroker,
} from './support.js';
import { MAX_POLL_MS, consumedOf, runChild, startPushBroker } from './push-child.js';

// The tests are independent (own topic, group and child) and mostly wait on their child: run them together.
describe('interop: PushConsumer (child process)', { concurrency: true }, () => {
  let b: InteropBroker;
  let producer: Producer;
  let dir: ReturnType<typeof tempDir>;

  before(async () => {
    dir = tempDir('vela-interop-push-');
    b = await startPushBroker(dir.path);
    producer = new Producer({ endpoints: b.endpoints, namespace: '', logger: clientLogger() });
    await producer.startup();
  });
  after(async () => {
    await producer.shutdown();
    await b.close();
    dir.cleanup();
  });

  async function assertNothingLeft(group: string, topic: string): Promise<void> {
    assert.deepEqual(progressOf(b, group, topic).lag, 0, 'no lag');
    assert.deepEqual(progressOf(b, group, topic).inflight, 0, 'nothing in flight');
    assert.deepEqual(progressOf(b, group, topic).ready, 0, 'nothing waiting for redelivery');
    const c = await simpleConsumer(b, group, topic, { awaitDuration: 500 });
    try {
      assert.deepEqual(await c.receive(32, 10_000), [], 'a later consumer of the group gets nothing');
    } finally {
      await c.shutdown();
    }
  }

  test('consumes with SUCCESS: every message once, acked, and the process shuts down cleanly', async (t) => {
    const topic = await createTopic(b, 'PushOk');
    const group = await createGroup(b, 'GPushOk');
    const sent = new Map<string, string>();
    for (let i = 0; i < 20; i++) {
      const body = `before-${i}`;
      sent.set(
        (await producer.send({ topic, tag: 'T', keys: [`k${i}`], body: Buffer.from(body) })).messageId,
        body,
      );
    }
    const run = runChild([b.endpoints, topic, group, '30']);
    const started = await run.started;
    assert.equal(started.event, 'started', String(started.message));
    // The broker knows the push consumer while it runs.
    const session = b.running.broker.sessions.get(String(started.clientId));
    assert.equal(session?.clientType, 'PUSH_CONSUMER');
    assert.equal(session?.group, group);
    // Messages sent while it runs arrive too.
    for (let i = 0; i < 10; i++) {
      const body = `after-${i}`;
      sent.set((await producer.send({ topic, tag: 'T', body: Buffer.from(body) })).messageId, body);
    }
    const exit = await run.exited;
    assert.equal(exit.code, 0, `child exit ${exit.code} ${exit.signal}\n${exit.stderr}`);
    assert.deepEqual(
      run.events.filter((e) => e.event === 'error'),
      [],
    );
    const consumed = consumedOf(run.events);
    assert.equal(consumed.length, 30, 'each message consumed once');
    for (const e of consumed) {
      assert.equal(sent.get(String(e.messageId)), e.body, `body of ${String(e.messageId)}`);
      assert.equal(e.deliveryAttempt, 1);
      assert.equal(e.tag, 'T');
      assert.equal(e.corrupted, false);
      assert.equal(typeof e.offset, 'number');
    }
    assert.deepEqual(new Set(consumed.map((e) => e.messageId)), new Set(sent.keys()));
    const shutdown = run.events.find((e) => e.event === 'shutdown');
    assert.ok(shutdown, 'shutdown() returned');
    t.diagnostic(`push consumer shutdown took ${String(shutdown.ms)} ms`);
    assert.ok(Number(shutdown.ms) < MAX_POLL_MS + 3000, `shutdown took ${String(shutdown.ms)} ms`);
    // NotifyClientTermination ended the session.
    assert.equal(b.running.broker.sessions.get(String(started.clientId)), undefined);
    await assertNothingLeft(group, topic);
  });

  test('tag filter: only matching messages reach the listener', async () => {
    const topic = await createTopic(b, 'PushTag');
    const group = await createGroup(b, 'GPushTag');
    const wanted = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const tag = i % 2 === 0 ? 'TagA' : 'TagB';
      const r = await producer.send({ topic, tag, body: Buffer.from(`${tag}-${i}`) });
      if (tag === 'TagA') wanted.add(r.messageId);
    }
    const run = runChild([b.endpoints, topic, group, '5', 'TagA']);
    const exit = await run.exited;
    assert.equal(exit.code, 0, `child exit ${exit.code} ${exit.signal}\n${exit.stderr}`);
    const consumed = consumedOf(run.events);
    assert.ok(consumed.every((e) => e.tag === 'TagA'));
    assert.deepEqual(new Set(consumed.map((e) => e.messageId)), wanted);
    assert.equal(consumed.length, 5);
    await assertNothingLeft(group, topic);
  });

  test('FIFO group: messages of each message group are consumed in order', async () => {
    const topic = await createTopic(b, 'PushFifo', 'FIFO');
    const group = uniqueName('GPushFifo');
    await b.running.broker.groups.upsert(group, { consumeMessageOrderly: true });
    const groups = ['Order-001', 'Order-002', 'Account-Alice'];
    const perGroup = 15; // 45 in all: more than one receive batch of 32
    for (let seq = 0; seq < perGroup; seq++) {
      for (const g of groups) {
        await producer.send({ topic, messageGroup: g, body: Buffer.from(`${g}#${seq}`) });
      }
    }
    // A small delay per message lets a second batch arrive while the first is being consumed.
    const run = runChild([b.endpoints, topic, group, String(groups.length * perGroup), '*', '3']);
    const exit = await run.exited;
    assert.equal(exit.code, 0, `child exit ${exit.code} ${exit.signal}\n${exit.stderr}`);
    const consumed = consumedOf(run.events);
    assert.equal(consumed.length, groups.length * perGroup);
    for (const g of groups) {
      const seqs = consumed
        .filter((e) => e.messageGroup === g)
        .map((e) => Number(String(e.body).split('#')[1]));
      assert.deepEqual(
        seqs,
        Array.from({ length: perGroup }, (_, i) => i),
        `consumption order of ${g}`,
      );
    }
    await assertNothingLeft(group, topic);
  });
});
