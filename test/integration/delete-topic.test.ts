/**
 * A deleted topic is gone (issue 10 §2): its queues, every group's offsets, in-flight, retry and FIFO
 * state; a topic created again under its name starts empty; nothing of the deleted one is delivered
 * again, after a restart either. (A restart by kill -9 before the next checkpoint: test/crash.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Broker } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import { storeOf } from '../../src/internal.js';
import { tempDir } from '../helpers.js';

const ALL = parseFilter('TAG', '*');

async function send(broker: Broker, topic: string, bodies: string[], messageGroup?: string): Promise<void> {
  const r = await broker.produce.send(
    bodies.map((b) => ({
      topic,
      messageId: `${topic}-${b}`,
      body: Buffer.from(b),
      ...(messageGroup ? { messageGroup } : {}),
    })),
  );
  assert.ok(
    r.every((x) => !(x instanceof Error)),
    'sent',
  );
}

async function receive(broker: Broker, group: string, topic: string, invisibleMs = 60_000) {
  return broker.consume.receive({
    group,
    topic,
    filter: ALL,
    invisibleMs,
    autoRenew: false,
    clientId: 'c',
    pollMs: 0,
  });
}
const bodies = (ds: { message: { body: Buffer } }[]) => ds.map((d) => d.message.body.toString()).sort();

test('delete then create again: the new topic starts empty for every group, before and after a restart', async () => {
  const dir = tempDir('vela-delete-topic-');
  let broker = await Broker.open({ dataDir: dir.path });
  try {
    await broker.topics.upsert('DT', { readQueueNums: 2, writeQueueNums: 2 });
    await broker.groups.upsert('Pop', { retryPolicy: { type: 'CUSTOMIZED', next: [100] } });
    await broker.groups.upsert('Fifo', { consumeMessageOrderly: true });
    await broker.groups.upsert('Puller', {});
    await send(broker, 'DT', ['o1', 'o2', 'o3', 'o4', 'o5']);
    // Some state of every kind: in flight, a waiting retry, an ack, held FIFO messages, a committed offset.
    const got = await receive(broker, 'Pop', 'DT');
    assert.equal(got.length, 5);
    await broker.consume.ack('Pop', 'DT', got[0]!.receiptHandle);
    await broker.consume.changeInvisibleDuration('Pop', 'DT', got[1]!.receiptHandle, 0);
    assert.equal((await receive(broker, 'Fifo', 'DT')).length, 2, 'one per queue: the rest is held');
    await broker.pull.commit('Puller', 'DT', 0, 2, 'c');
    const oldId = 'DT-o3';
    assert.equal((await broker.findMessageById(oldId)).length, 1);

    await broker.deleteTopic('DT');
    assert.equal(broker.topics.get('DT'), undefined);
    assert.deepEqual(broker.consume.groupsOf('DT'), [], 'no group has state for it');
    assert.equal(broker.offsets.get('Puller', 'DT', 0), undefined, 'committed offsets are gone');
    const store = storeOf(broker);
    assert.deepEqual(
      store.listQueues().filter((q) => q.topic.includes('DT')),
      [],
      'queues and retry queues are gone',
    );
    assert.ok(!existsSync(join(dir.path, 'store', 'consumequeue', 'DT')), 'index files are removed');
    assert.deepEqual(await broker.findMessageById(oldId), [], 'not even by id');

    await broker.topics.upsert('DT', { readQueueNums: 2, writeQueueNums: 2 });
    await send(broker, 'DT', ['new']);
    for (const group of ['Pop', 'Fifo', 'Puller', 'Fresh']) {
      await broker.groups.upsert(group, {});
      assert.deepEqual(
        bodies(await receive(broker, group, 'DT')),
        ['new'],
        `${group} gets only the new message`,
      );
    }
    assert.equal(
      store.queueState('DT', store.listQueues().find((q) => q.topic === 'DT')!.queueId).maxOffset,
      1,
      'offsets start at 0 again',
    );

    await broker.close();
    broker = await Broker.open({ dataDir: dir.path });
    await broker.groups.upsert('Other', {});
    assert.deepEqual(
      bodies(await receive(broker, 'Other', 'DT')),
      ['new'],
      'after a restart: still only the new message',
    );
    assert.deepEqual(await receive(broker, 'Pop', 'DT', 60_000), [], 'nothing of the old topic comes back');
    assert.deepEqual(await broker.findMessageById(oldId), []);
    assert.deepEqual(
      readdirSync(join(dir.path, 'store'))
        .filter((f) => f.includes('deleted'))
        .flatMap((f) => readdirSync(join(dir.path, 'store', f))),
      [],
    );
  } finally {
    await broker.close();
    dir.cleanup();
  }
});

test('a topic deleted without its queues being purged (a crash, or an older version) is purged when created again', async () => {
  const dir = tempDir('vela-delete-topic-');
  let broker = await Broker.open({ dataDir: dir.path });
  try {
    await broker.topics.upsert('Half', { readQueueNums: 1, writeQueueNums: 1 });
    await broker.groups.upsert('G', {});
    await send(broker, 'Half', ['old1', 'old2']);
    await receive(broker, 'G', 'Half');
    // What a crash right after the metadata deletion (or an earlier version's deleteTopic) leaves.
    await broker.topics.delete('Half');
    await broker.close();
    broker = await Broker.open({ dataDir: dir.path });
    await broker.topics.upsert('Half', { readQueueNums: 1, writeQueueNums: 1 });
    await send(broker, 'Half', ['new']);
    assert.deepEqual(bodies(await receive(broker, 'G', 'Half')), ['new']);
    await broker.groups.upsert('G2', {});
    assert.deepEqual(bodies(await receive(broker, 'G2', 'Half')), ['new']);
  } finally {
    await broker.close();
    dir.cleanup();
  }
});

test('a deleted group leaves no retries behind for one created under its name', async () => {
  const dir = tempDir('vela-delete-group-');
  const broker = await Broker.open({ dataDir: dir.path });
  try {
    await broker.topics.upsert('GT', { readQueueNums: 1, writeQueueNums: 1 });
    await broker.groups.upsert('Gone', { retryPolicy: { type: 'CUSTOMIZED', next: [50] } });
    await send(broker, 'GT', ['m']);
    const [d] = await receive(broker, 'Gone', 'GT');
    await broker.consume.ack('Gone', 'GT', d!.receiptHandle);
    await send(broker, 'GT', ['m2']);
    const [d2] = await receive(broker, 'Gone', 'GT');
    await broker.consume.changeInvisibleDuration('Gone', 'GT', d2!.receiptHandle, 0); // a retry waits
    await broker.deleteGroup('Gone');
    await broker.groups.upsert('Gone', {});
    await new Promise((r) => setTimeout(r, 80));
    assert.deepEqual(
      bodies(await receive(broker, 'Gone', 'GT')),
      ['m', 'm2'],
      'from the start, and no retry of the old group',
    );
  } finally {
    await broker.close();
    dir.cleanup();
  }
});
