/**
 * SDK SimpleConsumer against a real broker: receive and ack, changeInvisibleDuration (new receipt
 * handle, redelivery after the new duration, the old handle refused), the async iterator with abort,
 * back-off on flow control instead of spinning, and typed start-up errors.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer, SimpleConsumer, VelaClientError, type MessageView } from '../../src/index.js';
import { sleep } from '../helpers.js';
import { FaultProxy } from './fault-proxy.js';
import { progress, startTestBroker, unique, type TestBroker, use, closeAll } from './support.js';

describe('SimpleConsumer', { concurrency: true }, () => {
  let b: TestBroker;
  let producer: Producer;
  before(async () => {
    b = await startTestBroker();
    producer = use(new Producer({ endpoints: b.endpoints }));
  });
  after(async () => {
    await closeAll();
    await producer.close();
    await b.close();
  });

  async function setup(n: number): Promise<{ topic: string; group: string }> {
    const topic = unique('SimpleT');
    const group = unique('SimpleG');
    await b.running.broker.topics.upsert(topic, {});
    await b.running.broker.groups.upsert(group, {});
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        producer.send({ topic, body: `s${i}`, tag: i % 2 ? 'odd' : 'even' }),
      ),
    );
    return { topic, group };
  }

  test('receive, then ack: consumed for the group', async () => {
    const { topic, group } = await setup(6);
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: 'even' },
        awaitDurationMs: 300,
      }),
    );
    await c.start();
    const got = await c.receive(32, 5000);
    assert.deepEqual(got.map((m) => m.text()).sort(), ['s0', 's2', 's4']);
    assert.ok(
      got.every((m) => m.deliveryAttempt === 1 && m.tag === 'even' && m.receiptHandle && !m.corrupted),
    );
    await Promise.all(got.map((m) => c.ack(m)));
    assert.deepEqual(await c.receive(32, 5000), [], 'MESSAGE_NOT_FOUND is an empty result');
    assert.equal(progress(b, group, topic).inflight, 0);
    await c.close();
    await assert.rejects(c.receive(1, 1000), (e: VelaClientError) => e.codeName === 'PRECONDITION_FAILED');
  });

  test('changeInvisibleDuration restarts the clock and replaces the receipt handle', async () => {
    const { topic, group } = await setup(1);
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 2000,
      }),
    );
    const [m] = await c.receive(1, 10_000);
    assert.ok(m);
    const first = m.receiptHandle;
    // The broker starts the new duration when it takes the call, so no earlier than this: measured
    // from here, a slow answer (a stalling disk delays it) cannot make the redelivery look early.
    const t0 = Date.now();
    await c.changeInvisibleDuration(m, 200);
    assert.notEqual(m.receiptHandle, first, 'a new handle');
    const [again] = await c.receive(1, 10_000);
    assert.ok(again, 'redelivered once the new duration ran out');
    assert.ok(Date.now() - t0 >= 190, `not before its time (${Date.now() - t0} ms)`);
    assert.equal(again.messageId === m.messageId || again.originMessageId === m.messageId, true);
    assert.equal(again.deliveryAttempt, 2);
    await assert.rejects(c.ack(m), (e: VelaClientError) => {
      assert.equal(e.codeName, 'INVALID_RECEIPT_HANDLE');
      assert.equal(e.retriable, false);
      return true;
    });
    await c.ack(again);
    await c.close();
  });

  test('messages(): an async iterator that ends on abort, also while long-polling', async () => {
    const { topic, group } = await setup(10);
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 5000,
      }),
    );
    const ac = new AbortController();
    const seen: MessageView[] = [];
    for await (const m of c.messages({ signal: ac.signal, invisibleDurationMs: 5000, maxMessages: 4 })) {
      seen.push(m);
      await c.ack(m);
      if (seen.length === 10) ac.abort();
    }
    assert.equal(seen.length, 10);
    // Nothing left: the iterator is parked in a long poll; abort ends it promptly.
    const idle = new AbortController();
    const t0 = Date.now();
    setTimeout(() => idle.abort(), 100);
    let extra = 0;
    for await (const _m of c.messages({ signal: idle.signal })) extra++;
    assert.equal(extra, 0);
    assert.ok(Date.now() - t0 < 1000, `ended ${Date.now() - t0} ms after start`);
    // close() ends an iteration too.
    const iterating = (async () => {
      for await (const _m of c.messages()) extra++;
    })();
    await sleep(50);
    await c.close();
    await iterating;
  });

  test('flow control on receive backs off (100 ms, doubling) instead of spinning', async () => {
    const { topic, group } = await setup(1);
    const proxy = await FaultProxy.start(b.endpoints);
    try {
      proxy.receiveFaults.push('flow-control', 'flow-control', 'flow-control');
      const c = use(
        new SimpleConsumer({
          endpoints: proxy.endpoints,
          group,
          subscriptions: { [topic]: '*' },
          awaitDurationMs: 1000,
        }),
      );
      const t0 = Date.now();
      const ac = new AbortController();
      for await (const m of c.messages({ signal: ac.signal })) {
        await c.ack(m);
        ac.abort();
      }
      const elapsed = Date.now() - t0;
      assert.equal(proxy.receiveCalls, 4, 'three refusals, then the message');
      assert.ok(elapsed >= 650, `backed off 100 + 200 + 400 ms (${elapsed} ms)`);
      // receive() itself reports flow control as a typed, retriable error.
      proxy.receiveFaults.push('flow-control');
      const err = await c.receive(1, 1000).catch((e: unknown) => e);
      assert.ok(err instanceof VelaClientError && err.flowControl && err.retriable);
      await c.close();
    } finally {
      await proxy.close();
    }
  });

  test('start() fails with typed errors for an unknown group (groups not auto-created) or topic', async () => {
    const { topic } = await setup(0);
    const strict = use(await startTestBroker({ autoCreateGroups: false }));
    await strict.running.broker.topics.upsert(topic, {});
    const noGroup = use(
      new SimpleConsumer({
        endpoints: strict.endpoints,
        group: unique('Nope'),
        subscriptions: { [topic]: '*' },
      }),
    );
    await assert.rejects(
      noGroup.start(),
      (e: VelaClientError) => e.codeName === 'CONSUMER_GROUP_NOT_FOUND' && !e.retriable,
    );
    await noGroup.close();
    const group = unique('G');
    await b.running.broker.groups.upsert(group, {});
    const noTopic = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [unique('NoTopic')]: '*' },
      }),
    );
    await assert.rejects(noTopic.start(), (e: VelaClientError) => e.codeName === 'TOPIC_NOT_FOUND');
    await noTopic.close();
    assert.throws(
      () => new SimpleConsumer({ endpoints: b.endpoints, group, subscriptions: {} }),
      (e: VelaClientError) => e.codeName === 'BAD_REQUEST',
    );
  });
});
