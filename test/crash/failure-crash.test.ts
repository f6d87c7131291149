/**
 * A crash between storing a failed delivery's retry (or dead letter) and journalling the delivery as
 * settled makes no second copy: the restarted broker recognises the retry it wrote and settles the
 * delivery instead of failing it again. The child (failure-child.ts) kills itself exactly between
 * the two writes, for each way a delivery can fail; the restart runs with its clock two days on, so
 * every retry is due and every deadline has passed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Broker, storeOf } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import { ManualClock } from '../../src/common/clock.js';
import { drainGroup } from './drain-group.js';
import { spawnTs, tempDir, waitClosed } from '../helpers.js';
import { FAILURE_GROUP, FAILURE_TOPIC, SCENARIOS, scenarioConfig } from './failure-scenarios.js';

const CHILD = fileURLToPath(new URL('./failure-child.ts', import.meta.url));

/** Let start-up's background work (expiries found at start) run to the end. */
async function settle(broker: Broker): Promise<void> {
  await new Promise((r) => setImmediate(r));
  await broker.consume.drain();
}

function drainFailureGroup(broker: Broker, clock: ManualClock): Promise<string[]> {
  return drainGroup(broker, FAILURE_GROUP, FAILURE_TOPIC, { clock, beforeReceive: () => settle(broker) });
}

async function countStored(broker: Broker, topic: string, queues: number): Promise<number> {
  let n = 0;
  for (let q = 0; q < queues; q++) {
    const r = await storeOf(broker).read(topic, q, 0, { maxCount: 1000 });
    n += r.messages.length;
  }
  return n;
}

for (const scenario of SCENARIOS) {
  test(`a crash between storing a failure and settling its delivery makes no second copy (${scenario})`, async () => {
    const dir = tempDir('vela-failure-crash-');
    try {
      let trapped = false;
      const child = spawnTs(CHILD, [dir.path, scenario], (line) => {
        if (line === 'TRAPPED') trapped = true;
      });
      await waitClosed(child);
      assert.ok(trapped, `the child never reached the settle record (exit ${child.exitCode})`);
      assert.equal(child.signalCode, 'SIGKILL');

      const clock = new ManualClock(Date.now() + 2 * 86400_000);
      const broker = await Broker.open({ dataDir: dir.path, consume: { minInvisibleMs: 0 } }, { clock });
      try {
        const bodies = await drainFailureGroup(broker, clock);
        const body = `body of ${scenario}`;
        const dlq = await countStored(broker, `%DLQ%${FAILURE_GROUP}`, 1);
        const retries = await countStored(broker, `%RETRY%${FAILURE_GROUP}+${FAILURE_TOPIC}`, 33);
        if (scenarioConfig(scenario).deadLetter) {
          assert.equal(dlq, 1, 'the message is in the DLQ once');
          assert.deepEqual(bodies, [], 'and not delivered again');
          assert.equal(retries, 0);
        } else {
          assert.equal(retries, 1, 'one retry was stored');
          assert.deepEqual(bodies, [body], 'the message is delivered again once');
          assert.equal(dlq, 0);
        }
        // The recovered state is journalled: a second restart finds nothing to do either.
        await broker.close();
        const again = await Broker.open({ dataDir: dir.path, consume: { minInvisibleMs: 0 } }, { clock });
        try {
          assert.deepEqual(await drainFailureGroup(again, clock), []);
          assert.equal(await countStored(again, `%DLQ%${FAILURE_GROUP}`, 1), dlq);
        } finally {
          await again.close();
        }
      } finally {
        await broker.close();
      }
    } finally {
      dir.cleanup();
    }
  });
}

test('a message handed out again after an offset reset is not taken for its earlier retry', async () => {
  // The mark carries the delivery's nonce: the second hand-out (same queue, offset and attempt as the
  // first) must fail on its own, not be settled as if the first one's retry were its own.
  const dir = tempDir('vela-failure-reset-');
  const clock = new ManualClock(1_700_000_000_000);
  const config = { dataDir: dir.path, consume: { minInvisibleMs: 0 } };
  const receive = (b: Broker) =>
    b.consume.receive({
      group: FAILURE_GROUP,
      topic: FAILURE_TOPIC,
      filter: parseFilter('TAG', '*'),
      batchSize: 32,
      invisibleMs: 100,
      autoRenew: false,
      clientId: 'c',
      pollMs: 0,
    });
  let broker = await Broker.open(config, { clock });
  try {
    await broker.topics.upsert(FAILURE_TOPIC, { readQueueNums: 1, writeQueueNums: 1 });
    await broker.groups.upsert(FAILURE_GROUP, { retryPolicy: { type: 'CUSTOMIZED', next: [1000] } });
    await broker.produce.send([{ topic: FAILURE_TOPIC, messageId: 'M-reset', body: Buffer.from('m') }]);
    const [first] = await broker.consume.receive({
      group: FAILURE_GROUP,
      topic: FAILURE_TOPIC,
      filter: parseFilter('TAG', '*'),
      batchSize: 1,
      autoRenew: true,
      clientId: 'c',
      pollMs: 0,
    });
    assert.ok(first);
    await broker.consume.changeInvisibleDuration(FAILURE_GROUP, FAILURE_TOPIC, first.receiptHandle, 0); // nack
    assert.equal(await countStored(broker, `%RETRY%${FAILURE_GROUP}+${FAILURE_TOPIC}`, 33), 1);
    clock.advance(2000);
    const retried = await receive(broker);
    assert.equal(retried.length, 1);
    await broker.consume.ack(FAILURE_GROUP, FAILURE_TOPIC, retried[0]!.receiptHandle);
    await broker.consume.resetQueue(FAILURE_GROUP, FAILURE_TOPIC, 0, 0);
    const again = await receive(broker);
    assert.equal(again[0]?.deliveryAttempt, 1, 'handed out afresh, attempt 1 as the first time');
    await broker.close();

    clock.advance(1000); // its invisible time is over when the broker starts again
    broker = await Broker.open(config, { clock });
    assert.deepEqual(
      await drainFailureGroup(broker, clock),
      ['m'],
      'the second hand-out failed on its own and is delivered again',
    );
  } finally {
    await broker.close();
    dir.cleanup();
  }
});
