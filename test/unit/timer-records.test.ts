/** Recall handles, transaction ids, record shapes and the schedule heap. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScheduleHeap } from '../../src/broker/timer/schedule-heap.js';
import {
  REAL_QID,
  REAL_TOPIC,
  SCHEDULE_POSITION,
  TIMER_TOPIC,
  decodeRecallHandle,
  deliveryRecord,
  encodeRecallHandle,
  realQueueOf,
  scheduleRecord,
} from '../../src/broker/timer/schedule-records.js';
import {
  HALF_OFFSET,
  HALF_TOPIC,
  commitRecord,
  decodeTransactionId,
  encodeTransactionId,
  halfRecord,
  producerView,
} from '../../src/broker/transaction/half-records.js';
import type { StoredMessage } from '../../src/store/index.js';

test('recall handles round-trip; anything else is refused', () => {
  const h = { due: 1_700_000_000_123, position: 98_765_432_100, messageId: '0102FC0000 with space' };
  assert.deepEqual(decodeRecallHandle(encodeRecallHandle(h)), h);
  for (const bad of [
    '',
    'not base64!',
    Buffer.from('v2 1 2 x').toString('base64url'),
    Buffer.from('v1 1 2').toString('base64url'),
    Buffer.from('v1 -1 2 x').toString('base64url'),
    Buffer.from('v1 99999999999999999 2 x').toString('base64url'),
    42,
    undefined,
  ]) {
    assert.equal(decodeRecallHandle(bad), null, String(bad));
  }
});

test('transaction ids round-trip; anything else is refused', () => {
  const id = encodeTransactionId(12345, 2 ** 40 + 7);
  assert.match(id, /^[0-9A-F]{32}$/);
  assert.deepEqual(decodeTransactionId(id), { offset: 12345, position: 2 ** 40 + 7 });
  for (const bad of [
    '',
    'x'.repeat(32),
    '0000000000000abc0000000000000001',
    id.slice(1),
    `${id}0`,
    'FFFFFFFFFFFFFFFF0000000000000000',
  ]) {
    assert.equal(decodeTransactionId(bad), null, bad);
  }
});

function stored(over: Partial<StoredMessage>): StoredMessage {
  return {
    topic: 'T',
    queueId: 0,
    queueOffset: 0,
    messageId: 'M',
    body: Buffer.from('b'),
    tag: 'tag',
    keys: ['k'],
    messageGroup: '',
    properties: {},
    bornTimestamp: 1,
    bornHost: 'h',
    storeTimestamp: 2,
    deliveryTimestamp: 0,
    reconsumeTimes: 0,
    sysFlag: 3,
    logPosition: 500,
    size: 100,
    ...over,
  };
}

test('a delay message waits on the timer topic and is delivered as itself, marked with its origin', () => {
  const input = {
    topic: 'Orders',
    queueId: 5,
    messageId: 'M',
    body: Buffer.from('b'),
    properties: { u: '1' },
  };
  const wait = scheduleRecord(input, 9_000);
  assert.equal(wait.topic, TIMER_TOPIC);
  assert.equal(wait.queueId, 0);
  assert.equal(wait.deliveryTimestamp, 9_000);
  assert.deepEqual(wait.properties, { u: '1', [REAL_TOPIC]: 'Orders', [REAL_QID]: '5' });
  const m = stored({ topic: TIMER_TOPIC, properties: wait.properties!, deliveryTimestamp: 9_000 });
  assert.equal(realQueueOf(m, 8), 5);
  assert.equal(realQueueOf(m, 4), 1, 'fitted to a topic that lost queues');
  const out = deliveryRecord(m, 5);
  assert.equal(out.topic, 'Orders');
  assert.equal(out.messageId, 'M');
  assert.equal(out.deliveryTimestamp, 9_000);
  assert.deepEqual(out.properties, { u: '1', [SCHEDULE_POSITION]: '500' });
});

test('a half message keeps its real topic aside; its commit and its check view show the original', () => {
  const input = { topic: 'Pay', queueId: 2, messageId: 'M', body: Buffer.from('b'), properties: { u: '1' } };
  const half = halfRecord(input, 'client-1', 2500);
  assert.equal(half.topic, HALF_TOPIC);
  assert.equal(half.properties!.CHECK_IMMUNITY_TIME_IN_SECONDS, '3');
  const m = stored({ topic: HALF_TOPIC, properties: half.properties!, queueOffset: 7 });
  assert.deepEqual(producerView(m).properties, { u: '1' });
  assert.equal(producerView(m).topic, 'Pay');
  const c = commitRecord(m, 2);
  assert.equal(c.topic, 'Pay');
  assert.deepEqual(c.properties, { u: '1', [HALF_OFFSET]: '7' });
});

test('the schedule heap pops in (due, position) order, through growth and heapify', () => {
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const entries = Array.from({ length: 5000 }, (_, i) => ({
    due: Math.floor(rnd() * 1000),
    position: i,
    label: i % 3,
  }));
  const half = entries.slice(0, 2500);
  const h = ScheduleHeap.from({
    length: half.length,
    due: Float64Array.from(half.map((e) => e.due)),
    position: Float64Array.from(half.map((e) => e.position)),
    label: Uint32Array.from(half.map((e) => e.label)),
  });
  for (const e of entries.slice(2500)) h.push(e.due, e.position, e.label);
  assert.equal(h.size, 5000);
  assert.ok(h.has(4999) && !h.has(5000));
  assert.equal(h.earliestOf(2), Math.min(...entries.filter((e) => e.label === 2).map((e) => e.due)));
  const out = [];
  while (h.size > 0) out.push(h.pop()!);
  const sorted = [...entries].sort((a, b) => a.due - b.due || a.position - b.position);
  assert.deepEqual(out, sorted);
  assert.equal(h.pop(), undefined);
  assert.equal(h.peekDue(), Infinity);
});
