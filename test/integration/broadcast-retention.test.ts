/**
 * A broadcast consumer named by its client id never returns once its process ends: its kept state
 * (positions, in-flight deliveries, committed offsets) is forgotten once unused for the retention
 * time, while a live consumer's is kept however idle it is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Broker, storeOf } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import { ManualClock } from '../../src/common/clock.js';
import { tempDir } from '../helpers.js';

test("a departed broadcast consumer's state is forgotten after the retention time; a live one's is kept", async () => {
  const dir = tempDir('vela-bcast-');
  const clock = new ManualClock(1_700_000_000_000);
  const broker = await Broker.open(
    { dataDir: dir.path, consume: { broadcastStateRetentionMs: 1000, minInvisibleMs: 0 } },
    { clock },
  );
  try {
    await broker.topics.upsert('BT', { readQueueNums: 1, writeQueueNums: 1 });
    await broker.groups.upsert('BG', {});
    await storeOf(broker).append([{ topic: 'BT', queueId: 0, messageId: 'B1', body: Buffer.from('x') }]);
    const consumers: Record<string, string> = {};
    for (const id of ['gone-client', 'live-client']) {
      broker.sessions.upsert(id, {
        clientType: 'SIMPLE_CONSUMER',
        group: 'BG',
        telemetryOpen: true,
        properties: { 'vela.consume.mode': 'BROADCASTING' },
      });
      const consumer = broker.pull.effectiveGroup('BG', id);
      consumers[id] = consumer;
      const got = await broker.consume.receive({
        group: consumer,
        topic: 'BT',
        filter: parseFilter('TAG', '*'),
        invisibleMs: 60_000,
        autoRenew: false,
        clientId: id,
        pollMs: 0,
      });
      assert.equal(got.length, 1, 'each broadcast consumer gets the message');
      await broker.pull.commit('BG', 'BT', 0, 1, id);
    }
    const kept = () => broker.consume.groupTopics().map((gt) => gt.group);
    assert.deepEqual(kept().sort(), Object.values(consumers).sort());

    broker.sessions.end('gone-client');
    clock.advance(500);
    assert.equal(await broker.broadcastRetention.sweep(), 0, 'not yet');
    clock.advance(600);
    assert.equal(await broker.broadcastRetention.sweep(), 1);
    assert.deepEqual(kept(), [consumers['live-client']], "the live consumer's state stays");
    assert.equal(broker.offsets.get(consumers['gone-client']!, 'BT', 0), undefined, 'offsets forgotten');
    assert.equal(broker.offsets.get(consumers['live-client']!, 'BT', 0)?.offset, 1);
  } finally {
    await broker.close();
    dir.cleanup();
  }
});
