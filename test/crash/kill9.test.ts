/**
 * Crash test: a child appends under `sync` flush and reports each acknowledged message; we kill -9 it
 * at random moments, recover, and check that every acknowledged message is present, intact and
 * stored exactly once, and that appends continue after each recovery.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { tempDir, spawnTs, waitExit, waitClosed, sleep } from '../helpers.js';
import { verifyAppends, type Ack } from './verify-appends.js';

const CHILD = fileURLToPath(new URL('./append-child.ts', import.meta.url));

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
        await waitClosed(child); // every acknowledgement it printed has been read
        const stored = await verifyAppends(dir.path, acked);
        assert.ok(stored >= acked.size);
      }
      assert.ok(acked.size > 1000, `only ${acked.size} acknowledged appends: the test did not exercise much`);
    } finally {
      dir.cleanup();
    }
  },
);
