/**
 * Crash test: a child appends under `sync` flush and reports each acknowledged message; we kill -9 it
 * at random moments, recover, and check that every acknowledged message is present, intact and
 * stored exactly once, and that appends continue after each recovery.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { MessageStore } from '../../src/store/index.js';
import { tempDir, spawnTs, waitExit, sleep, bodyFor } from '../helpers.js';

const CHILD = fileURLToPath(new URL('./append-child.ts', import.meta.url));

interface Ack {
  queueId: number;
  queueOffset: number;
}

async function verify(dataDir: string, acked: Map<string, Ack>): Promise<number> {
  const store = await MessageStore.open({ dataDir, segmentSize: 256 * 1024, indexEntriesPerFile: 64 });
  try {
    // Every acknowledged message is where the store said it put it, byte for byte.
    for (const [id, ack] of acked) {
      const r = await store.read('CrashTopic', ack.queueId, ack.queueOffset, { maxCount: 1 });
      assert.equal(
        r.messages.length,
        1,
        `acked ${id} missing at ${ack.queueId}/${ack.queueOffset} (${r.status})`,
      );
      const m = r.messages[0]!;
      assert.equal(m.messageId, id);
      assert.deepEqual(m.body, bodyFor(id), `body of ${id} damaged`);
      assert.deepEqual(m.keys, [`key-${id}`]);
    }
    // Exactly once: a full scan of every queue sees each id once.
    const seen = new Map<string, number>();
    for (let q = 0; q < 4; q++) {
      let offset = 0;
      for (;;) {
        const r = await store.read('CrashTopic', q, offset, { maxCount: 500, maxBytes: 8 << 20 });
        assert.equal(r.corruptOffsets.length, 0, 'no corrupt record is ever served');
        for (const m of r.messages) seen.set(m.messageId, (seen.get(m.messageId) ?? 0) + 1);
        if (r.messages.length === 0) break;
        offset = r.nextOffset;
      }
    }
    for (const [id, n] of seen) assert.equal(n, 1, `${id} stored ${n} times`);
    for (const id of acked.keys()) assert.ok(seen.has(id), `${id} not found by scan`);
    return seen.size;
  } finally {
    await store.close();
  }
}

test(
  'acknowledged appends survive kill -9 at random moments, exactly once',
  { timeout: 120_000 },
  async () => {
    const dir = tempDir();
    const acked = new Map<string, Ack>();
    try {
      for (let round = 0; round < 6; round++) {
        let first: () => void;
        const started = new Promise<void>((r) => (first = r));
        const child = spawnTs(CHILD, [dir.path, `r${round}`, 'loop'], (line) => {
          const [kind, id, q, off] = line.split(' ');
          if (kind !== 'A') return;
          acked.set(id!, { queueId: Number(q), queueOffset: Number(off) });
          first();
        });
        await Promise.race([started, waitExit(child).then(() => assert.fail('child exited early'))]);
        await sleep(100 + Math.random() * 600);
        child.kill('SIGKILL');
        await waitExit(child);
        const stored = await verify(dir.path, acked);
        assert.ok(stored >= acked.size);
      }
      assert.ok(acked.size > 1000, `only ${acked.size} acknowledged appends: the test did not exercise much`);
    } finally {
      dir.cleanup();
    }
  },
);
