/**
 * The data-directory lock: one process per directory, and a lock that dies with its process, so a
 * broker killed with -9 (or by the OOM killer) never blocks its own restart, even when the restarted
 * process has the same pid (pid 1 in a container).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { MessageStore } from '../../src/store/index.js';
import { isVelaError } from '../../src/common/errors.js';
import { tempDir, spawnTs, waitExit } from '../helpers.js';

const CHILD = fileURLToPath(new URL('./append-child.ts', import.meta.url));
const QUIET = { checkpointIntervalMs: 3_600_000, indexFlushIntervalMs: 3_600_000 };

test('a LOCK left with our own pid (a previous incarnation, e.g. pid 1 in a container) does not block start', async () => {
  const dir = tempDir();
  try {
    writeFileSync(join(dir.path, 'LOCK'), String(process.pid));
    const store = await MessageStore.open({ dataDir: dir.path, ...QUIET });
    await store.close();
    assert.equal(existsSync(join(dir.path, 'LOCK')), false, 'a clean close removes LOCK');
  } finally {
    dir.cleanup();
  }
});

test(
  'a LOCK naming some other live process that does not hold the directory does not block start (Linux)',
  {
    skip: process.platform !== 'linux' && 'the pid fallback cannot tell a recycled pid from an owner',
  },
  async () => {
    const dir = tempDir();
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      // After a kill -9 the dead broker's pid may have been given to an unrelated process.
      writeFileSync(join(dir.path, 'LOCK'), String(other.pid));
      const store = await MessageStore.open({ dataDir: dir.path, ...QUIET });
      assert.equal(readFileSync(join(dir.path, 'LOCK'), 'utf8'), String(process.pid));
      await store.close();
    } finally {
      other.kill('SIGKILL');
      await waitExit(other);
      dir.cleanup();
    }
  },
);

test('the same directory cannot be opened twice, in this process or by another; the lock dies with its owner', async () => {
  const dir = tempDir();
  try {
    const store = await MessageStore.open({ dataDir: dir.path, ...QUIET });
    await assert.rejects(MessageStore.open({ dataDir: dir.path }), (e) => {
      assert.ok(isVelaError(e, 'STORE_LOCKED'));
      assert.match(e.message, /this process/);
      return true;
    });
    await store.close();

    let ready: () => void;
    const started = new Promise<void>((r) => (ready = r));
    const child = spawnTs(CHILD, [dir.path, 'lock', 'fixed:1'], (line) => line === 'DONE' && ready());
    try {
      await started;
      await assert.rejects(MessageStore.open({ dataDir: dir.path }), (e) => {
        assert.ok(isVelaError(e, 'STORE_LOCKED'), String(e));
        assert.match(e.message, new RegExp(`process ${child.pid}`));
        return true;
      });
    } finally {
      child.kill('SIGKILL');
      await waitExit(child);
    }
    // The owner died without cleaning up (its LOCK file is still there): the lock went with it.
    assert.equal(readFileSync(join(dir.path, 'LOCK'), 'utf8'), String(child.pid));
    const after = await MessageStore.open({ dataDir: dir.path, ...QUIET });
    await after.close();
  } finally {
    dir.cleanup();
  }
});
