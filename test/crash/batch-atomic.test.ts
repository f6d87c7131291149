/**
 * A batch is stored all or nothing, across crashes too: when the log ends inside a batch (a crash cut
 * its write short; it was never acknowledged), recovery drops the whole batch rather than keeping its
 * first records, which the producer would send again as duplicates.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { MessageStore, type MessageInput } from '../../src/store/index.js';
import { tempDir, bodyFor } from '../helpers.js';

const msg = (id: string, queueId: number): MessageInput => ({
  topic: 'Batch',
  queueId,
  messageId: id,
  body: bodyFor(id),
});

for (const cut of ['inside its last record', 'between two of its records'] as const) {
  test(`a batch cut short ${cut} is dropped whole at recovery`, async () => {
    const dir = tempDir();
    try {
      let store = await MessageStore.open({ dataDir: dir.path });
      await store.append([msg('a0', 0), msg('a1', 1), msg('a2', 0)]);
      await store.append([msg('b0', 0)]);
      const last = await store.append([msg('c0', 0), msg('c1', 1), msg('c2', 0)]);
      await store.close();
      // The crash: the log ends inside the last batch, and no checkpoint covers any of it.
      const end = cut === 'inside its last record' ? last[2]!.logPosition + 20 : last[2]!.logPosition;
      const segments = readdirSync(join(dir.path, 'commitlog')).filter((n) => n.endsWith('.log'));
      assert.equal(segments.length, 1);
      truncateSync(join(dir.path, 'commitlog', segments[0]!), end);
      rmSync(join(dir.path, 'checkpoint.json'));
      rmSync(join(dir.path, 'consumequeue'), { recursive: true });

      store = await MessageStore.open({ dataDir: dir.path });
      try {
        const ids = async (q: number) =>
          (await store.read('Batch', q, 0, { maxCount: 100 })).messages.map((m) => m.messageId);
        assert.deepEqual(await ids(0), ['a0', 'a2', 'b0']);
        assert.deepEqual(await ids(1), ['a1']);
        assert.equal(store.recoveryReport.truncatedBytes > 0, true);
        // The producer's resend stores the batch once.
        const again = await store.append([msg('c0', 0), msg('c1', 1), msg('c2', 0)]);
        assert.deepEqual(
          again.map((r) => r.queueOffset),
          [3, 1, 4],
        );
        assert.deepEqual(await ids(0), ['a0', 'a2', 'b0', 'c0', 'c2']);
      } finally {
        await store.close();
      }
    } finally {
      dir.cleanup();
    }
  });
}
