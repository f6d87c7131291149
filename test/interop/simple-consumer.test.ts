/** Interop: the official Node client's SimpleConsumer (rocketmq-client-nodejs 1.0.8) against Vela. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer, type MessageView, type SimpleConsumer } from 'rocketmq-client-nodejs';
import { sleep } from '../helpers.js';
import {
  MIN_INVISIBLE_MS,
  clientLogger,
  codeOf,
  createGroup,
  createTopic,
  progressOf,
  receiveN,
  simpleConsumer,
  uniqueName,
  startInteropBroker,
  type InteropBroker,
} from './support.js';

const INVALID_RECEIPT_HANDLE = 40013;
const ILLEGAL_INVISIBLE_TIME = 40011;

/** The same message with another receipt handle (e.g. one that has since been superseded). */
function withHandle(m: MessageView, receiptHandle: string): MessageView {
  const copy = Object.create(m) as MessageView;
  Object.defineProperty(copy, 'receiptHandle', { value: receiptHandle });
  return copy;
}

describe('interop: SimpleConsumer', () => {
  let b: InteropBroker;
  let producer: Producer;
  const cleanup: (() => Promise<void>)[] = [];

  before(async () => {
    b = await startInteropBroker();
    producer = new Producer({ endpoints: b.endpoints, namespace: '', logger: clientLogger() });
    await producer.startup();
  });
  after(async () => {
    for (const f of cleanup.reverse()) await f().catch(() => {});
    await producer.shutdown();
    await b.close();
  });

  async function consumer(
    group: string,
    topic: string,
    opts: { filter?: string; awaitDuration?: number } = {},
  ): Promise<SimpleConsumer> {
    const c = await simpleConsumer(b, group, topic, opts);
    cleanup.push(() => c.shutdown());
    return c;
  }

  async function sendN(topic: string, n: number, tag?: string): Promise<string[]> {
    const ids = [];
    for (let i = 0; i < n; i++) {
      const r = await producer.send({
        topic,
        ...(tag ? { tag } : {}),
        body: Buffer.from(`${tag ?? ''}#${i}`),
      });
      ids.push(r.messageId);
    }
    return ids;
  }

  test('receive then ack: the group has consumed it', async () => {
    const topic = await createTopic(b, 'ScAck');
    const group = await createGroup(b, 'GScAck');
    const c = await consumer(group, topic, { awaitDuration: 500 });
    const [id] = await sendN(topic, 1);
    const msgs = await c.receive(10, 10_000);
    assert.equal(msgs.length, 1);
    const m = msgs[0]!;
    assert.equal(m.messageId, id);
    assert.equal(m.deliveryAttempt, 1);
    assert.ok(m.receiptHandle.length > 0);
    // In flight counts as lag until acked.
    assert.deepEqual(progressOf(b, group, topic), { lag: 1, inflight: 1, ready: 0, brokerOffsets: 1 });
    await c.ack(m);
    assert.deepEqual(progressOf(b, group, topic), { lag: 0, inflight: 0, ready: 0, brokerOffsets: 1 });
    assert.deepEqual(await c.receive(10, 10_000), [], 'nothing left for the group');
  });

  test('an empty receive long-polls and wakes up when a message arrives', async () => {
    const topic = await createTopic(b, 'ScPoll');
    const group = await createGroup(b, 'GScPoll');
    const c = await consumer(group, topic, { awaitDuration: 1500 });
    let t = Date.now();
    assert.deepEqual(await c.receive(10, 10_000), []);
    const waited = Date.now() - t;
    assert.ok(waited >= 1400 && waited < 2500, `empty receive waited ${waited} ms (await 1500)`);

    t = Date.now();
    const pending = c.receive(10, 10_000);
    await sleep(300);
    const [id] = await sendN(topic, 1);
    const got = await pending;
    const took = Date.now() - t;
    assert.deepEqual(
      got.map((m) => m.messageId),
      [id],
    );
    assert.ok(took < 1300, `the parked receive answered ${took} ms after it started (send at 300)`);
    await c.ack(got[0]!);
  });

  test('ack twice: the second is refused with INVALID_RECEIPT_HANDLE', async () => {
    const topic = await createTopic(b, 'ScAck2');
    const group = await createGroup(b, 'GScAck2');
    const c = await consumer(group, topic);
    await sendN(topic, 1);
    const [m] = await receiveN(c, 1, { ack: false });
    assert.ok(m);
    await c.ack(m);
    await assert.rejects(c.ack(m), (err) => {
      assert.equal(codeOf(err), INVALID_RECEIPT_HANDLE, String(err));
      return true;
    });
  });

  test('changeInvisibleDuration: new handle acks, the old one is refused', async () => {
    const topic = await createTopic(b, 'ScChange');
    const group = await createGroup(b, 'GScChange');
    const c = await consumer(group, topic);
    await sendN(topic, 1);
    const [m] = await receiveN(c, 1, { ack: false });
    assert.ok(m);
    const oldHandle = m.receiptHandle;
    await c.changeInvisibleDuration(m, 20_000);
    assert.notEqual(m.receiptHandle, oldHandle, 'the client swapped in the returned handle');
    await assert.rejects(c.ack(withHandle(m, oldHandle)), (err) => {
      assert.equal(codeOf(err), INVALID_RECEIPT_HANDLE, String(err));
      return true;
    });
    // A refused ack with a stale handle leaves the live delivery alone.
    assert.equal(progressOf(b, group, topic).inflight, 1);
    await c.ack(m);
    assert.deepEqual(progressOf(b, group, topic), { lag: 0, inflight: 0, ready: 0, brokerOffsets: 1 });
    // The superseded handle can no longer change the invisible time either.
    await assert.rejects(c.changeInvisibleDuration(withHandle(m, oldHandle), 5000), (err) => {
      assert.equal(codeOf(err), INVALID_RECEIPT_HANDLE, String(err));
      return true;
    });
  });

  test('changeInvisibleDuration restarts the clock: the message comes back at the new deadline', async () => {
    const topic = await createTopic(b, 'ScChangeShort');
    const group = await createGroup(b, 'GScChangeShort');
    const c = await consumer(group, topic, { awaitDuration: 3000 });
    const [id] = await sendN(topic, 1);
    const [m] = await receiveN(c, 1, { ack: false, invisibleMs: 30_000 });
    assert.ok(m);
    const before = Date.now();
    await c.changeInvisibleDuration(m, 1000);
    const changed = Date.now();
    const again = await receiveN(c, 1, { ack: false, timeoutMs: 5000 });
    const back = Date.now();
    assert.equal(again.length, 1);
    assert.notEqual(again[0]!.messageId, id, 'a retry is a new message');
    assert.equal(again[0]!.properties.get('ORIGIN_MESSAGE_ID'), id);
    assert.equal(again[0]!.deliveryAttempt, 2);
    assert.ok(back >= before + 1000, `visible again ${back - before} ms after the change (1000 asked)`);
    assert.ok(back <= changed + 1000 + 500, `visible again ${back - changed} ms after the change`);
    // The handle from before the redelivery is dead; the new one acks.
    await assert.rejects(c.ack(m), (err) => codeOf(err) === INVALID_RECEIPT_HANDLE);
    await c.ack(again[0]!);
  });

  test('redelivery after the invisible time: attempt 2, on time', async (t) => {
    const topic = await createTopic(b, 'ScRedeliver');
    const group = await createGroup(b, 'GScRedeliver');
    const c = await consumer(group, topic, { awaitDuration: 3000 });
    const [id] = await sendN(topic, 1);
    const t0 = Date.now();
    const first = await c.receive(1, MIN_INVISIBLE_MS);
    const t1 = Date.now();
    assert.equal(first.length, 1);
    assert.equal(first[0]!.deliveryAttempt, 1);
    // Invisible now: a receive parks until the deadline, then gets it again.
    const second = await c.receive(1, MIN_INVISIBLE_MS);
    const t2 = Date.now();
    assert.equal(second.length, 1, 'redelivered within the long poll');
    const m = second[0]!;
    assert.notEqual(m.messageId, id, 'a retry is a new message');
    assert.equal(m.properties.get('ORIGIN_MESSAGE_ID'), id);
    assert.equal(m.body.toString(), '#0');
    assert.equal(m.deliveryAttempt, 2);
    t.diagnostic(
      `redelivered ${t2 - t1 - MIN_INVISIBLE_MS}..${t2 - t0 - MIN_INVISIBLE_MS} ms after the deadline`,
    );
    assert.ok(t2 >= t0 + MIN_INVISIBLE_MS, `redelivered ${t2 - t0} ms after the receive began`);
    assert.ok(
      t2 <= t1 + MIN_INVISIBLE_MS + 500,
      `redelivered ${t2 - t1 - MIN_INVISIBLE_MS} ms after the deadline`,
    );
    // The first delivery's handle expired with it.
    await assert.rejects(c.ack(first[0]!), (err) => codeOf(err) === INVALID_RECEIPT_HANDLE);
    await c.ack(m);
    assert.equal(progressOf(b, group, topic).lag, 0);
  });

  test('after max attempts the message is in the DLQ, which the same client can consume', async () => {
    const topic = await createTopic(b, 'ScDlq');
    const group = uniqueName('GScDlq');
    await b.running.broker.groups.upsert(group, { retryMaxTimes: 2 });
    const c = await consumer(group, topic, { awaitDuration: 3000 });
    const [id] = await sendN(topic, 1);
    // Never acked: each delivery comes back after its invisible time, three in all (retryMaxTimes 2).
    const deliveries = await receiveN(c, 3, { invisibleMs: MIN_INVISIBLE_MS, ack: false, timeoutMs: 15_000 });
    assert.deepEqual(
      deliveries.map((m) => m.deliveryAttempt),
      [1, 2, 3],
    );
    assert.ok(deliveries.every((m) => m.body.toString() === '#0'));
    // The last attempt expires into the DLQ, not back to the group.
    assert.deepEqual(await c.receive(1, MIN_INVISIBLE_MS), [], 'no fourth delivery');
    const dlq = await consumer(group, `%DLQ%${group}`, { awaitDuration: 1000 });
    const [dead] = await receiveN(dlq, 1, { timeoutMs: 10_000 });
    assert.ok(dead, 'the dead letter is consumable by the group');
    assert.equal(dead.messageId, id, 'a dead letter keeps its original message id');
    assert.equal(dead.body.toString(), '#0');
    assert.equal(progressOf(b, group, topic).inflight, 0);
  });

  test('an invisible duration below the broker minimum is refused', async () => {
    const topic = await createTopic(b, 'ScIllegal');
    const group = await createGroup(b, 'GScIllegal');
    const c = await consumer(group, topic);
    await sendN(topic, 1);
    await assert.rejects(c.receive(1, MIN_INVISIBLE_MS / 2), (err) => {
      assert.equal(codeOf(err), ILLEGAL_INVISIBLE_TIME, String(err));
      return true;
    });
    // Nothing was taken by the refused receive.
    assert.equal(progressOf(b, group, topic).inflight, 0);
    assert.equal((await receiveN(c, 1)).length, 1);
  });

  test('tag filtering: a TagA subscription gets only TagA', async () => {
    const topic = await createTopic(b, 'ScTag');
    const groupA = await createGroup(b, 'GScTagA');
    const groupAll = await createGroup(b, 'GScTagAll');
    const groupAorC = await createGroup(b, 'GScTagAorC');
    const ca = await consumer(groupA, topic, { filter: 'TagA', awaitDuration: 500 });
    const call = await consumer(groupAll, topic, { filter: '*', awaitDuration: 500 });
    const cac = await consumer(groupAorC, topic, { filter: 'TagA||TagC', awaitDuration: 500 });
    const a: string[] = [];
    const other: string[] = [];
    const c: string[] = [];
    for (let i = 0; i < 4; i++) {
      a.push(...(await sendN(topic, 1, 'TagA')));
      other.push(...(await sendN(topic, 1, 'TagB')));
      c.push(...(await sendN(topic, 1, 'TagC')));
      other.push(...(await sendN(topic, 1)));
    }
    const gotA = await receiveN(ca, 4);
    assert.deepEqual(gotA.map((m) => m.messageId).sort(), [...a].sort());
    assert.ok(gotA.every((m) => m.tag === 'TagA'));
    assert.deepEqual(await ca.receive(32, 10_000), [], 'no other tag for TagA');

    const gotAC = await receiveN(cac, 8);
    assert.deepEqual(gotAC.map((m) => m.messageId).sort(), [...a, ...c].sort());
    assert.deepEqual(await cac.receive(32, 10_000), []);

    const gotAll = await receiveN(call, 16);
    assert.deepEqual(gotAll.map((m) => m.messageId).sort(), [...a, ...c, ...other].sort());
    assert.deepEqual(await call.receive(32, 10_000), []);
  });

  test('two consumers of one group share the messages, never holding one at the same time', async () => {
    const topic = await createTopic(b, 'ScShare');
    const group = await createGroup(b, 'GScShare');
    const c1 = await consumer(group, topic, { awaitDuration: 500 });
    const c2 = await consumer(group, topic, { awaitDuration: 500 });
    const total = 50;
    const ids = await sendN(topic, total);
    const held = new Map<string, string>();
    const deliveries: { id: string; by: string }[] = [];
    const violations: string[] = [];
    const until = Date.now() + 15_000;
    const run = async (c: SimpleConsumer, name: string) => {
      while (deliveries.length < total && Date.now() < until) {
        const batch = await c.receive(4, 30_000);
        for (const m of batch) {
          deliveries.push({ id: m.messageId, by: name });
          const holder = held.get(m.messageId);
          if (holder) violations.push(`${m.messageId} held by ${holder} and ${name}`);
          held.set(m.messageId, name);
        }
        // Work on the batch a little, so the other consumer receives meanwhile.
        await sleep(5);
        for (const m of batch) {
          await c.ack(m);
          held.delete(m.messageId);
        }
      }
    };
    await Promise.all([run(c1, 'c1'), run(c2, 'c2')]);
    assert.deepEqual(violations, []);
    assert.equal(deliveries.length, total, 'each message delivered exactly once');
    assert.deepEqual(deliveries.map((d) => d.id).sort(), [...ids].sort());
    const byC1 = deliveries.filter((d) => d.by === 'c1').length;
    assert.ok(byC1 > 0 && byC1 < total, `both consumers got messages (c1 ${byC1} of ${total})`);
    assert.deepEqual(progressOf(b, group, topic), { lag: 0, inflight: 0, ready: 0, brokerOffsets: total });
  });

  test('FIFO group: a message group is held back while its earlier message is in flight', async () => {
    const topic = await createTopic(b, 'ScFifo', 'FIFO');
    const group = uniqueName('GScFifo');
    await b.running.broker.groups.upsert(group, { consumeMessageOrderly: true });
    const c = await consumer(group, topic, { awaitDuration: 500 });
    const ids: string[] = [];
    for (let seq = 0; seq < 3; seq++) {
      ids.push(
        (await producer.send({ topic, messageGroup: 'G1', body: Buffer.from(`G1#${seq}`) })).messageId,
      );
    }
    const [first] = await c.receive(1, 30_000);
    assert.ok(first);
    assert.equal(first.messageId, ids[0]);
    assert.equal(first.messageGroup, 'G1');
    // G1#0 is in flight: G1#1 and G1#2 must wait (design §3: FIFO blocking per message group).
    const meanwhile = await c.receive(32, 30_000);
    assert.deepEqual(
      meanwhile.map((m) => m.body.toString()),
      [],
      'nothing of G1 while G1#0 is in flight',
    );
    await c.ack(first);
    const next = await receiveN(c, 2);
    assert.deepEqual(
      next.map((m) => m.messageId),
      ids.slice(1),
    );
  });

  test('two groups each receive every message', async () => {
    const topic = await createTopic(b, 'ScGroups');
    const g1 = await createGroup(b, 'GScGroups1');
    const g2 = await createGroup(b, 'GScGroups2');
    const ids = await sendN(topic, 20);
    const c1 = await consumer(g1, topic, { awaitDuration: 500 });
    const c2 = await consumer(g2, topic, { awaitDuration: 500 });
    const [r1, r2] = await Promise.all([receiveN(c1, 20), receiveN(c2, 20)]);
    assert.deepEqual(r1.map((m) => m.messageId).sort(), [...ids].sort());
    assert.deepEqual(r2.map((m) => m.messageId).sort(), [...ids].sort());
    assert.deepEqual(await c1.receive(32, 10_000), []);
    assert.deepEqual(await c2.receive(32, 10_000), []);
  });
});
