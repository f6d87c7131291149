/**
 * The deadline heap holds what is live, not the history: settled deliveries do not keep their entries
 * until their deadline. Deadlines beyond setTimeout's range neither fire early nor spin.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeadlineHeap } from '../../../src/broker/consume/deadline-heap.js';
import { MAX_TIMER_MS, Timers } from '../../../src/common/timers.js';
import { openCore, T0 } from './harness.js';

test('stale entries are swept: the heap stays proportional to what is live', () => {
  const live = new Set<number>();
  const fired: number[] = [];
  let now = 0;
  const heap = new DeadlineHeap<number>(
    () => now,
    (n) => live.has(n) && fired.push(n), // a stale item does nothing when it comes due
    (n) => !live.has(n),
  );
  try {
    for (let i = 0; i < 100_000; i++) {
      live.add(i);
      heap.push(1_000_000 + (i % 977), i);
      if (i >= 10) {
        live.delete(i - 10); // settled long before its deadline
        heap.noteStale();
      }
    }
    // Swept within a few dozen settlements: entries of settled deliveries do not live long enough
    // to be moved to the old generation.
    assert.ok(heap.size <= 128, `${heap.size} entries for 10 live deliveries`);
    now = 2_000_000;
    heap.fireDue();
    assert.deepEqual(
      fired.sort((a, b) => a - b),
      [...live].sort((a, b) => a - b),
      'the live ones still fire',
    );
  } finally {
    heap.close();
  }
});

test('items fire in deadline order, ties and sweeps included', () => {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const live = new Set<number>();
  const fired: [number, number][] = [];
  let now = 0;
  const heap = new DeadlineHeap<number>(
    () => now,
    (n, at) => live.has(n) && fired.push([at, n]),
    (n) => !live.has(n),
  );
  try {
    const due = new Map<number, number>();
    for (let i = 0; i < 5_000; i++) {
      const at = 1_000 + Math.floor(rand() * 500); // many ties
      live.add(i);
      due.set(i, at);
      heap.push(at, i);
      if (rand() < 0.6) {
        const gone = Math.floor(rand() * i);
        if (live.delete(gone)) heap.noteStale();
      }
    }
    for (now = 1_000; now < 1_600; now += 37) heap.fireDue();
    assert.equal(fired.length, live.size, 'every live item fired once');
    for (let k = 1; k < fired.length; k++) assert.ok(fired[k - 1]![0] <= fired[k]![0], `in order at ${k}`);
    for (const [at, n] of fired) assert.equal(at, due.get(n), `item ${n} fired with its own deadline`);
  } finally {
    heap.close();
  }
});

test('acked deliveries with a 12 h invisible time leave the consumption heap', async () => {
  const core = await openCore();
  try {
    await core.topics.upsert('HT', { readQueueNums: 1, writeQueueNums: 1 });
    await core.groups.upsert('HG', {});
    for (let round = 0; round < 40; round++) {
      await core.send(Array.from({ length: 100 }, () => ({ topic: 'HT' })));
      const got = await core.receive('HG', 'HT', { batch: 100, invisibleMs: 12 * 3600_000 });
      assert.equal(got.length, 100);
      const refused = await core.acks.ackMany(
        'HG',
        'HT',
        got.map((d) => d.receiptHandle),
      );
      assert.ok(refused.every((e) => e === null));
    }
    assert.ok(core.ctx.heap.size <= 2048, `${core.ctx.heap.size} heap entries after 4,000 acks`);
  } finally {
    await core.close();
  }
});

test('a deadline beyond the range of setTimeout neither fires early nor spins', async () => {
  let calls = 0;
  const start = Date.now();
  const now = () => {
    calls++;
    return Date.now();
  };
  const fired: string[] = [];
  const heap = new DeadlineHeap<string>(now, (s) => fired.push(s));
  try {
    heap.push(start + MAX_TIMER_MS + 60_000, 'far'); // ~24.9 days
    heap.push(start + 30 * 24 * 3600_000, 'farther');
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(fired, []);
    assert.ok(calls < 5, `the clock was read ${calls} times in 200 ms: the timer spins`);
  } finally {
    heap.close();
  }
});

test('a FIFO retry interval beyond setTimeout range waits, it is not fired at once', async () => {
  const core = await openCore();
  try {
    await core.topics.upsert('FT', {
      readQueueNums: 1,
      writeQueueNums: 1,
      attributes: { 'message.type': 'FIFO' },
    });
    const interval = 30 * 24 * 3600_000; // 30 days
    await core.groups.upsert('FG', { consumeMessageOrderly: true, fifoRetryIntervalMs: interval });
    await core.send([{ topic: 'FT', messageGroup: 'A' }]);
    // A push consumer's delivery (auto-renewed) that expires waits the group's FIFO retry interval.
    const [d] = await core.receive('FG', 'FT', { invisibleMs: 1000, autoRenew: true });
    await core.advance(1000); // the attempt fails: waits 30 days
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await core.receive('FG', 'FT'), [], 'not redelivered at once');
    await core.advance(interval);
    const again = await core.receive('FG', 'FT');
    assert.equal(again.length, 1);
    assert.equal(again[0]!.message.body.toString(), d!.message.body.toString());
    assert.ok(core.clock.now() >= T0 + interval);
  } finally {
    await core.close();
  }
});

test('Timers: a timeout beyond the range of one Node timer does not fire after 1 ms', async () => {
  const timers = new Timers();
  let fired = false;
  try {
    timers.timeout(() => (fired = true), MAX_TIMER_MS + 1000);
    timers.timeout(() => (fired = true), 40 * 24 * 3600_000);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(fired, false);
    assert.equal(timers.pending, 2);
  } finally {
    timers.clear();
  }
});
