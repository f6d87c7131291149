/** Per-call abort callbacks on a long-lived signal (common/abort-listeners.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { onAbort } from '../../src/common/abort-listeners.js';

test('callbacks run once when the signal aborts; unregistered ones do not', () => {
  const ac = new AbortController();
  const ran: string[] = [];
  onAbort(ac.signal, () => ran.push('a'));
  const off = onAbort(ac.signal, () => ran.push('b'));
  onAbort(ac.signal, () => ran.push('c'));
  off();
  off(); // twice: nothing more happens
  ac.abort();
  ac.abort();
  assert.deepEqual(ran.sort(), ['a', 'c']);
});

test('many calls come and go on one signal: only those registered when it aborts run', () => {
  const ac = new AbortController();
  let ran = 0;
  for (let i = 0; i < 10_000; i++) onAbort(ac.signal, () => ran++)();
  const live = Array.from({ length: 3 }, () => onAbort(ac.signal, () => ran++));
  assert.equal(live.length, 3);
  ac.abort();
  assert.equal(ran, 3);
});

test('on a signal already aborted a callback never runs, and unregistering after the abort is harmless', () => {
  const ac = new AbortController();
  let ran = 0;
  const before = onAbort(ac.signal, () => ran++);
  ac.abort();
  assert.equal(ran, 1);
  before();
  onAbort(ac.signal, () => ran++)();
  onAbort(AbortSignal.abort(), () => ran++);
  assert.equal(ran, 1);
});

test('each signal has its own callbacks', () => {
  const a = new AbortController();
  const b = new AbortController();
  const ran: string[] = [];
  onAbort(a.signal, () => ran.push('a'));
  onAbort(b.signal, () => ran.push('b'));
  b.abort();
  assert.deepEqual(ran, ['b']);
  a.abort();
  assert.deepEqual(ran, ['b', 'a']);
});
