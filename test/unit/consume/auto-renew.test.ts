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
    core.ctx.states.get(group, topic)!.deliveries.values()[0]!.deadline,
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

test('with renewal scans running, push deliveries cost no deadline item until their client is gone', async () => {
  const own = await openCore({
    consume: { autoRenewInvisibleMs: 60_000, renewAheadMs: 20_000, renewIntervalMs: 5_000 },
  });
  try {
    own.autoRenew.start();
    const topic = 'LazyT';
    const group = 'LazyG';
    await own.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
    await own.groups.upsert(group, {});
    await own.send([
      { topic, body: Buffer.from('a') },
      { topic, body: Buffer.from('b') },
    ]);
    own.sessions.upsert('live', { telemetryOpen: true });
    own.sessions.upsert('ghost', {});
    const [a] = await own.receive(group, topic, {
      invisibleMs: 60_000,
      autoRenew: true,
      clientId: 'live',
      batch: 1,
    });
    const [b] = await own.receive(group, topic, {
      invisibleMs: 60_000,
      autoRenew: true,
      clientId: 'ghost',
      batch: 1,
    });
    assert.deepEqual([bodyOf(a!), bodyOf(b!)], ['a', 'b']);
    assert.equal(own.ctx.heap.size, 0, 'no deadline item at the hand-outs');

    // The scan within 20 s of the deadlines: the live client's delivery is renewed (still no item);
    // the departed client's is armed at its deadline.
    own.clock.advance(45_000);
    await own.autoRenew.renew();
    assert.equal(own.ctx.heap.size, 1, "an item for the departed client's delivery only");
    await own.autoRenew.renew();
    assert.equal(own.ctx.heap.size, 1, 'armed once, however many scans see it');

    await own.advance(15_000); // b's deadline passes
    assert.equal(own.progress.progress(group, topic)[0]!.inflight, 1, 'b expired, a renewed');
    assert.deepEqual(await own.acks.ackMany(group, topic, [a!.receiptHandle]), [null]);
    own.clock.advance(10_000); // the group's first retry interval
    const again = await own.receive(group, topic, { clientId: 'next' });
    assert.deepEqual(
      again.map((x) => [bodyOf(x), x.deliveryAttempt]),
      [['b', 2]],
      "the departed client's message comes back once, on time",
    );
  } finally {
    await own.close();
  }
});
