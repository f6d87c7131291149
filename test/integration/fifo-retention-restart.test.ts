/**
 * After a restart, an orderly group's held messages are held again even when retention removed the
 * head of the queue below its low-water mark: rebuilding the window goes on from the first stored
 * offset instead of stopping there (which lost every held message for good).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Broker, storeOf } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import { tempDir } from '../helpers.js';

test('held FIFO messages survive a restart after retention removed the head of the queue', async () => {
  const dir = tempDir('vela-fifo-ret-');
  let used = 10;
  const config = { dataDir: dir.path, store: { segmentSize: 4096 }, consume: { minInvisibleMs: 0 } };
  const deps = { diskUsage: async () => ({ totalBytes: 100, usedBytes: used }) };
  const receive = (b: Broker) =>
    b.consume.receive({
      group: 'FG',
      topic: 'FT',
      filter: parseFilter('TAG', '*'),
      batchSize: 32,
      invisibleMs: 3600_000,
      autoRenew: false,
      clientId: 'c',
      pollMs: 0,
    });
  let b = await Broker.open(config, deps);
  try {
    await b.topics.upsert('FT', {
      readQueueNums: 1,
      writeQueueNums: 1,
      attributes: { 'message.type': 'FIFO' },
    });
    await b.groups.upsert('FG', { consumeMessageOrderly: true });
    const store = storeOf(b);
    const put = (group: string, body: Buffer) =>
      store.append([
        {
          topic: 'FT',
          queueId: 0,
          messageId: `M-${body.length}-${Math.random()}`,
          messageGroup: group,
          body,
        },
      ]);
    await put('A', Buffer.from('A0')); // offset 0: stays in flight
    for (let i = 0; i < 20; i++) await put(`x${i}`, Buffer.alloc(900, 66));
    await put('A', Buffer.from('A1')); // offset 21: held behind A0, in the newest segment
    const first = await receive(b);
    const a0 = first.find((d) => d.message.body.toString() === 'A0')!;
    assert.ok(a0 && !first.some((d) => d.message.body.toString() === 'A1'), 'A1 is held behind A0');
    for (const d of first) if (d !== a0) await b.consume.ack('FG', 'FT', d.receiptHandle);
    used = 80;
    for (let i = 0; i < 10 && store.queueState('FT', 0).minOffset === 0; i++) await store.runRetention();
    used = 10;
    assert.ok(store.queueState('FT', 0).minOffset > 0, 'retention removed A0');
    assert.ok(store.queueState('FT', 0).minOffset <= 21, 'A1 is still stored');
    await b.close();

    b = await Broker.open(config, deps);
    await b.consume.ack('FG', 'FT', a0.receiptHandle);
    const after = await receive(b);
    assert.deepEqual(
      after.map((d) => d.message.body.toString()),
      ['A1'],
      'A1 was held again after the restart and goes out once A0 is acked',
    );
  } finally {
    await b.close();
    dir.cleanup();
  }
});
