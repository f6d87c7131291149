/**
 * A journal compaction started exactly as a state change's record is appended loses nothing that was
 * acknowledged: for transaction records (commit intent, commit, rollback), the consumption state of
 * retry topics (a retry written, handed out, acked) and ACL records (users and entries created and
 * deleted), a child (compaction-race-child.ts) makes the change with the compaction racing it,
 * answers it, and is killed with -9 — while the snapshot may still be being written, or once it is.
 * The restarted broker must show the change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Broker, storeOf } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { drainGroup } from './drain-group.js';
import { spawnTs, tempDir, waitClosed } from '../helpers.js';
import { RACE, RACE_STEPS, type RaceStep } from './compaction-race-steps.js';

const CHILD = fileURLToPath(new URL('./compaction-race-child.ts', import.meta.url));

async function bodies(broker: Broker, topic: string, queues: number): Promise<string[]> {
  const out: string[] = [];
  for (let q = 0; q < queues; q++) {
    const r = await storeOf(broker).read(topic, q, 0, { maxCount: 1000 });
    for (const m of r.messages) out.push(Buffer.from(m.body).toString());
  }
  return out;
}

/** Receive and ack everything the race group can get, moving the clock a minute on whenever nothing is due. */
function drain(broker: Broker, clock: ManualClock): Promise<string[]> {
  return drainGroup(broker, RACE.group, RACE.topic, {
    clock,
    beforeReceive: async () => {
      await new Promise((r) => setImmediate(r));
      await broker.consume.drain();
    },
  });
}

async function check(step: RaceStep, details: string, dataDir: string): Promise<void> {
  const clock = new ManualClock(Date.now());
  const broker = await Broker.open({ dataDir, consume: { minInvisibleMs: 0 } }, { clock });
  try {
    switch (step) {
      case 'tx-committing':
      case 'tx-commit':
      case 'tx-rollback': {
        assert.equal(broker.transactions.find(details), undefined, 'the transaction is not open');
        assert.equal(broker.transactions.openCount, 0);
        const stored = await bodies(broker, RACE.txTopic, 8);
        assert.deepEqual(stored, step === 'tx-rollback' ? [] : ['tx'], 'committed once, rolled back never');
        return;
      }
      case 'retry-nack': {
        const retries = await bodies(broker, `%RETRY%${RACE.group}+${RACE.topic}`, 33);
        assert.deepEqual(retries, [RACE.body], 'the retry is stored once');
        clock.advance(2 * 86400_000);
        assert.deepEqual(await drain(broker, clock), [RACE.body], 'and delivered once');
        return;
      }
      case 'retry-deliver': {
        // Handed out for an hour before the crash: not again before that, and its handle still works.
        assert.deepEqual(await drain(broker, clock), [], 'not handed out again (3 minutes on)');
        await broker.consume.ack(RACE.group, RACE.topic, details);
        clock.advance(2 * 86400_000);
        assert.deepEqual(await drain(broker, clock), [], 'acked: never delivered again');
        return;
      }
      case 'retry-ack': {
        clock.advance(2 * 86400_000);
        assert.deepEqual(await drain(broker, clock), [], 'acked: never delivered again');
        return;
      }
      case 'acl-user':
      case 'acl-entry':
      case 'acl-deleted':
      case 'acl-user-deleted': {
        const registry = broker.acl.registry;
        const user = registry.user(RACE.user);
        if (step === 'acl-user-deleted') {
          assert.equal(user, undefined, 'the deleted user stays deleted');
          return;
        }
        assert.ok(user, 'the user exists');
        assert.equal(user.password, RACE.password);
        const resources = registry.entriesOf(RACE.user).length;
        assert.equal(resources, step === 'acl-entry' ? 1 : 0, 'the ACL is as acknowledged');
        return;
      }
    }
  } finally {
    await broker.close();
  }
}

for (const step of RACE_STEPS) {
  for (const mode of ['during', 'after'] as const) {
    test(`a compaction racing ${step} loses nothing acknowledged (kill -9 ${mode} the snapshot)`, async () => {
      const dir = tempDir('vela-compaction-race-');
      try {
        let ack: string | undefined;
        const child = spawnTs(CHILD, [dir.path, step, mode], (line) => {
          if (line.startsWith(`ACK ${step} `)) ack = line.slice(`ACK ${step} `.length);
        });
        await waitClosed(child);
        assert.notEqual(ack, undefined, `the child never acknowledged ${step} (exit ${child.exitCode})`);
        assert.equal(child.signalCode, 'SIGKILL');
        await check(step, ack!, dir.path);
      } finally {
        dir.cleanup();
      }
    });
  }
}
