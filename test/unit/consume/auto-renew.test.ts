/** Push consumers: their invisible time is renewed while they live; they leave, their messages go back. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyOf, openCore, type Core } from './harness.js';

let core: Core;
before(async () => {
  core = await openCore({ consume: { autoRenewInvisibleMs: 60_000, renewAheadMs: 20_000 } });
});
after(() => core.close());

let n = 0;
async function setup() {
  const topic = `PT${++n}`;
  const group = `PG${n}`;
  await core.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
  await core.groups.upsert(group, {});
  await core.send([{ topic, body: Buffer.from('m') }]);
  return { topic, group };
}

test("a live client's deliveries are renewed near their deadline; a silent client's expire", async () => {
  const { topic, group } = await setup();
  core.sessions.upsert('live', { telemetryOpen: true });
  const [d] = await core.receive(group, topic, { invisibleMs: 60_000, autoRenew: true, clientId: 'live' });
  core.clock.advance(30_000);
  await core.autoRenew.renew();
  assert.equal(
    core.ctx.states.get(group, topic)!.deliveries.values().next().value!.deadline,
    core.clock.now() + 30_000,
    'not yet within 20 s of its deadline',
  );
  core.clock.advance(15_000);
  await core.autoRenew.renew();
  await core.advance(15_000); // the first deadline passes
  assert.equal(core.progress.progress(group, topic)[0]!.inflight, 1, 'still in flight: renewed');
  assert.deepEqual(
    await core.acks.ackMany(group, topic, [d!.receiptHandle]),
    [null],
    'the handle still works',
  );

  const other = await setup();
  core.sessions.upsert('silent', {});
  await core.receive(other.group, other.topic, { invisibleMs: 60_000, autoRenew: true, clientId: 'silent' });
  core.clock.advance(45_000); // silent for longer than the liveness window
  await core.autoRenew.renew();
  await core.advance(15_000);
  assert.equal(core.progress.progress(other.group, other.topic)[0]!.inflight, 0, 'expired: a failed attempt');
  assert.deepEqual(await core.receive(other.group, other.topic), [], "it waits the policy's first interval");
  core.clock.advance(10_000);
  assert.deepEqual(
    (await core.receive(other.group, other.topic)).map((x) => [bodyOf(x), x.deliveryAttempt]),
    [['m', 2]],
  );
});

test("a departed client's push deliveries go back to the group at once", async () => {
  const { topic, group } = await setup();
  core.sessions.upsert('leaver', { telemetryOpen: true });
  await core.receive(group, topic, { invisibleMs: 60_000, autoRenew: true, clientId: 'leaver' });
  assert.equal(await core.autoRenew.releaseClient('someone-else'), 0);
  assert.equal(await core.autoRenew.releaseClient('leaver'), 1);
  const [back] = await core.receive(group, topic, { clientId: 'next' });
  assert.equal(back?.deliveryAttempt, 2);
});
