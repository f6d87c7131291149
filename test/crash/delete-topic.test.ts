/**
 * A deleted topic stays deleted across kill -9, even when the broker dies before the store's next
 * checkpoint: recovery re-reads the log from the last checkpoint and must not index the deleted
 * topic's records again; the topic created again under its name holds only its own message.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Broker } from '../../src/broker/broker.js';
import { receiveFrom } from '../support/harness.js';
import { spawnTs, tempDir, waitExit } from '../helpers.js';

const CHILD = fileURLToPath(new URL('./delete-topic-child.ts', import.meta.url));

test('kill -9 after deleting and re-creating a topic, before the next checkpoint: nothing old comes back', async () => {
  const dir = tempDir('vela-crash-delete-');
  try {
    let ready!: () => void;
    const isReady = new Promise<void>((r) => (ready = r));
    const child = spawnTs(CHILD, [dir.path], (line) => line === 'READY' && ready());
    try {
      await Promise.race([isReady, waitExit(child).then(() => assert.fail('child exited early'))]);
    } finally {
      child.kill('SIGKILL');
      await waitExit(child);
    }
    const broker = await Broker.open({ dataDir: dir.path });
    try {
      const receive = (group: string, topic: string) => receiveFrom(broker, group, topic);
      const text = (ds: { message: { body: Buffer } }[]) => ds.map((d) => d.message.body.toString());
      assert.deepEqual(text(await receive('KG', 'KT')), ['new'], 'the old group');
      await broker.groups.upsert('Fresh', {});
      assert.deepEqual(text(await receive('Fresh', 'KT')), ['new'], 'a new group');
      assert.deepEqual(text(await receive('Fresh', 'Keep')), ['kept'], 'other topics recovered');
      assert.deepEqual(await broker.findMessageById('KT-old5'), []);
      assert.deepEqual(
        broker.consume.progress('KG', 'KT').reduce((n, q) => n + q.inflight, 0),
        1,
        'only the new message is in flight: the old ones were forgotten',
      );
    } finally {
      await broker.close();
    }
  } finally {
    dir.cleanup();
  }
});
