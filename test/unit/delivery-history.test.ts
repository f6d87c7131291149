/** The delivery history stays within its bounds and attaches each outcome to its own delivery. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DeliveryHistory,
  type DeliveredSlot,
  type DeliveryRecord,
} from '../../src/broker/delivery-history.js';
import { ConsumptionObserver } from '../../src/broker/consume-observer.js';
import { BrokerStats } from '../../src/broker/stats.js';

const rec = (over: Partial<DeliveryRecord> = {}): DeliveryRecord => ({
  group: 'G',
  topic: 'T',
  messageId: 'M',
  attempt: 1,
  clientId: 'c1',
  via: 'POP',
  retry: false,
  queueId: 0,
  queueOffset: 0,
  at: 1,
  outcome: 'IN_FLIGHT',
  ...over,
});

/** A delivery of the consumption state, as pop.ts hands it out. */
const slot = (
  source: number,
  queueId: number,
  offset: number,
  attempt = 1,
  clientId = 'c1',
): DeliveredSlot => ({
  source,
  queueId,
  offset,
  historySeq: -1,
  attempt,
  clientId,
});

test('outcomes go to the delivery they belong to, with what follows', () => {
  const h = new DeliveryHistory(10);
  const a = slot(0, 0, 5);
  const b = slot(0, 0, 6);
  h.delivered('A', 'M', 'G', 'T', a, 1);
  h.delivered('B', 'M', 'G', 'T', b, 1);
  h.settled([b], 'ACKED', 10);
  h.settled([a], 'EXPIRED', 11, 'RETRY');
  assert.equal(a.historySeq, -1, 'a settled delivery no longer points at its record');
  // The retry is another stored message (retry topic, queue 1) of the same original id.
  const retry = slot(1, 1, 0, 2);
  h.delivered('A', 'M', 'G', 'T', retry, 1);
  h.settled([retry], 'ACKED', 12);
  assert.deepEqual(
    h.of('A').map((r) => [r.attempt, r.outcome, r.next, r.settledAt, r.retry, r.queueId]),
    [
      [1, 'EXPIRED', 'RETRY', 11, false, 0],
      [2, 'ACKED', undefined, 12, true, 1],
    ],
  );
  assert.deepEqual(h.of('B'), [{ ...rec({ queueOffset: 6 }), outcome: 'ACKED', settledAt: 10 }]);
  h.noted('P', rec({ via: 'PULL', retry: true, clientId: 'c2', outcome: 'PULLED', queueId: 3, at: 7 }));
  assert.deepEqual(h.of('P'), [
    rec({ via: 'PULL', retry: true, clientId: 'c2', outcome: 'PULLED', queueId: 3, at: 7 }),
  ]);
  // Settling again, or a delivery the history never saw (restored after a restart), changes nothing.
  h.settled([b], 'NACKED', 13);
  h.settled([slot(0, 3, 9)], 'ACKED', 13);
  assert.equal(h.of('B')[0]!.outcome, 'ACKED');
  assert.equal(h.of('nope').length, 0);
  // A FIFO delivery handed out again (the same delivery of the state) opens a new record; the first
  // attempt keeps the outcome it was settled with.
  const fifo = slot(0, 2, 0);
  h.delivered('F', 'F', 'G', 'T', fifo, 20);
  h.settled([fifo], 'NACKED', 21, 'FIFO_RETRY');
  fifo.attempt = 2;
  h.delivered('F', 'F', 'G', 'T', fifo, 22);
  assert.deepEqual(
    h.of('F').map((r) => [r.attempt, r.outcome, r.next]),
    [
      [1, 'NACKED', 'FIFO_RETRY'],
      [2, 'IN_FLIGHT', undefined],
    ],
  );
  assert.equal(h.openCount, 1);
});

