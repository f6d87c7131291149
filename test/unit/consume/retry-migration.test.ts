/** Carrying retries over from the old `_` retry topic names: once, even when interrupted. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openCore, type Core } from './harness.js';
import { migrateRetryTopics } from '../../../src/broker/consume/retry-migration.js';

let core: Core;
before(async () => {
  core = await openCore();
});
after(() => core.close());

test('an interrupted migration run again copies nothing twice', async () => {
  await core.topics.upsert('MT', { readQueueNums: 1, writeQueueNums: 1 });
  await core.groups.upsert('MG', {});
  const now = core.clock.now();
  await core.store.append(
    ['one', 'two'].map((b) => ({
      topic: '%RETRY%MG_MT',
      queueId: 1,
      messageId: `R-${b}`,
      body: Buffer.from(b),
      properties: { RETRY_TOPIC: 'MT' },
      deliveryTimestamp: now,
      reconsumeTimes: 1,
    })),
  );
  // The first attempt copies, then fails before its journal record (a crash, say).
  const commit = core.ctx.journal.commit.bind(core.ctx.journal);
  core.ctx.journal.commit = () => Promise.reject(new Error('crash'));
  await assert.rejects(migrateRetryTopics(core.ctx), /crash/);
  core.ctx.journal.commit = commit;
  assert.equal(core.store.queueState('%RETRY%MG+MT', 1).maxOffset, 2, 'copied once');
  assert.equal(core.ctx.retryTopicsRenamed, false);

  await migrateRetryTopics(core.ctx);
  assert.equal(core.ctx.retryTopicsRenamed, true);
  assert.equal(core.store.queueState('%RETRY%MG+MT', 1).maxOffset, 4, 'copied again …');
  const got = await core.receive('MG', 'MT');
  assert.deepEqual(
    got.map((d) => d.message.body.toString()).sort(),
    ['one', 'two'],
    '… but delivered once: reading starts past the first copies',
  );
  assert.equal(core.store.queueState('%RETRY%MG_MT', 1).maxOffset, 0, 'the old topic is gone');
  await migrateRetryTopics(core.ctx); // renamed already: nothing to do
  assert.equal(core.store.queueState('%RETRY%MG+MT', 1).maxOffset, 4);
});

test("after the rename, a group's Remoting retry topic %RETRY%<group> survives every restart", async () => {
  await core.groups.upsert('RG_remoting', {});
  await core.store.append([
    {
      topic: '%RETRY%RG_remoting',
      queueId: 3,
      messageId: 'R-remoting',
      body: Buffer.from('send-back'),
      properties: { RETRY_TOPIC: 'SomeTopic' },
    },
  ]);
  assert.equal(core.ctx.retryTopicsRenamed, true);
  await migrateRetryTopics(core.ctx); // what every later start runs
  assert.equal(
    core.store.queueState('%RETRY%RG_remoting', 3).maxOffset,
    1,
    'not taken for an old retry topic',
  );
});
