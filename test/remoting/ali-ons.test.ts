/**
 * The pure-JavaScript Remoting client `ali-ons` against Vela: producer, push consumers (clustering,
 * broadcasting, ordered per queue), retries through %RETRY%<group> into the DLQ, and two consumers
 * splitting a topic's queues and rebalancing when one leaves.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startTestBroker, uniqueName, closeAll, use, waitFor, type TestBroker } from '../support/harness.js';
import { closeOns, ons, onsConsumer, onsProducer, removeOnsHome, type OnsMessage } from './ons-support.js';

let b: TestBroker;
const producer = () => onsProducer(b.running.remotingPort);
const consumer = (group: string, extra: object = {}) => onsConsumer(b.running.remotingPort, group, extra);

async function setup(queues = 4) {
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await b.running.broker.topics.upsert(topic, { readQueueNums: queues, writeQueueNums: queues });
  await b.running.broker.groups.upsert(group, {});
  return { topic, group };
}

before(async () => {
  b = use(await startTestBroker());
});
after(async () => {
  await closeOns();
  await closeAll();
  removeOnsHome();
});

describe('ali-ons over Remoting', { concurrency: false }, () => {
  test('a producer sends and a clustering push consumer receives with tag, keys and the same msgId', async () => {
    const { topic, group } = await setup();
    const p = await producer();
    const sent = new Map<string, string>();
    for (let i = 0; i < 6; i++) {
      const m = new ons.Message(topic, i % 2 ? 'TagB' : 'TagA', `body-${i}`);
      m.keys = [`key-${i}`];
      const r = await p.send(m);
      assert.equal(r.sendStatus, 'SEND_OK');
      sent.set(`body-${i}`, r.msgId);
    }
    const got: OnsMessage[] = [];
    const c = consumer(group);
    c.subscribe(topic, 'TagA', async (m) => {
      got.push(m);
    });
    await c.ready();
    await waitFor(() => got.length >= 3, 10_000, 'three TagA messages');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(got.map((m) => m.body.toString()).sort(), ['body-0', 'body-2', 'body-4']);
    for (const m of got) {
      assert.equal(m.tags, 'TagA');
      assert.equal(m.msgId, sent.get(m.body.toString()), 'the offset msgId of the send result');
      assert.equal(String(m.keys), `key-${m.body.toString().slice(5)}`);
      assert.match(m.properties.UNIQ_KEY ?? '', /^[0-9A-F]{32}$/, 'a UNIQ_KEY given by the broker');
    }
    const stored = await b.running.broker.findMessageById(got[0]!.properties.UNIQ_KEY!);
    assert.equal(stored[0]?.body.toString(), got[0]!.body.toString());
    await c.close();
  });

  test('broadcasting consumers of one group each receive every message', async () => {
    const { topic, group } = await setup(2);
    const a: string[] = [];
    const z: string[] = [];
    const ca = consumer(group, { isBroadcast: true });
    const cz = consumer(group, { isBroadcast: true });
    ca.subscribe(topic, '*', async (m) => void a.push(m.body.toString()));
    cz.subscribe(topic, '*', async (m) => void z.push(m.body.toString()));
    await Promise.all([ca.ready(), cz.ready()]);
    const p = await producer();
    for (let i = 0; i < 8; i++) await p.send(new ons.Message(topic, 'T', `b${i}`));
    await waitFor(() => a.length >= 8 && z.length >= 8, 10_000, 'both consumers to get all 8');
    assert.deepEqual([...new Set(a)].sort(), [...new Set(z)].sort());
    assert.equal(new Set(a).size, 8);
    await Promise.all([ca.close(), cz.close()]);
  });

  test('messages of one sharding key go to one queue and are consumed in order', async () => {
    const { topic, group } = await setup(4);
    const p = await producer();
    const queues = new Set<number>();
    // ali-ons ignores a key that hashes to queue 0 (`queueIds[i] || ''`): take one that does not.
    const key = ['order-1', 'order-2', 'order-3', 'order-4'].find(
      (k) => createHash('md5').update(k).digest().readUInt32BE() % 4 !== 0,
    )!;
    for (let i = 0; i < 20; i++) {
      const m = new ons.Message(topic, 'T', `o${i}`);
      m.shardingKey = key;
      queues.add((await p.send(m)).messageQueue.queueId);
    }
    assert.equal(queues.size, 1);
    const got: string[] = [];
    const c = consumer(group);
    c.subscribe(topic, '*', async (m) => {
      await new Promise((r) => setTimeout(r, Math.random() * 5));
      got.push(m.body.toString());
    });
    await c.ready();
    await waitFor(() => got.length >= 20, 10_000, 'twenty ordered messages');
    assert.deepEqual(
      got,
      Array.from({ length: 20 }, (_, i) => `o${i}`),
    );
    await c.close();
  });

  test('a failed message is retried through %RETRY%<group> and ends in the DLQ', async () => {
    const { topic, group } = await setup(1);
    // A short group policy: retries wait delay level 1 (1 s) instead of 10 s.
    await b.running.broker.groups.upsert(group, { retryPolicy: { type: 'CUSTOMIZED', next: [200] } });
    const p = await producer();
    await p.send(new ons.Message(topic, 'T', 'ok-after-retry'));
    await p.send(new ons.Message(topic, 'T', 'always-fails'));
    const attempts = new Map<string, number[]>();
    const c = consumer(group, { maxReconsumeTimes: 1 });
    c.subscribe(topic, '*', async (m) => {
      const body = m.body.toString();
      attempts.set(body, [...(attempts.get(body) ?? []), m.reconsumeTimes]);
      // (ali-ons ignores ACTION_RETRY returned for a retried message: a failure must throw.)
      if (body === 'always-fails' || m.reconsumeTimes === 0) throw new Error('consume later');
    });
    await c.ready();
    await waitFor(
      async () => (await b.running.broker.deadLetters(group)).messages.length > 0,
      15_000,
      'a dead letter',
    );
    assert.deepEqual(attempts.get('ok-after-retry'), [0, 1]);
    assert.deepEqual(attempts.get('always-fails'), [0, 1]);
    const dead = (await b.running.broker.deadLetters(group)).messages;
    assert.deepEqual(
      dead.map((m) => [m.body.toString(), m.topic, m.properties.DLQ_ORIGIN_TOPIC]),
      [['always-fails', `%DLQ%${group}`, topic]],
    );
    await c.close();
  });

  test('two consumers split the queues; when one leaves the other takes them all', async () => {
    const { topic, group } = await setup(4);
    const byConsumer = { a: new Set<number>(), z: new Set<number>() };
    const bodies = new Set<string>();
    const ca = consumer(group);
    const cz = consumer(group);
    ca.subscribe(topic, '*', async (m) => {
      byConsumer.a.add(m.queueId);
      bodies.add(m.body.toString());
    });
    cz.subscribe(topic, '*', async (m) => {
      byConsumer.z.add(m.queueId);
      bodies.add(m.body.toString());
    });
    await Promise.all([ca.ready(), cz.ready()]);
    await waitFor(
      () => b.running.broker.consumers.clients(group).length === 2,
      5000,
      'both consumers registered',
    );
    await new Promise((r) => setTimeout(r, 1500)); // a rebalance round with both members
    const p = await producer();
    for (let i = 0; i < 40; i++) await p.send(new ons.Message(topic, 'T', `s${i}`));
    await waitFor(() => bodies.size >= 40, 10_000, 'all 40 messages');
    assert.ok(byConsumer.a.size > 0 && byConsumer.z.size > 0, 'both consumers got queues');
    assert.equal([...byConsumer.a].filter((q) => byConsumer.z.has(q)).length, 0, 'no queue is shared');

    await cz.close();
    await waitFor(() => b.running.broker.consumers.clients(group).length === 1, 5000, 'the leaver is gone');
    await new Promise((r) => setTimeout(r, 1500));
    byConsumer.a.clear();
    for (let i = 40; i < 80; i++) await p.send(new ons.Message(topic, 'T', `s${i}`));
    await waitFor(() => bodies.size >= 80, 10_000, 'the last 40 messages, by the remaining consumer');
    assert.equal(byConsumer.a.size, 4, 'the remaining consumer owns every queue');
    await ca.close();
  });
});
