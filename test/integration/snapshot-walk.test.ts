/**
 * The consumption state is snapshotted as a walk over the live state, a piece at a time (so that a
 * large state never blocks the event loop for long): what changes while the walk goes on is replayed
 * from the journal over it. Thousands of deliveries in flight, half of them acked while a compaction
 * walks them; a copy of the data directory taken then (what a kill -9 would leave) restarts with
 * exactly the other half in flight.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { Broker } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import { ManualClock } from '../../src/common/clock.js';
import {
  consumeSnapshotItems,
  decodeConsumeSnapshot,
  DELIVERIES_PER_ITEM,
} from '../../src/broker/state-snapshots.js';
import { tempDir } from '../helpers.js';

const N = 3 * DELIVERIES_PER_ITEM + 17;

async function receiveAll(broker: Broker, max: number): Promise<{ body: string; handle: string }[]> {
  const out: { body: string; handle: string }[] = [];
  for (;;) {
    const got = await broker.consume.receive({
      group: 'WalkG',
      topic: 'WalkT',
      filter: parseFilter('TAG', '*'),
      batchSize: 32,
      invisibleMs: 3600_000,
      autoRenew: false,
      clientId: 'walk',
      pollMs: 0,
    });
    if (got.length === 0 || out.length >= max) return out;
    for (const d of got) out.push({ body: d.message.body.toString(), handle: d.receiptHandle });
  }
}

test('a snapshot walked while deliveries are acked restarts with exactly the unacked ones in flight', async () => {
  const dir = tempDir('vela-walk-');
  const clock = new ManualClock(1_700_000_000_000);
  const config = (dataDir: string) => ({ dataDir, consume: { minInvisibleMs: 0 } });
  const broker = await Broker.open(config(`${dir.path}/a`), { clock });
  let copy: Broker | undefined;
  try {
    await broker.topics.upsert('WalkT', { readQueueNums: 2, writeQueueNums: 2 });
    await broker.groups.upsert('WalkG', {});
    for (let i = 0; i < N; i += 500) {
      await broker.produce.send(
        Array.from({ length: Math.min(500, N - i) }, (_, j) => ({
          topic: 'WalkT',
          messageId: `W${i + j}`,
          body: Buffer.from(`m${i + j}`),
        })),
      );
    }
    const held = await receiveAll(broker, N);
    assert.equal(held.length, N);
    const acked = held.filter((_, i) => i % 2 === 0);
    // The compaction walks the state while the acks change it.
    const journal = broker.consume.journal;
    await Promise.all([
      journal.compact(),
      ...acked.map((h) => broker.consume.ack('WalkG', 'WalkT', h.handle)),
    ]);
    cpSync(`${dir.path}/a`, `${dir.path}/b`, { recursive: true });

    clock.advance(2 * 3600_000); // every invisible time is over
    copy = await Broker.open(config(`${dir.path}/b`), { clock });
    await new Promise((r) => setImmediate(r)); // expiries found at start become retries
    await copy.consume.drain();
    const back = await receiveAll(copy, N + 1);
    const ackedBodies = new Set(acked.map((h) => h.body));
    const expected = held.map((h) => h.body).filter((b) => !ackedBodies.has(b));
    assert.deepEqual(back.map((h) => h.body).sort(), expected.sort(), 'exactly the unacked ones, once');
  } finally {
    await copy?.close();
    await broker.close();
    dir.cleanup();
  }
});

test('the walked form decodes to the same state; a state with no deliveries keeps its positions', () => {
  const delivery = (offset: number) => ({
    source: 0 as const,
    queueId: offset % 3,
    offset,
    nonce: offset * 7,
    attempt: 1 + (offset % 4),
    deadline: 1000 + offset,
    autoRenew: offset % 2 === 0,
    clientId: `c${offset % 5}`,
    state: 0 as const,
    fifoKey: '',
    historySeq: -1,
    armed: false,
  });
  const entries = [
    {
      group: 'G',
      topic: 'T',
      nextOffsets: [
        { source: 0 as const, queueId: 0, next: 10 },
        { source: 1 as const, queueId: 2, next: 4 },
      ],
      deliveries: Array.from({ length: 2 * DELIVERIES_PER_ITEM + 5 }, (_, i) => delivery(i)),
      fifo: [{ queueId: 1, low: 3, settled: [5, 7] }],
    },
    {
      group: 'G%BROADCAST%b',
      topic: 'T',
      nextOffsets: [{ source: 0 as const, queueId: 1, next: 2 }],
      deliveries: [],
      fifo: [],
    },
  ];
  for (const renamed of [true, false]) {
    const items = JSON.parse(JSON.stringify([...consumeSnapshotItems(renamed, entries)])) as unknown[];
    assert.equal(
      items.length,
      1 + 3 + 1,
      'a header, three items for 2,053 deliveries, one for the empty state',
    );
    assert.deepEqual(decodeConsumeSnapshot(items), { retryTopicsRenamed: renamed, entries });
  }
});
