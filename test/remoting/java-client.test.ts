/**
 * The Java Remoting client (org.apache.rocketmq:rocketmq-client 5.5.0, pinned in java/pom.xml)
 * against Vela: DefaultMQProducer (sync, async, one-way, batch, ordered with a selector),
 * DefaultMQPushConsumer (concurrent and orderly, clustering and broadcasting, RECONSUME_LATER
 * retries, DLQ) and DefaultLitePullConsumer (subscribe with rebalance; assign + seek).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/harness.js';
import { decodeOffsetMessageId } from '../../src/remoting/message-codec.js';
import { AdminOperations } from '../../src/admin/operations.js';
import { javaBrokerSuite, runJava, type ProgramEvent } from './client-programs.js';

const suite = javaBrokerSuite('vela-java-home-');
const ns = suite.ns;

async function setup(queues = 4) {
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await suite.broker.running.broker.topics.upsert(topic, { readQueueNums: queues, writeQueueNums: queues });
  await suite.broker.running.broker.groups.upsert(group, {});
  return { topic, group };
}

const java = (...args: string[]) => runJava(suite.home, args);
const of = (events: ProgramEvent[], event: string, filter: Record<string, unknown> = {}) =>
  events.filter((e) => e.event === event && Object.entries(filter).every(([k, v]) => e[k] === v));
const bodies = (events: ProgramEvent[]) => events.map((e) => e.body as string);

describe('Java rocketmq-client over Remoting', { concurrency: 2 }, () => {
  test('DefaultMQProducer: sync, async, one-way, batch and ordered sends', async () => {
    const { topic } = await setup(4);
    const ev = await java('produce', ns(), topic);
    const sent = of(ev, 'sent');
    assert.equal(of(ev, 'sent', { kind: 'sync' }).length, 3);
    assert.equal(of(ev, 'sent', { kind: 'async' }).length, 3);
    assert.equal(of(ev, 'sent', { kind: 'oneway' }).length, 3);
    for (const r of sent.filter((s) => s.kind !== 'oneway')) assert.equal(r.status, 'SEND_OK');
    // msgId is the client's UNIQ_KEY, which the broker stores as the message id; offsetMsgId is ours.
    const sync = of(ev, 'sent', { kind: 'sync' })[0]!;
    const [stored] = await suite.broker.running.broker.findMessageById(sync.msgId as string);
    assert.equal(stored?.body.toString(), 'sync 0');
    assert.equal(stored?.tag, 'TagA');
    assert.deepEqual(stored?.keys, ['sync-0']);
    assert.equal(stored?.properties.origin, 'java');
    const offsetId = decodeOffsetMessageId(sync.offsetMsgId as string);
    assert.equal(offsetId?.address, ns());
    assert.equal(offsetId?.logPosition, stored?.logPosition);
    // A batch is one send: three UNIQ_KEYs, three offset ids.
    const batch = of(ev, 'sent', { kind: 'batch' })[0]!;
    assert.equal((batch.msgId as string).split(',').length, 3);
    assert.equal((batch.offsetMsgId as string).split(',').length, 3);
    // Ordered sends land in the queue the selector chose (order id % 4), in order.
    const ordered = of(ev, 'sent', { kind: 'ordered' });
    assert.deepEqual(
      ordered.map((o) => o.queueId),
      [1, 2, 1, 2, 1, 2, 1, 2],
    );
    const q1 = ordered.filter((o) => o.queueId === 1).map((o) => o.queueOffset as number);
    assert.deepEqual(
      q1,
      [...q1].sort((x, y) => x - y),
    );
    const total = [0, 1, 2, 3].reduce(
      (n, q) => n + suite.broker.running.broker.queueState(topic, q).maxOffset,
      0,
    );
    assert.equal(total, 3 + 3 + 3 + 3 + 8);
  });

  test('DefaultMQPushConsumer (concurrent, clustering): tag filter, ids and properties', async () => {
    const { topic, group } = await setup(4);
    const ev = await java('push', ns(), topic, group, 'concurrent');
    const got = of(ev, 'received');
    assert.deepEqual(bodies(got).sort(), ['body 0', 'body 2', 'body 4']);
    const sent = new Map(of(ev, 'sent').map((s) => [s.msgId, s]));
    for (const m of got) {
      assert.equal(m.tags, 'TagA');
      assert.equal(m.topic, topic);
      const s = sent.get(m.msgId)!;
      assert.ok(s, 'the consumer sees the producer msgId (UNIQ_KEY)');
      assert.equal(m.offsetMsgId, s.offsetMsgId);
      assert.equal((m.properties as Record<string, string>).origin, 'java');
    }
    // Offsets were committed to the broker.
    const committed = suite.broker.running.broker.offsets.list(group, topic);
    assert.ok(committed.length > 0);
  });

  test('RECONSUME_LATER: redelivered from %RETRY%<group> after the delay level, same msgId', async () => {
    const { topic, group } = await setup(2);
    const t0 = Date.now();
    const ev = await java('push', ns(), topic, group, 'retry');
    const got = of(ev, 'received');
    assert.equal(got.length, 4, `each message twice: ${JSON.stringify(bodies(got))}`);
    for (const body of ['retry 0', 'retry 1']) {
      const d = got.filter((m) => m.body === body);
      assert.deepEqual(
        d.map((m) => m.reconsumeTimes),
        [0, 1],
      );
      assert.equal(d[0]!.msgId, d[1]!.msgId, 'the msgId survives the retry');
      assert.equal(d[1]!.topic, topic, 'the client sees the original topic');
      assert.equal((d[1]!.properties as Record<string, string>).RETRY_TOPIC, topic);
    }
    assert.ok(Date.now() - t0 >= 1000);
    assert.equal(
      suite.broker.running.broker.queueState(`%RETRY%${group}`, 0).maxOffset,
      2,
      'delay level 1 → retry queue 0',
    );
  });

  test('maxReconsumeTimes exhausted: the message goes to %DLQ%<group>', async () => {
    const { topic, group } = await setup(2);
    const ev = await java('push', ns(), topic, group, 'dlq');
    const got = of(ev, 'received');
    assert.equal(got.length, 4, `two deliveries each, no third: ${JSON.stringify(bodies(got))}`);
    const dead = (await suite.broker.running.broker.deadLetters(group)).messages;
    assert.deepEqual(dead.map((m) => m.body.toString()).sort(), ['retry 0', 'retry 1']);
    assert.equal(dead[0]!.properties.DLQ_ORIGIN_TOPIC, topic);
    assert.equal(dead[0]!.messageId, got.find((m) => m.body === dead[0]!.body.toString())!.msgId);
  });

  test('resendDlqMsg: dead letters of a Remoting group come back through %RETRY%<group>, same msgId', async () => {
    const { topic, group } = await setup(2);
    const first = of(await java('push', ns(), topic, group, 'dlq'), 'received');
    const broker = suite.broker.running.broker;
    assert.equal((await broker.deadLetters(group)).messages.length, 2);
    // The group has read everything (its offsets may not have been committed before the JVM exited).
    for (const t of [topic, `%RETRY%${group}`]) await broker.resetOffset(group, t, { offset: 1e9 });
    const resent = await new AdminOperations(broker).resendDlqMsg(group);
    assert.equal(resent.resent, 2);
    const retryQueue = broker.queueState(`%RETRY%${group}`, 0);
    assert.equal(retryQueue.maxOffset - retryQueue.minOffset, 4, 'two retries, then the two resent');
    assert.equal(
      broker.topics.list().filter((t) => t.name.startsWith(`%RETRY%${group}+`)).length,
      0,
      'nothing went to a gRPC retry topic',
    );
    const again = of(await java('consume', ns(), topic, group, '2'), 'received');
    assert.deepEqual(bodies(again).sort(), ['retry 0', 'retry 1']);
    for (const m of again) {
      assert.equal(m.topic, topic, 'the client sees the original topic');
      assert.equal(m.reconsumeTimes, 0, 'attempts counted afresh');
      assert.equal(m.msgId, first.find((f) => f.body === m.body)!.msgId);
    }
  });

  test('MessageListenerOrderly: per-queue order, held back while a message is suspended; queues locked', async () => {
    const { topic, group } = await setup(4);
    const ev = await java('push', ns(), topic, group, 'orderly');
    const got = of(ev, 'received');
    for (const k of ['k0', 'k1', 'k2']) {
      assert.deepEqual(
        bodies(got).filter((x) => x.startsWith(k)),
        [0, 1, 2, 3, 4].map((i) => `${k}:${i}`),
      );
    }
    // The client took queue locks (LOCK_BATCH_MQ); they were released at shutdown (UNLOCK_BATCH_MQ).
    assert.equal(suite.broker.running.broker.queueLocks.hasLocks(group), false);
  });

  test('broadcasting push consumers each receive every message', async () => {
    const { topic, group } = await setup(2);
    const ev = await java('push', ns(), topic, group, 'broadcast');
    const got = of(ev, 'received');
    assert.deepEqual(
      bodies(got.filter((m) => m.who === 'a')).sort(),
      bodies(got.filter((m) => m.who === 'b')).sort(),
    );
    assert.equal(new Set(bodies(got)).size, 4);
  });

  test('DefaultLitePullConsumer: two subscribers split the queues', async () => {
    const { topic, group } = await setup(4);
    const ev = await java('litepull-subscribe', ns(), topic, group, '8');
    const got = of(ev, 'received');
    assert.equal(new Set(bodies(got)).size, 8);
    const queuesOf = (who: string) =>
      new Set(got.filter((m) => m.who === who).map((m) => m.queueId as number));
    const a = queuesOf('a');
    const z = queuesOf('b');
    assert.ok(a.size > 0 && z.size > 0, `both got queues: ${[...a]} / ${[...z]}`);
    assert.equal([...a].filter((q) => z.has(q)).length, 0, 'no queue is polled by both');
  });

  test('DefaultLitePullConsumer: assign + seek', async () => {
    const { topic, group } = await setup(2);
    const ev = await java('litepull-assign', ns(), topic, group);
    assert.equal(of(ev, 'queues')[0]!.count, 2);
    const before = of(ev, 'received').filter((m) => m.who === 'before-seek');
    assert.deepEqual(
      before.map((m) => m.queueOffset),
      [0, 1, 2, 3, 4],
      'the assigned queue read from its start',
    );
    const got = of(ev, 'received').filter((m) => m.who === 'assign');
    assert.deepEqual(
      got.map((m) => [m.queueOffset, m.body]),
      [
        [2, 'assigned 2'],
        [3, 'assigned 3'],
        [4, 'assigned 4'],
      ],
    );
  });
});
