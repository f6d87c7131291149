/**
 * The slot set long-lived owners use for items that come and go per call (common/slot-set.ts): it
 * must behave as the Set it replaces, and a stale handle must not take out another item.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SlotSet } from '../../src/common/slot-set.js';

test('a slot set adds, removes by handle, reuses freed slots, and counts what it holds', () => {
  const s = new SlotSet<{ n: number }>();
  const a = { n: 1 };
  const b = { n: 2 };
  const c = { n: 3 };
  const ha = s.add(a);
  const hb = s.add(b);
  assert.equal(s.size, 2);
  s.remove(ha);
  assert.equal(s.size, 1);
  assert.deepEqual(s.values(), [b]);
  const hc = s.add(c);
  assert.equal(hc, ha, 'the freed slot is used again');
  assert.deepEqual(
    s.values().map((x: { n: number }) => x.n),
    [3, 2],
  );
  s.remove(hb);
  s.remove(hb); // removed already: nothing happens
  assert.equal(s.size, 1);
  assert.deepEqual(s.values(), [c]);
  s.clear();
  assert.equal(s.size, 0);
  assert.deepEqual(s.values(), []);
});

test('values() is a copy: removing while going through it visits every item once', () => {
  const s = new SlotSet<string>();
  const handles = ['a', 'b', 'c'].map((x) => s.add(x));
  const seen: string[] = [];
  for (const v of s.values()) {
    seen.push(v);
    for (const h of handles) s.remove(h);
  }
  assert.deepEqual(seen.sort(), ['a', 'b', 'c']);
  assert.equal(s.size, 0);
});

test('each() goes through the items in place, skipping one removed meanwhile', () => {
  const s = new SlotSet<string>();
  const handles = new Map(['a', 'b', 'c'].map((x) => [x, s.add(x)] as const));
  const seen: string[] = [];
  s.each((x) => {
    seen.push(x);
    if (x === 'a') s.remove(handles.get('b')!); // removed before it is reached: not visited
    s.remove(handles.get(x)!); // removing itself is fine
  });
  assert.deepEqual(seen, ['a', 'c']);
  assert.equal(s.size, 0);
});
