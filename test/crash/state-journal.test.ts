/**
 * Broker state survives kill -9: the child (state-child.ts) drives the broker's own registries over
 * the state journal with snapshots taken all the time; after each kill every change the broker API
 * acknowledged is there — the last topic created just before the kill included (a snapshot must never
 * claim a change it does not hold).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { tempDir, spawnTs, waitClosed, sleep } from '../helpers.js';
import { openState } from './state-child.js';

const CHILD = fileURLToPath(new URL('./state-child.ts', import.meta.url));

test(
  'acknowledged broker state survives kill -9 while the journal compacts',
  { timeout: 90_000 },
  async () => {
    const dir = tempDir();
    try {
      const topics = new Map<string, number>();
      const groups = new Map<string, number>();
      const offsets = new Map<string, number>();
      const counters = new Set<number>();
      for (let round = 0; round < 5; round++) {
        let acks = 0;
        const child = spawnTs(CHILD, [dir.path, String(round)], (line) => {
          const [a, kind, x, y, z] = line.split(' ');
          if (a !== 'A') return;
          acks++;
          if (kind === 'topic') topics.set(x!, Number(y));
          else if (kind === 'group') groups.set(x!, Number(y));
          else if (kind === 'off')
            offsets.set(`${x}/${y}`, Math.max(offsets.get(`${x}/${y}`) ?? -1, Number(z)));
          else if (kind === 'cnt') counters.add(Number(x));
        });
        const target = 200 + Math.floor(Math.random() * 600);
        while (acks < target) {
          if (child.exitCode !== null) assert.fail('child exited early');
          await sleep(5);
        }
        child.kill('SIGKILL');
        await waitClosed(child); // every acknowledgement it printed has been read

        const s = await openState(dir.path, 2048);
        try {
          for (const [name, n] of topics) {
            const t = s.topics.get(name);
            assert.ok(t, `round ${round}: acknowledged topic ${name} lost`);
            assert.equal(t.attributes.n, String(n));
          }
          for (const [name, v] of groups) {
            const g = s.groups.get(name);
            assert.ok(g, `round ${round}: acknowledged group ${name} lost`);
            // At least the last version seen acknowledged (later ones may have been acknowledged with
            // their lines still unread when the child was killed).
            assert.ok(
              g.fifoRetryIntervalMs >= v,
              `round ${round}: group ${name} at version ${g.fifoRetryIntervalMs}, acknowledged ${v}`,
            );
          }
          for (const [k, n] of offsets) {
            const [g, q] = k.split('/');
            const o = s.offsets.get(g!, 'Topic', Number(q));
            assert.ok(o && o.offset >= n, `round ${round}: committed offset ${k}=${n} lost (${o?.offset})`);
          }
          for (const n of counters) assert.ok(s.counters.seen.has(n), `round ${round}: change ${n} lost`);
        } finally {
          await s.journal.close();
        }
      }
      assert.ok(topics.size > 100, `only ${topics.size} topics acknowledged: the test did not exercise much`);
    } finally {
      dir.cleanup();
    }
  },
);
