/**
 * Checks for the append crash tests: every acknowledged message is where the store said it put it,
 * byte for byte, and each message id is stored exactly once.
 */
import assert from 'node:assert/strict';
import { MessageStore } from '../../src/store/index.js';
import { bodyFor } from '../helpers.js';

export interface Ack {
  queueId: number;
  queueOffset: number;
}

export async function verifyAppends(dataDir: string, acked: Map<string, Ack>): Promise<number> {
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
