/** The held window of a FIFO queue: bounded, and `low` follows what is settled. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FIFO_SPAN, FIFO_WINDOW, FifoQueue, fifoKey } from '../../../src/broker/consume/fifo.js';

test('reading stops a window of held messages ahead, or a span past the oldest unsettled offset', () => {
  const fq = new FifoQueue(10);
  assert.ok(fq.canRead(10));
  assert.ok(!fq.canRead(10 + FIFO_SPAN), 'too far past low');
  for (let i = 0; i < FIFO_WINDOW; i++) fq.hold({ offset: 11 + i, key: fifoKey(0, 'A') });
  assert.ok(!fq.canRead(12), 'the window is full');
});

test('low moves past settled offsets, never past one held or in flight', () => {
  const fq = new FifoQueue(0);
  const inFlight = new Set([2]);
  fq.settle(0, 5, (o) => inFlight.has(o));
  assert.equal(fq.low, 1, '0 settled');
  fq.settle(1, 5, (o) => inFlight.has(o));
  assert.equal(fq.low, 2, 'stops at 2, in flight');
  fq.settle(3, 5, (o) => inFlight.has(o));
  assert.equal(fq.low, 2, '3 settled above an unsettled 2 is remembered');
  assert.ok(fq.settled.has(3));
  inFlight.delete(2);
  fq.hold({ offset: 4, key: 'k' });
  fq.settle(2, 5, (o) => inFlight.has(o));
  assert.equal(fq.low, 4, 'moves over 2 and 3, stops at the held 4');
  assert.ok(!fq.settled.has(3), 'settled offsets below low are forgotten');
});

test('a key with held messages releases only its first; others of the key stay behind it', () => {
  const fq = new FifoQueue(0);
  for (const [offset, g] of [
    [0, 'A'],
    [1, 'B'],
    [2, 'A'],
    [3, 'C'],
  ] as const)
    fq.hold({ offset, key: fifoKey(0, g) });
  assert.ok(fq.holds(fifoKey(0, 'A')) && !fq.holds(fifoKey(0, 'D')));
  const free = (k: string) => k !== fifoKey(0, 'B');
  assert.deepEqual(
    fq.release(10, free).map((e) => e.offset),
    [0, 3],
    'A (first of its key) and C; B is blocked; the second A waits behind the first',
  );
  assert.deepEqual(
    fq.held.map((e) => e.offset),
    [1, 2],
  );
  assert.ok(fq.holds(fifoKey(0, 'A')), 'A still has one held');
  assert.deepEqual(
    fq.release(1, () => true).map((e) => e.offset),
    [1],
    'at most max',
  );
  assert.deepEqual(
    fq.release(10, () => true).map((e) => e.offset),
    [2],
  );
  assert.ok(!fq.holds(fifoKey(0, 'A')));
});
