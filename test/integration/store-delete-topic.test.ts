/** MessageStore.deleteTopic: the topic's queues, files and memory go; other topics are untouched. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { MessageStore } from '../../src/store/index.js';
import { tempDir } from '../helpers.js';

const msg = (topic: string, queueId: number, id: string) => ({
  topic,
  queueId,
  messageId: id,
  body: Buffer.from(id),
  keys: [`key-${id}`],
});

test('deleteTopic removes the queues and their files; the topic starts again at offset 0, after a reopen too', async () => {
  const dir = tempDir('vela-store-delete-');
  let store = await MessageStore.open({ dataDir: dir.path, indexEntriesPerFile: 16 });
  try {
    await store.append(Array.from({ length: 40 }, (_, i) => msg('Doomed', i % 3, `d${i}`)));
    await store.append([msg('Kept', 0, 'k0')]);
    await store.checkpoint();
    assert.ok(existsSync(join(dir.path, 'consumequeue', 'Doomed')));
    const queuesBefore = store.stats().queues;

    assert.equal(await store.deleteTopic('Doomed'), 3);
    assert.equal(await store.deleteTopic('Doomed'), 0, 'idempotent');
    assert.equal(store.stats().queues, queuesBefore - 3, 'their memory is released');
    assert.ok(!existsSync(join(dir.path, 'consumequeue', 'Doomed')), 'their files are removed');
    assert.equal((await store.read('Doomed', 0, 0)).status, 'NO_SUCH_QUEUE');
    assert.deepEqual(await store.findById('d7'), [], 'not found by id');
    assert.deepEqual(await store.findByKey('key-d7'), [], 'nor by key');
    assert.equal((await store.read('Kept', 0, 0)).messages[0]?.messageId, 'k0', 'other topics untouched');

    const [again] = await store.append([msg('Doomed', 1, 'fresh')]);
    assert.equal(again!.queueOffset, 0, 'a new life starts at offset 0');
    assert.deepEqual(
      (await store.findById('fresh')).map((m) => m.messageId),
      ['fresh'],
    );
    await store.close();

    store = await MessageStore.open({ dataDir: dir.path, indexEntriesPerFile: 16 });
    assert.deepEqual(
      (await store.read('Doomed', 1, 0)).messages.map((m) => m.messageId),
      ['fresh'],
    );
    assert.equal((await store.read('Doomed', 0, 0)).status, 'NO_SUCH_QUEUE');
    assert.deepEqual(await store.findById('d7'), []);
    const trash = join(dir.path, 'consumequeue-deleted');
    assert.ok(!existsSync(trash) || readdirSync(trash).length === 0, 'nothing left on its way out');
  } finally {
    await store.close();
    dir.cleanup();
  }
});
