/**
 * A data directory written before the typed state records still opens: its snapshot and journal, in
 * the JSON shapes earlier versions wrote, come back as the same topics, groups, committed offsets,
 * read positions and in-flight deliveries (whose receipt handles still work).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Broker } from '../../src/broker/broker.js';
import { ReceiptHandles } from '../../src/broker/receipt-handle.js';
import { parseFilter } from '../../src/broker/filter.js';
import { isVelaError } from '../../src/common/errors.js';
import { MessageStore, StateLog } from '../../src/store/index.js';
import { tempDir } from '../helpers.js';

test('a journal and snapshot in the old JSON shapes are read into the current state', async () => {
  const dir = tempDir('vela-compat-');
  try {
    // Messages, as any version stored them.
    const store = await MessageStore.open({ dataDir: join(dir.path, 'store') });
    await store.append(
      ['m0', 'm1', 'm2'].map((id) => ({ topic: 'OldT', queueId: 0, messageId: id, body: Buffer.from(id) })),
    );
    await store.close();

    // State, as the broker wrote it before the typed codec: a snapshot, then journal records.
    const nonce = 424242;
    const deadline = Date.now() + 3_600_000;
    const log = await StateLog.open(
      { dir: join(dir.path, 'state') },
      { onSnapshot: () => {}, onRecord: () => {} },
    );
    const snapshot = {
      topics: [
        { name: 'OldT', readQueueNums: 1, writeQueueNums: 1, perm: 6, messageType: 'NORMAL', attributes: {} },
      ],
      // A group from before fifoRetryIntervalMs existed.
      groups: [
        {
          name: 'OldG',
          retryMaxTimes: 5,
          consumeMessageOrderly: false,
          consumeBroadcastEnable: true,
          consumeEnable: true,
          retryPolicy: { type: 'CUSTOMIZED', next: [1000] },
        },
      ],
      consume: [],
      offsets: { offsets: [['OldG\u0000OldT\u00000', { offset: 1, updatedAt: 1 }]], resets: [] },
    };
    for (const rec of [
      {
        k: 'dlv',
        g: 'OldG',
        t: 'OldT',
        offs: [[0, 0, 2]],
        d: [[0, 0, 0, nonce, 1, deadline, 0, 'c1', 0, '']],
      },
      { k: 'dlv', g: 'OldG', t: 'OldT', d: [[0, 0, 1, 7, 1, deadline, 0, 'c1', 0, '']] },
      { k: 'done', g: 'OldG', t: 'OldT', items: [[0, 0, 1]] },
      { k: 'off', g: 'OldG', t: 'OldT', q: 0, o: 2, ts: 2 },
    ])
      await log.append(Buffer.from(JSON.stringify(rec)));
    await log.close();
    // The snapshot file those versions wrote: "VSNP" | f64 position (0: every record follows it) |
    // u32 CRC-32 | one JSON blob.
    const blob = Buffer.from(JSON.stringify(snapshot));
    const file = Buffer.alloc(16 + blob.length);
    file.writeUInt32LE(0x56534e50, 0);
    file.writeDoubleLE(0, 4);
    file.writeUInt32LE(crc32(blob), 12);
    blob.copy(file, 16);
    writeFileSync(join(dir.path, 'state', 'snapshot'), file, { mode: 0o600 });

    const broker = await Broker.open({ dataDir: dir.path });
    try {
      assert.equal(broker.topics.require('OldT').readQueueNums, 1);
      const g = broker.groups.require('OldG');
      assert.equal(g.retryMaxTimes, 5);
      assert.equal(g.fifoRetryIntervalMs, 1000, 'a setting the old record lacked takes its default');
      assert.equal(broker.offsets.get('OldG', 'OldT', 0)?.offset, 2, 'the committed offset');
      const [q0] = broker.consume.progress('OldG', 'OldT');
      assert.equal(q0!.consumerOffset, 2, 'the read position');
      assert.equal(q0!.inflight, 1, 'offset 0 is still in flight (offset 1 was acked)');
      // The in-flight delivery's receipt handle, issued before the upgrade, still acks it.
      const handles = await ReceiptHandles.load(dir.path);
      const handle = handles.encode('OldT', 'OldG', { queueId: 0, offset: 0, nonce });
      await broker.consume.ack('OldG', 'OldT', handle);
      await assert.rejects(broker.consume.ack('OldG', 'OldT', handle), (err) =>
        isVelaError(err, 'INVALID_RECEIPT_HANDLE'),
      );
      // The next message handed out is the one after the read position.
      const got = await broker.consume.receive({
        group: 'OldG',
        topic: 'OldT',
        filter: parseFilter('TAG', '*'),
        invisibleMs: 60_000,
        autoRenew: false,
        clientId: 'c2',
        pollMs: 0,
      });
      assert.deepEqual(
        got.map((d) => d.message.body.toString()),
        ['m2'],
      );
    } finally {
      await broker.close();
    }
  } finally {
    dir.cleanup();
  }
});
