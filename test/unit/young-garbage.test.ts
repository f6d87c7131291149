/**
 * Objects that live for one call must die young. A long-lived structure that keeps reaching them
 * after they are gone — a hash table V8 replaced (kept-key-map.ts), an object whose accessors gave it
 * a hidden class of its own (long-poll.ts) — makes every young-generation collection promote them, and
 * the process then spends its time in full collections: the broker's and the SDK's tail latency
 * (docs/benchmarks.md, twenty-third session).
 *
 * Each case churns a long-lived structure with call-sized garbage (a fixed number of operations, no
 * timing) after a warm-up and a quiet spell that make the structure old, and measures what V8's
 * scavenges move to the old generation (`v8.GCProfiler`). Before the long-poll fix, parking and
 * cancelling a request promoted ~1.7 MB per scavenge; a `Map` in the IdMap case, ~7.9 MB; a structure
 * that holds nothing it let go of promotes almost none.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import { LongPollWaiters, ParkingLot, type Parking } from '../../src/broker/consume/long-poll.js';
import { IdMap } from '../../src/common/id-map.js';
import { NumberMap } from '../../src/common/number-map.js';
import { KeptKeyMap } from '../../src/common/kept-key-map.js';
import { OrderedList, type ListNode } from '../../src/common/ordered-list.js';
import { SlotSet } from '../../src/common/slot-set.js';

/** Most a scavenge may promote, on average, while the structure churns. */
const LIMIT_BYTES = 150_000;

/** A call's worth of garbage: an object graph of ~1 KB. */
function callGarbage(i: number): { i: number; parts: number[]; label: string } {
  return { i, parts: new Array<number>(100).fill(i), label: `call-${i}` };
}

/** Average bytes the old space grew by in each scavenge while `op` ran `ops` times (after a warm-up). */
function promotedPerScavenge(op: (i: number) => void, ops = 300_000): { scavenges: number; bytes: number } {
  for (let i = 0; i < 100_000; i++) op(i);
  // A quiet spell: other work allocates while the structure is left alone, so that what it holds now
  // (its tables, its arrays) is promoted, as in a process that was idle for a second.
  let sink = 0;
  for (let i = 0; i < 200_000; i++) sink += callGarbage(i).parts.length;
  assert.ok(sink > 0);
  const profiler = new v8.GCProfiler();
  profiler.start();
  for (let i = 0; i < ops; i++) op(i);
  const report = profiler.stop();
  let scavenges = 0;
  let promoted = 0;
  const oldSpace = (s: v8.HeapSpaceStatistics[]) =>
    s.find((x) => x.spaceName === 'old_space')?.spaceUsedSize ?? 0;
  for (const s of report?.statistics ?? []) {
    if (s.gcType !== 'Scavenge') continue;
    scavenges++;
    promoted += oldSpace(s.afterGC.heapSpaceStatistics) - oldSpace(s.beforeGC.heapSpaceStatistics);
  }
  return { scavenges, bytes: scavenges > 0 ? promoted / scavenges : 0 };
}

function check(name: string, r: { scavenges: number; bytes: number }): void {
  assert.ok(r.scavenges >= 5, `${name}: only ${r.scavenges} scavenges ran; the case allocates too little`);
  assert.ok(
    r.bytes < LIMIT_BYTES,
    `${name}: ${Math.round(r.bytes / 1000)} KB promoted per scavenge (at most ${LIMIT_BYTES / 1000} KB)`,
  );
}

test('parking and cancelling long-poll requests lets what they referenced die young', () => {
  const waiters = new LongPollWaiters(new ParkingLot({ total: 10_000, perClient: 1_000, perGroup: 1_000 }));
  const pull = { client: 'c', group: 'g' };
  const receive = { client: 'c', group: 'g', wakeKey: 'g\u0000*', early: true };
  let prev: Parking | undefined;
  let held: unknown;
  check(
    'long-poll',
    promotedPerScavenge((i) => {
      held = callGarbage(i);
      prev?.cancel();
      prev = waiters.park('topic', 60_000, i % 2 === 0 ? pull : receive);
      if (i % 3 === 0) prev.passOn();
    }),
  );
  prev?.cancel();
  assert.equal(waiters.parked, 0);
  assert.ok(held);
});

test('an IdMap of streams in flight lets each stream die young once deleted', () => {
  const m = new IdMap<object>();
  let id = 1;
  check(
    'id-map',
    promotedPerScavenge(() => {
      m.set(id, callGarbage(id));
      if (id > 16) m.delete(id - 16); // ~8 streams in flight
      id += 2;
    }),
  );
});

test('a NumberMap of deliveries in flight lets each delivery die young once settled', () => {
  const m = new NumberMap<object>();
  let k = 0;
  check(
    'number-map',
    promotedPerScavenge(() => {
      m.set(k * 2048 + 6, callGarbage(k));
      if (k >= 64) m.delete((k - 64) * 2048 + 6);
      k++;
    }),
  );
});

test('a KeptKeyMap whose values come and go per call lets each value die young', () => {
  const m = new KeptKeyMap<string, object>();
  const keys = ['a', 'b', 'c', 'd'];
  check(
    'kept-key-map',
    promotedPerScavenge((i) => {
      const key = keys[i & 3]!;
      if (m.has(key)) m.delete(key);
      else m.set(key, callGarbage(i));
    }),
  );
});

test('an OrderedList and a SlotSet of calls in flight let each call die young once removed', () => {
  const list = new OrderedList<object>();
  const slots = new SlotSet<object>();
  const nodes: (ListNode<object> | undefined)[] = new Array(8).fill(undefined);
  const handles: number[] = new Array(8).fill(-1);
  check(
    'ordered-list + slot-set',
    promotedPerScavenge((i) => {
      const at = i & 7;
      const old = nodes[at];
      if (old) list.remove(old);
      if (handles[at]! >= 0) slots.remove(handles[at]!);
      const g = callGarbage(i);
      nodes[at] = list.push(g);
      handles[at] = slots.add(g);
    }),
  );
});
