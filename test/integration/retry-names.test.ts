/**
 * Retry topics are `%RETRY%<group>+<topic>` (issue 10 §4): `_` made group `a_b` with topic `c` and
 * group `a` with topic `b_c` share one, so one group's retries reached the other. Data directories of
 * earlier versions are carried over: retries waiting under the old names are still delivered, each to
 * its own group, once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Broker } from '../../src/broker/broker.js';
import { ReceiptHandles } from '../../src/broker/receipt-handle.js';
import { isVelaError } from '../../src/common/errors.js';
import { storeOf } from '../../src/internal.js';
import { MessageStore, StateLog } from '../../src/store/index.js';
import { sleep, tempDir } from '../helpers.js';
import { receiveFrom } from '../support/harness.js';

const receive = receiveFrom;
const text = (ds: { message: { body: Buffer } }[]) => ds.map((d) => d.message.body.toString()).sort();

test("one group's retries never reach another whose names join to the same string", async () => {
  const dir = tempDir('vela-retry-names-');
  const broker = await Broker.open({ dataDir: dir.path, consume: { minInvisibleMs: 10 } });
  try {
    for (const t of ['c', 'b_c']) await broker.topics.upsert(t, { readQueueNums: 1, writeQueueNums: 1 });
    await broker.groups.upsert('a_b', {});
    await broker.groups.upsert('a', {});
    await broker.produce.send([{ topic: 'b_c', messageId: 'M-b_c', body: Buffer.from('for a') }]);
    assert.deepEqual(await receive(broker, 'a_b', 'c'), [], 'a_b follows topic c');
    assert.deepEqual(text(await receive(broker, 'a', 'b_c', { invisibleMs: 50 })), ['for a']);
    // Not acked: after 50 ms it is a retry of group a for topic b_c.
    assert.deepEqual(
      text(await receive(broker, 'a', 'b_c', { pollMs: 2000 })),
      ['for a'],
      'a gets its retry',
    );
    assert.deepEqual(await receive(broker, 'a_b', 'c'), [], "a_b never sees a's retry");
    assert.ok(
      storeOf(broker)
        .listQueues()
        .some((q) => q.topic === '%RETRY%a+b_c'),
    );
  } finally {
    await broker.close();
    dir.cleanup();
  }
});

test('retries waiting under the old %RETRY%<group>_<topic> names are delivered after the upgrade, each to its own group, once', async () => {
  const dir = tempDir('vela-retry-upgrade-');
  try {
    const now = Date.now();
    const retry = (
      topic: string,
      queueId: number,
      body: string,
      forTopic: string,
      dueAt: number,
      tries: number,
    ) => ({
      topic,
      queueId,
      messageId: `R-${body}`,
      body: Buffer.from(body),
      properties: { RETRY_TOPIC: forTopic, ORIGIN_MESSAGE_ID: `O-${body}` },
      deliveryTimestamp: dueAt,
      reconsumeTimes: tries,
    });
    // A data directory as an earlier version left it: retries in the old topics …
    const store = await MessageStore.open({ dataDir: join(dir.path, 'store') });
    await store.append([
      retry('%RETRY%G_RT', 1, 'consumed', 'RT', now - 1000, 1),
      retry('%RETRY%G_RT', 1, 'inflight', 'RT', now - 1000, 1),
      retry('%RETRY%G_RT', 1, 'waiting', 'RT', now - 500, 1),
      retry('%RETRY%G_RT', 2, 'later', 'RT', now + 1500, 2),
      // Two groups whose old retry topics were one and the same.
      retry('%RETRY%a_b_c', 0, 'for a_b', 'c', now - 100, 1),
      retry('%RETRY%a_b_c', 0, 'for a', 'b_c', now - 100, 1),
    ]);
    await store.close();
    // … and its state journal, in the JSON it wrote: the group has read retry queue 1 up to offset 2
    // and holds offset 1 (attempt 2) in flight.
    const nonce = 777;
    const log = await StateLog.open(
      { dir: join(dir.path, 'state') },
      { onSnapshot: () => {}, onRecord: () => {} },
    );
    const topic = (name: string) => ({
      name,
      readQueueNums: 1,
      writeQueueNums: 1,
      perm: 6,
      messageType: 'NORMAL',
      attributes: {},
    });
    for (const rec of [
      { k: 'topic', v: topic('RT') },
      { k: 'topic', v: topic('c') },
      { k: 'topic', v: topic('b_c') },
      { k: 'group', v: { name: 'G', retryMaxTimes: 16 } },
      { k: 'group', v: { name: 'a_b' } },
      { k: 'group', v: { name: 'a' } },
      {
        k: 'dlv',
        g: 'G',
        t: 'RT',
        offs: [[1, 1, 2]],
        d: [[1, 1, 1, nonce, 2, now + 3_600_000, 0, 'c1', 0, '']],
      },
    ])
      await log.append(Buffer.from(JSON.stringify(rec)));
    await log.close();

    let broker = await Broker.open({ dataDir: dir.path });
    try {
      const topics = storeOf(broker)
        .listQueues()
        .map((q) => q.topic)
        .filter((t) => t.startsWith('%RETRY%'));
      assert.deepEqual(
        [...new Set(topics)].sort(),
        ['%RETRY%G+RT', '%RETRY%a+b_c', '%RETRY%a_b+c'],
        'old names gone',
      );
      const got = await receive(broker, 'G', 'RT');
      assert.deepEqual(
        text(got),
        ['inflight', 'waiting'],
        'what waited, and what was in flight; not what was consumed',
      );
      assert.deepEqual(got.map((d) => d.deliveryAttempt).sort(), [2, 3]);
      assert.ok(
        got.every(
          (d) => d.message.topic === 'RT' && d.message.properties.ORIGIN_MESSAGE_ID?.startsWith('O-'),
        ),
      );
      // The in-flight delivery's old handle no longer works (it was queued again).
      const handles = await ReceiptHandles.load(dir.path);
      const old = handles.encode('RT', 'G', { queueId: (1 | 0x8000_0000) >>> 0, offset: 1, nonce });
      await assert.rejects(broker.consume.ack('G', 'RT', old), (e) =>
        isVelaError(e, 'INVALID_RECEIPT_HANDLE'),
      );
      for (const d of got) await broker.consume.ack('G', 'RT', d.receiptHandle);
      assert.deepEqual(text(await receive(broker, 'a_b', 'c')), ['for a_b'], 'each group its own');
      assert.deepEqual(text(await receive(broker, 'a', 'b_c')), ['for a']);
      await sleep(Math.max(0, now + 1500 - Date.now()));
      const later = await receive(broker, 'G', 'RT', { pollMs: 2000 });
      assert.deepEqual(text(later), ['later'], 'a later retry keeps its due time');
      for (const d of later) await broker.consume.ack('G', 'RT', d.receiptHandle);
      await broker.close();
      // Carried over once: a restart brings nothing back.
      broker = await Broker.open({ dataDir: dir.path });
      assert.deepEqual(await receive(broker, 'G', 'RT'), []);
    } finally {
      await broker.close();
    }
  } finally {
    dir.cleanup();
  }
});
