/** The delivery history stays within its bounds and attaches each outcome to its own delivery. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeliveryHistory, type DeliveryRecord } from '../../src/broker/delivery-history.js';

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

test('outcomes go to the delivery they belong to, with what follows', () => {
  const h = new DeliveryHistory(10);
  h.delivered('A', 'G', 'T', { source: 0, queueId: 0, offset: 5 }, rec({ queueOffset: 5 }));
  h.delivered('B', 'G', 'T', { source: 0, queueId: 0, offset: 6 }, rec({ queueOffset: 6 }));
  h.settled('G', 'T', [{ source: 0, queueId: 0, offset: 6 }], 'ACKED', 10);
  h.settled('G', 'T', [{ source: 0, queueId: 0, offset: 5 }], 'EXPIRED', 11, 'RETRY');
  // The retry is another stored message (retry topic, queue 1) of the same original id.
  h.delivered(
    'A',
    'G',
    'T',
    { source: 1, queueId: 1, offset: 0 },
    rec({ attempt: 2, retry: true, queueId: 1 }),
  );
  h.settled('G', 'T', [{ source: 1, queueId: 1, offset: 0 }], 'ACKED', 12);
  assert.deepEqual(
    h.of('A').map((r) => [r.attempt, r.outcome, r.next, r.settledAt]),
    [
      [1, 'EXPIRED', 'RETRY', 11],
      [2, 'ACKED', undefined, 12],
    ],
  );
  assert.deepEqual(h.of('B'), [{ ...rec({ queueOffset: 6 }), outcome: 'ACKED', settledAt: 10 }]);
  h.noted('P', rec({ via: 'PULL', retry: true, clientId: 'c2', outcome: 'PULLED', queueId: 3, at: 7 }));
  assert.deepEqual(h.of('P'), [
    rec({ via: 'PULL', retry: true, clientId: 'c2', outcome: 'PULLED', queueId: 3, at: 7 }),
  ]);
  // A settle for a delivery it does not know changes nothing.
  h.settled('G', 'T', [{ source: 0, queueId: 3, offset: 9 }], 'ACKED', 13);
  assert.equal(h.of('nope').length, 0);
});

test('bounded: the oldest deliveries are forgotten, with their open entries', () => {
  const h = new DeliveryHistory(100);
  for (let i = 0; i < 1000; i++) {
    h.delivered(`m${i}`, 'G', 'T', { source: 0, queueId: 0, offset: i }, rec({ queueOffset: i }));
  }
  assert.equal(h.size, 100);
  assert.equal(h.of('m899').length, 0);
  assert.equal(h.of('m900').length, 1);
  assert.equal(h.of('m999').length, 1);
  assert.equal(h.openCount, 100);
  // A forgotten delivery leaves nothing behind to settle.
  h.settled('G', 'T', [{ source: 0, queueId: 0, offset: 0 }], 'ACKED', 5);
  assert.equal(h.openCount, 100);
  for (let a = 1; a <= 10; a++) h.noted('m999', rec({ attempt: a, via: 'PULL', outcome: 'PULLED' }));
  assert.deepEqual(
    h.of('m999').map((r) => r.attempt),
    [1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
  assert.equal(h.openCount, 90, 'the ten oldest open deliveries were overwritten');
  // Turned off: nothing is kept.
  const off = new DeliveryHistory(0);
  off.delivered('x', 'G', 'T', { source: 0, queueId: 0, offset: 0 }, rec());
  assert.equal(off.size, 0);
  assert.equal(off.of('x').length, 0);
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
  ids.forEach((id, i) =>
    h.delivered(id, 'G', 'T', { source: 0, queueId: 0, offset: i }, rec({ messageId: id, queueOffset: i })),
  );
  // A retry: another message id, found by the original one.
  h.delivered(
    ids[0]!,
    'G',
    'T',
    { source: 1, queueId: 0, offset: 0 },
    rec({ messageId: ids[1]!, attempt: 2 }),
  );
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
    h.delivered(id, 'G', 'T', { source: 0, queueId: 1, offset: i }, rec({ messageId: id }));
  }
  assert.equal(h.of('X-126')[0]!.messageId, 'X-126');
  assert.equal(h.of('7F00FF')[0]!.messageId, '7F00FF');
  assert.equal(h.of(ids[0]!).length, 0, 'forgotten once overwritten');
});
