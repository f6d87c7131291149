/**
 * Delivery keys (consume/delivery.ts): a number for the (source, queue, offset) triples a queue
 * reaches in practice, a string past them. Two deliveries must never share a key, whichever form
 * each of them takes, or an ack of one would settle the other.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Source, deliveryKey, type DeliveryKey } from '../../../src/broker/consume/delivery.js';

const SOURCES = [Source.TOPIC, Source.RETRY];

test('delivery keys are numbers for ordinary queues and offsets, strings past them', () => {
  assert.equal(typeof deliveryKey(Source.TOPIC, 0, 0), 'number');
  assert.equal(typeof deliveryKey(Source.RETRY, 1023, 2 ** 42 - 1), 'number');
  assert.equal(Number.isSafeInteger(deliveryKey(Source.RETRY, 1023, 2 ** 42 - 1)), true);
  assert.equal(typeof deliveryKey(Source.TOPIC, 1024, 5), 'string');
  assert.equal(typeof deliveryKey(Source.TOPIC, 3, 2 ** 42), 'string');
  assert.equal(typeof deliveryKey(Source.TOPIC, 3, Number.MAX_SAFE_INTEGER), 'string');
  // The same triple always gives the same key (the map finds what the hand-out stored).
  assert.equal(deliveryKey(Source.RETRY, 7, 123_456_789), deliveryKey(Source.RETRY, 7, 123_456_789));
});

test('no two triples share a key, across the edges of the numeric range', () => {
  const queues = [0, 1, 2, 511, 1022, 1023, 1024, 1025, 4096];
  const offsets = [
    0,
    1,
    2,
    1023,
    1024,
    2047,
    2048,
    2 ** 31,
    2 ** 42 - 2,
    2 ** 42 - 1,
    2 ** 42,
    2 ** 42 + 1,
    2 ** 52,
  ];
  const seen = new Map<DeliveryKey, string>();
  for (const source of SOURCES)
    for (const q of queues)
      for (const o of offsets) {
        const key = deliveryKey(source, q, o);
        const triple = `${source}/${q}/${o}`;
        assert.equal(seen.get(key), undefined, `${triple} shares its key with ${seen.get(key)}`);
        seen.set(key, triple);
      }
  assert.equal(seen.size, SOURCES.length * queues.length * offsets.length);
});
