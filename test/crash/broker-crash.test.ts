/**
 * The broker, killed with -9 (and, separately, its power cut) under a mixed load, again and again:
 * after every restart every acknowledged fact holds (see mixed-load.ts for the load and the checks).
 * Bounded here; `npm run crash:soak` and `npm run crash:powerloss` run the same for longer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from '../helpers.js';
import { crashRounds } from './mixed-load.js';

test('broker state and messages survive kill -9 under mixed load', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  try {
    const ledger = await crashRounds({
      dataDir: `${dir.path}/data`,
      scratch: dir.path,
      rounds: 5,
      powerCut: false,
      loadMs: [400, 1200],
    });
    assert.ok(ledger.sent.size >= 50, `only ${ledger.sent.size} sends acknowledged`);
    assert.ok(ledger.delayed.size >= 20, `only ${ledger.delayed.size} delay messages acknowledged`);
    assert.ok(
      ledger.counts.acks + ledger.counts.nacks + ledger.counts.commits > 0,
      JSON.stringify(ledger.counts),
    );
  } finally {
    dir.cleanup();
  }
});

test('broker state and messages survive power cuts under mixed load', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  try {
    const ledger = await crashRounds({
      dataDir: `${dir.path}/data`,
      scratch: dir.path,
      rounds: 2,
      powerCut: true,
      loadMs: [400, 1000],
    });
    assert.ok(ledger.sent.size >= 20, `only ${ledger.sent.size} sends acknowledged`);
    assert.ok(ledger.delayed.size >= 10, `only ${ledger.delayed.size} delay messages acknowledged`);
  } finally {
    dir.cleanup();
  }
});
