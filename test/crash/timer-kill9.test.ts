/**
 * Crash test for the timer and transactions: a child broker schedules delay messages (due within
 * 1.5 s, so deliveries are always under way), recalls some, and opens, commits and rolls back
 * transactions; we kill -9 it at random moments, several times, restarting each time. Then: every
 * acknowledged delay message is delivered exactly once, never before its time, a recalled one
 * never; every committed transaction is in its topic exactly once, a rolled-back one never, and
 * every transaction left open is still open (and commits once).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Broker, storeOf } from '../../src/broker/broker.js';
import type { StoredMessage } from '../../src/store/index.js';
import { tempDir, spawnTs, waitExit, sleep } from '../helpers.js';

const CHILD = fileURLToPath(new URL('./timer-child.ts', import.meta.url));

async function all(broker: Broker, topic: string, queues: number): Promise<StoredMessage[]> {
  const store = storeOf(broker);
  const out: StoredMessage[] = [];
  for (let q = 0; q < queues; q++) {
    let offset = 0;
    for (;;) {
      const r = await store.read(topic, q, offset, { maxCount: 1000, maxBytes: 64 << 20 });
      assert.equal(r.corruptOffsets.length, 0);
      out.push(...r.messages);
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
  }
  return out;
}

function countIds(ms: StoredMessage[]): Map<string, number> {
  const n = new Map<string, number>();
  for (const m of ms) n.set(m.messageId, (n.get(m.messageId) ?? 0) + 1);
  return n;
}

test(
  'scheduled and half messages survive kill -9: nothing lost, nothing early, nothing twice',
  { timeout: 120_000 },
  async () => {
    const dir = tempDir();
    const scheduled = new Map<string, number>();
    const recalled = new Set<string>();
    /** Recalls asked for: each such message is delivered once or never, whatever the outcome. */
    const recalling = new Set<string>();
    const halves = new Map<string, string>();
    const committed = new Set<string>();
    const rolledBack = new Set<string>();
    try {
      for (let round = 0; round < 5; round++) {
        let first: () => void;
        const started = new Promise<void>((r) => (first = r));
        const child = spawnTs(CHILD, [dir.path, `r${round}`], (line) => {
          const [kind, id, x] = line.split(' ');
          if (kind === 'D') scheduled.set(id!, Number(x));
          else if (kind === 'x') recalling.add(id!);
          else if (kind === 'X') recalled.add(id!);
          else if (kind === 'H') halves.set(id!, x!);
          else if (kind === 'C') committed.add(id!);
          else if (kind === 'R') rolledBack.add(id!);
          else return;
          first();
        });
        await Promise.race([started, waitExit(child).then(() => assert.fail('child exited early'))]);
        await sleep(300 + Math.random() * 1200);
        child.kill('SIGKILL');
        await waitExit(child);
      }
      assert.ok(scheduled.size > 200, `only ${scheduled.size} delay messages acknowledged`);
      assert.ok(committed.size > 10 && rolledBack.size > 2, 'transactions were exercised');

      const broker = await Broker.open({ dataDir: dir.path, transaction: { checkTimeoutMs: 60_000 } });
      try {
        // Everything acknowledged is due within 1.5 s of its send: let the timer finish.
        const last = Math.max(...scheduled.values());
        await sleep(Math.max(0, last - broker.clock.now()) + 200);
        for (let i = 0; i < 100 && broker.timer.size > 0; i++) await sleep(50);
        assert.equal(broker.timer.size, 0, 'nothing left scheduled');

        const delivered = await all(broker, 'CrashDelay', 4);
        const times = countIds(delivered);
        for (const [id, n] of times) assert.equal(n, 1, `${id} delivered ${n} times`);
        for (const m of delivered) {
          assert.ok(m.storeTimestamp >= m.deliveryTimestamp, `${m.messageId} delivered early`);
          assert.ok(!recalled.has(m.messageId), `recalled ${m.messageId} was delivered`);
        }
        for (const [id] of scheduled)
          if (!recalling.has(id)) assert.ok(times.has(id), `acknowledged ${id} lost`);

        const txs = countIds(await all(broker, 'CrashTx', 2));
        for (const [id, n] of txs) assert.equal(n, 1, `${id} committed ${n} times`);
        for (const id of committed) assert.ok(txs.has(id), `committed ${id} lost`);
        for (const id of rolledBack) assert.ok(!txs.has(id), `rolled back ${id} delivered`);
        let open = 0;
        for (const [id, tid] of halves) {
          if (committed.has(id) || rolledBack.has(id)) continue;
          if (broker.transactions.find(tid)) {
            open++;
            assert.ok(!txs.has(id), `open ${id} is visible`);
            await broker.transactions.end({
              topic: 'CrashTx',
              messageId: id,
              transactionId: tid,
              resolution: 'COMMIT',
            });
          } // else: its end was under way at the kill, and it completed one way or the other
        }
        assert.ok(open > 0, 'some transactions were left open');
        for (const id of committed) {
          await broker.transactions.end({
            topic: 'CrashTx',
            messageId: id,
            transactionId: halves.get(id)!,
            resolution: 'COMMIT',
          });
        }
        const after = countIds(await all(broker, 'CrashTx', 2));
        for (const [id, n] of after) assert.equal(n, 1, `${id} stored ${n} times after the ends`);
        for (const [id, tid] of halves)
          assert.equal(broker.transactions.find(tid), undefined, `${id} still open`);
        // Left open: only half messages stored just before a kill, before the child could report them.
        assert.ok(broker.transactions.openCount <= 2 * 5, `${broker.transactions.openCount} unreported open`);
      } finally {
        await broker.close();
      }
    } finally {
      dir.cleanup();
    }
  },
);