test('bounded: the oldest deliveries are forgotten, and their outcomes with them', () => {
  const h = new DeliveryHistory(100);
  const slots: DeliveredSlot[] = [];
  for (let i = 0; i < 1000; i++) {
    slots.push(slot(0, 0, i));
    h.delivered(`m${i}`, `m${i}`, 'G', 'T', slots[i]!, 1);
  }
  assert.equal(h.size, 100);
  assert.equal(h.of('m899').length, 0);
  assert.equal(h.of('m900').length, 1);
  assert.equal(h.of('m999').length, 1);
  assert.equal(h.openCount, 100);
  // A forgotten delivery leaves nothing behind to settle: its slot of the ring holds another record.
  h.settled([slots[0]!, slots[850]!], 'ACKED', 5);
  assert.equal(h.openCount, 100);
  assert.ok(h.of('m900')[0]!.outcome === 'IN_FLIGHT' && h.of('m950')[0]!.outcome === 'IN_FLIGHT');
  for (let a = 1; a <= 10; a++) h.noted('m999', rec({ attempt: a, via: 'PULL', outcome: 'PULLED' }));
  assert.deepEqual(
    h.of('m999').map((r) => r.attempt),
    [1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
  assert.equal(h.openCount, 90, 'the ten oldest open deliveries were overwritten');
  // Settling one of them now (its record gone) leaves the record that took its place alone.
  h.settled([slots[905]!], 'ACKED', 6);
  assert.equal(h.openCount, 90);
  assert.deepEqual(
    h.of('m999').map((r) => r.outcome),
    ['IN_FLIGHT', ...Array<string>(10).fill('PULLED')],
  );
  // Turned off: nothing is kept.
  const off = new DeliveryHistory(0);
  const s = slot(0, 0, 0);
  off.delivered('x', 'x', 'G', 'T', s, 1);
  off.settled([s], 'ACKED', 2);
  assert.equal(off.size, 0);
  assert.equal(off.of('x').length, 0);
  assert.equal(s.historySeq, -1);
});

test('message ids of every form come back as they went in (hex ids are kept as bytes)', () => {
  const ids = [
    '01FA163E2D7C3F00010000000A2B3C4D5E', // 5.x client (34 hex digits)
    '7F0000010B6C18B4AAC25D0F3C8A0000', // Remoting client (32)
    'AC1F0001', // short hex
    '0123456789ABCDEF0123456789ABCDEF01234567', // 40: the longest kept as bytes
    '0123456789ABCDEF0123456789ABCDEF0123456789', // 42: kept as a string
    '01fa163e2d7c3f00', // lower case: a string, never changed to upper case
    'ABC', // odd length
    'order-42', // anything else
    'ÄÖ', // not ASCII
    '', // empty
  ];
  const h = new DeliveryHistory(64);
  ids.forEach((id, i) => h.delivered(id, id, 'G', 'T', slot(0, 0, i), 1));
  // A retry: another message id, found by the original one.
  h.delivered(ids[0]!, ids[1]!, 'G', 'T', slot(1, 0, 0, 2), 1);
  ids.forEach((id, i) => {
    const found = h.of(id);
    const expected = i === 0 ? 2 : 1;
    assert.equal(found.length, expected, `deliveries of ${JSON.stringify(id)}`);
    assert.equal(found[0]!.messageId, id);
  });
  assert.equal(h.of(ids[0]!)[1]!.messageId, ids[1], 'the retry keeps its own id');
  assert.equal(h.of('01FA163E2D7C3F00').length, 0, 'a prefix of a kept id is another id');
  assert.equal(h.of('01FA163E2D7C3F00010000000A2B3C4D5F').length, 0, 'so is an id one digit apart');
  // Ring slots are reused: an id kept as bytes is replaced by one kept as a string and back.
  for (let i = 0; i < 128; i++) {
    const id = i % 2 === 0 ? `X-${i}` : `${i.toString(16).toUpperCase().padStart(2, '0')}00FF`;
    h.delivered(id, id, 'G', 'T', slot(0, 1, i), 1);
  }
  assert.equal(h.of('X-126')[0]!.messageId, 'X-126');
  assert.equal(h.of('7F00FF')[0]!.messageId, '7F00FF');
  assert.equal(h.of(ids[0]!).length, 0, 'forgotten once overwritten');
});

test("a pull consumer's reads are remembered as PULLED, a retry under its original id", () => {
  const h = new DeliveryHistory(8);
  const observer = new ConsumptionObserver(new BrokerStats(0), h, () => 42);
  const id = '0A0B0C0D0E0F00112233445566778899AA';
  const retry = { messageId: 'R1', properties: { ORIGIN_MESSAGE_ID: 'O1' } };
  observer.pulled('G', 'T', 5, 'pull-client', [
    { messageId: id, properties: {}, queueOffset: 17, body: Buffer.alloc(3) },
    { ...retry, queueOffset: 18, body: Buffer.alloc(1) },
  ] as never);
  const pulled = rec({ via: 'PULL', outcome: 'PULLED', clientId: 'pull-client', queueId: 5, at: 42 });
  assert.deepEqual(h.of(id), [{ ...pulled, messageId: id, queueOffset: 17 }]);
  assert.deepEqual(h.of('O1'), [{ ...pulled, messageId: 'R1', queueOffset: 18 }]);
  // The same record as one given whole.
  const whole = new DeliveryHistory(8);
  whole.noted(id, { ...pulled, messageId: id, queueOffset: 17 });
  assert.deepEqual(whole.of(id), h.of(id));
});
