/**
 * The collections long-lived owners use for entries that come and go per call (common/id-map.ts,
 * number-map.ts, kept-key-map.ts, ordered-list.ts): each must behave as the Map, Set or ordered Set
 * it replaces. What they do for the garbage collector is in young-garbage.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IdMap } from '../../src/common/id-map.js';
import { NumberMap } from '../../src/common/number-map.js';
import { KeptKeyMap } from '../../src/common/kept-key-map.js';
import { OrderedList } from '../../src/common/ordered-list.js';
import { DeliveryTable, deliveryKey, freshDelivery, Source } from '../../src/broker/consume/delivery.js';

/** A small deterministic generator (tests must not depend on Math.random). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

test('IdMap agrees with a Map through random sets and deletes of stream-like ids, across growth', () => {
  const m = new IdMap<string>();
  const ref = new Map<number, string>();
  const rnd = lcg(1);
  let next = 1;
  for (let i = 0; i < 20_000; i++) {
    const r = rnd();
    if (r < 0.55 || ref.size === 0) {
      // Mostly new odd ids, as a client opens streams; now and then an old id is set again.
      const id = r < 0.5 || ref.size === 0 ? (next += 2) : [...ref.keys()][Math.floor(rnd() * ref.size)]!;
      m.set(id, `v${i}`);
      ref.set(id, `v${i}`);
    } else {
      const keys = [...ref.keys()];
      const id = keys[Math.floor(rnd() * keys.length)]!;
      assert.equal(m.delete(id), true);
      ref.delete(id);
      assert.equal(m.delete(id), false, 'a second delete finds nothing');
    }
    if (i % 997 === 0) {
      assert.equal(m.size, ref.size);
      for (const [k, v] of ref) assert.equal(m.get(k), v);
      assert.deepEqual(m.values().sort(), [...ref.values()].sort());
    }
  }
  assert.equal(m.get(next + 2), undefined);
  assert.equal(m.has(next + 2), false);
  m.clear();
  assert.equal(m.size, 0);
  assert.deepEqual(m.values(), []);
  assert.throws(() => m.set(0, 'x'), RangeError, 'stream id 0 is the connection, never a stream');
});

test('IdMap keeps ids that collide in one run findable when one before them goes (backward shift)', () => {
  const m = new IdMap<number>(4); // 8 slots: ids 1, 17, 33 share a home slot
  for (const id of [1, 17, 33, 3, 49]) m.set(id, id);
  m.delete(1);
  for (const id of [17, 33, 3, 49]) assert.equal(m.get(id), id);
  m.delete(33);
  for (const id of [17, 3, 49]) assert.equal(m.get(id), id);
  assert.equal(m.get(33), undefined);
  assert.equal(m.size, 3);
});

test('NumberMap agrees with a Map through random operations, with keys up to 2^53 - 1, growing and shrinking', () => {
  const m = new NumberMap<number>();
  const ref = new Map<number, number>();
  const rnd = lcg(7);
  const keyOf = () =>
    rnd() < 0.1 ? Number.MAX_SAFE_INTEGER - Math.floor(rnd() * 1000) : Math.floor(rnd() * 5000) * 2048 + 3;
  for (let i = 0; i < 50_000; i++) {
    const phase = Math.floor(i / 10_000) % 2; // fill, then drain: both resizes
    const k = keyOf();
    if (rnd() < (phase === 0 ? 0.7 : 0.2)) {
      m.set(k, i);
      ref.set(k, i);
    } else {
      assert.equal(m.delete(k), ref.delete(k));
    }
    if (i % 1999 === 0) {
      assert.equal(m.size, ref.size);
      for (const [key, v] of ref) assert.equal(m.get(key), v);
      assert.deepEqual(
        m.entries().sort((a, b) => a[0] - b[0]),
        [...ref.entries()].sort((a, b) => a[0] - b[0]),
      );
    }
  }
  assert.equal(m.has(0), ref.has(0));
  m.set(0, 1);
  assert.equal(m.get(0), 1, 'key 0 is a key like any other');
  for (const bad of [-1, 0.5, 2 ** 53, Number.NaN]) assert.throws(() => m.set(bad, 1), RangeError);
  m.clear();
  assert.equal(m.size, 0);
});

test('KeptKeyMap behaves as a Map and stays bounded when keys do not come back', () => {
  const m = new KeptKeyMap<string, number>();
  m.set('a', 1).set('b', 2);
  assert.equal(m.size, 2);
  assert.equal(m.delete('a'), true);
  assert.equal(m.delete('a'), false);
  assert.equal(m.has('a'), false);
  assert.equal(m.get('a'), undefined);
  assert.equal(m.size, 1);
  m.set('a', 3);
  assert.deepEqual(m.entries().sort(), [
    ['a', 3],
    ['b', 2],
  ]);
  assert.deepEqual(m.keys().sort(), ['a', 'b']);
  assert.deepEqual(m.values().sort(), [2, 3]);
  assert.throws(() => m.set('c', undefined as unknown as number), TypeError);
  // A key per call, never reused: what the map holds stays within twice the live keys plus a slack.
  for (let i = 0; i < 10_000; i++) {
    m.set(`once-${i}`, i);
    m.delete(`once-${i}`);
  }
  assert.equal(m.size, 2);
  assert.ok(m.idleKeys <= 2 * m.size + 64, `${m.idleKeys} keys kept without a value`);
  for (const k of m.keys()) m.delete(k); // keys() is a copy: deleting while going through it is fine
  assert.equal(m.size, 0);
  m.clear();
  assert.equal(m.idleKeys, 0);
});

test('OrderedList keeps insertion order, removes by node, and ignores a node removed already', () => {
  const l = new OrderedList<string>();
  const a = l.push('a');
  const b = l.push('b');
  const c = l.push('c');
  assert.equal(l.first(), 'a');
  assert.equal(l.remove(b), true);
  assert.equal(l.remove(b), false);
  assert.deepEqual(l.values(), ['a', 'c']);
  l.remove(a);
  assert.equal(l.first(), 'c');
  const d = l.push('d');
  assert.deepEqual(l.values(), ['c', 'd']);
  assert.equal(
    l.find((x) => x !== 'c'),
    'd',
  );
  l.remove(d);
  l.remove(c);
  assert.equal(l.size, 0);
  assert.equal(l.first(), undefined);
  assert.deepEqual(l.values(), []);
  assert.equal(b.value, undefined, 'a removed node points at nothing');
  assert.equal(b.next, undefined);
  assert.equal(b.prev, undefined);
});

test('DeliveryTable holds numeric and string delivery keys alike, and iterates over a copy', () => {
  const t = new DeliveryTable();
  const numeric = deliveryKey(Source.TOPIC, 3, 42);
  const huge = deliveryKey(Source.RETRY, 5000, 2 ** 50); // does not fit a number: a string key
  assert.equal(typeof numeric, 'number');
  assert.equal(typeof huge, 'string');
  const d1 = freshDelivery(Source.TOPIC, 3, 42, 1, '');
  const d2 = freshDelivery(Source.RETRY, 5000, 2 ** 50, 1, '');
  t.set(numeric, d1).set(huge, d2);
  assert.equal(t.size, 2);
  assert.equal(t.get(numeric), d1);
  assert.equal(t.get(huge), d2);
  assert.equal(t.has(huge), true);
  const seen: unknown[] = [];
  for (const [k, d] of t) {
    seen.push(k);
    t.delete(k); // settling while going through them
    assert.ok(d === d1 || d === d2);
  }
  assert.deepEqual(seen.sort(), [numeric, huge].sort());
  assert.equal(t.size, 0);
  assert.deepEqual(t.values(), []);
});
