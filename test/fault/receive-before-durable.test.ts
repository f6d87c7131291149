/**
 * A receive of a group that is not orderly reads messages as soon as they are appended, and answers
 * once they and its hand-out record are durable (consume/pop.ts). What that must never cost:
 *
 * - the store reads appended messages only when asked, and says when they are durable;
 * - a write that fails for lack of space takes its messages back: their hand-outs are undone and the
 *   group's read position comes back, so the messages that take those offsets next are delivered;
 * - after a restart, a hand-out record that outlived its message's record (a power cut between the
 *   two writes) does not make the group skip the next messages.
 *
 * ENOSPC is injected at Node's fs (node-faults.ts) for this process only.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Broker } from '../../src/broker/broker.js';
import { DeliveryState, Source, freshDelivery } from '../../src/broker/consume/delivery.js';
import { storeOf } from '../../src/internal.js';
import { isVelaError, MessageStore, type MessageInput, type RolledBackQueue } from '../../src/store/index.js';
import { captureLogger, sleep, tempDir } from '../helpers.js';
import { NodeFaults } from './node-faults.js';
import { QUIET, withFaultyStore } from './faulty-store.js';
import { receiveFrom } from '../support/harness.js';

const msg = (id: string): MessageInput => ({ topic: 'T', queueId: 0, messageId: id, body: Buffer.from(id) });

test('the store reads appended messages only when asked, and tells when they are durable', async () => {
  const dir = tempDir();
  const store = await MessageStore.open({ dataDir: dir.path, ...QUIET });
  try {
    await store.append([msg('a0')]);
    const told: number[] = [];
    store.onAppend((_topic, _queueId, end) => told.push(end));
    const durable = store.append([msg('a1'), msg('a2')]);
    assert.deepEqual(told, [3], 'told at once, with the appended end');
    assert.equal(store.maxOffset('T', 0), 1, 'not durable yet');
    assert.equal(store.appendedOffset('T', 0), 3);
    const rollbacks = store.rollbacks;
    const plain = await store.read('T', 0, 1);
    assert.equal(plain.status, 'NO_NEW_MESSAGE');
    const early = await store.read('T', 0, 1, { appended: true });
    assert.deepEqual(
      early.messages.map((m) => m.body.toString()),
      ['a1', 'a2'],
    );
    assert.equal(early.nextOffset, 3);
    const last = early.messages[1]!.logPosition;
    assert.equal(store.isDurable(last), false);
    await store.whenDurable(last, rollbacks);
    assert.equal(store.isDurable(last), true);
    await durable;
    assert.equal(store.maxOffset('T', 0), 3);
  } finally {
    await store.close();
    dir.cleanup();
  }
});

test('an appended read across durable records no longer in memory and records not yet durable returns them all', async () => {
  // Small segments and no read cache, as in the crash soak: a segment's write buffer is let go once
  // its bytes are durable, so the older records of a queue are read from the file while the newest
  // are not on it yet. One read of both once lost the newest (read from the file past its end, they
  // were skipped as corrupt, and the read position moved past them).
  const dir = tempDir();
  const { logger, lines } = captureLogger();
  const store = await MessageStore.open({
    dataDir: dir.path,
    segmentSize: 64 * 1024,
    logReadCacheBytes: 0,
    logger,
    ...QUIET,
  });
  try {
    const body = Buffer.alloc(1000, 1);
    const batch = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ ...msg(`m${from + i}`), body }));
    await store.append(batch(0, 40)); // most of the first segment
    await store.append(batch(40, 40)); // on into the second: the first segment's buffer is let go
    const pending = store.append(batch(80, 5)); // not durable yet
    assert.equal(store.maxOffset('T', 0), 80);
    const r = await store.read('T', 0, 0, { maxCount: 200, appended: true });
    assert.equal(store.maxOffset('T', 0), 80, 'read before the last batch was durable');
    assert.deepEqual(
      r.messages.map((m) => m.messageId),
      Array.from({ length: 85 }, (_, i) => `m${i}`),
    );
    assert.equal(r.nextOffset, 85);
    assert.deepEqual(r.corruptOffsets, []);
    assert.ok(!lines.some((l) => /corrupt/.test(l.msg)));
    await pending;
  } finally {
    await store.close();
    dir.cleanup();
  }
});

test('a failed write takes appended messages back: listeners are told first, appends wait for them', async () => {
  let free = 5e9;
  const diskUsage = async () => ({ totalBytes: 10e9, usedBytes: 10e9 - free });
  await withFaultyStore({ diskUsage }, async ({ store, fs }) => {
    let full = false;
    fs.fail({ ops: ['writev', 'write'], path: /commitlog/, code: 'ENOSPC', when: () => full });
    await store.append([msg('a0')]);
    const told: RolledBackQueue[][] = [];
    let settle!: () => void;
    store.onRollback((queues) => {
      told.push([...queues]);
      return new Promise<void>((resolve) => (settle = resolve));
    });
    full = true;
    free = 0;
    const rollbacks = store.rollbacks;
    const refused = store.append([msg('b1'), msg('b2')]);
    refused.catch(() => {});
    const early = await store.read('T', 0, 1, { appended: true });
    assert.deepEqual(
      early.messages.map((m) => m.body.toString()),
      ['b1', 'b2'],
    );
    const waited = store.whenDurable(early.messages[1]!.logPosition, rollbacks);
    await assert.rejects(refused, (e) => isVelaError(e, 'STORE_DISK_FULL'));
    await assert.rejects(waited, (e) => isVelaError(e, 'STORE_DISK_FULL'));
    assert.deepEqual(told, [[{ topic: 'T', queueId: 0, end: 1 }]]);
    assert.equal(store.appendedOffset('T', 0), 1, 'the offsets are free again');
    assert.notEqual(store.rollbacks, rollbacks);
    await assert.rejects(
      store.whenDurable(early.messages[1]!.logPosition, rollbacks),
      (e) => isVelaError(e, 'STORE_IO_ERROR'),
      'read before the rollback: never resolves for what took its place',
    );

    full = false;
    free = 5e9;
    await store.checkDisk();
    await sleep(50);
    await assert.rejects(
      store.append([msg('c1')]),
      (e) => isVelaError(e),
      'appends wait for the listener to settle',
    );
    settle();
    await sleep(50);
    const [c1] = await store.append([msg('c1')]);
    assert.equal(c1!.queueOffset, 1, 'the next message takes the first offset taken back');
    const all = await store.read('T', 0, 0);
    assert.deepEqual(
      all.messages.map((m) => m.body.toString()),
      ['a0', 'c1'],
    );
  });
});

const receive = (broker: Broker, group: string, topic: string, pollMs = 0) =>
  receiveFrom(broker, group, topic, { pollMs });
const bodies = (ds: { message: { body: Buffer } }[]) => ds.map((d) => d.message.body.toString());
/** Send one message to queue 0: its receipt, or its error thrown. */
async function send(broker: Broker, topic: string, id: string) {
  const [r] = await broker.produce.send([{ topic, queueId: 0, messageId: id, body: Buffer.from(id) }]);
  if (isVelaError(r)) throw r;
  return r!;
}

for (const journalToo of [false, true]) {
  test(`a receive that took messages a failed write took back: the group gets the messages that take their offsets${journalToo ? ' (the journal out of space too)' : ''}`, async () => {
    const dir = tempDir();
    const fs = await new NodeFaults(dir.path).install();
    const { logger, lines } = captureLogger();
    let free = 5e9;
    const diskUsage = async () => ({ totalBytes: 10e9, usedBytes: 10e9 - free });
    let full = false;
    const path = journalToo ? /commitlog|state/ : /commitlog/;
    fs.fail({ ops: ['writev', 'write'], path, code: 'ENOSPC', when: () => full });
    const broker = await Broker.open({ dataDir: dir.path, store: QUIET }, { logger, diskUsage });
    try {
      await broker.topics.upsert('T', { readQueueNums: 1, writeQueueNums: 1 });
      await broker.groups.upsert('G', {});
      await send(broker, 'T', 'm0');
      assert.deepEqual(bodies(await receive(broker, 'G', 'T')), ['m0']);

      // A long poll waits; the next send wakes it as soon as it is appended, and its write fails.
      const waiting = receive(broker, 'G', 'T', 5000);
      waiting.catch(() => {});
      await sleep(20);
      full = true;
      free = 0;
      await assert.rejects(send(broker, 'T', 'lost'), (e) => isVelaError(e));
      const answer = await waiting.then(
        (ds) => bodies(ds),
        (err: unknown) => (isVelaError(err) ? `refused: ${err.code}` : `threw ${String(err)}`),
      );
      assert.notDeepEqual(answer, ['lost'], 'a message that was never stored is never delivered');
      assert.ok(
        lines.some((l) => /taken back; their hand-outs are undone/.test(l.msg)),
        'the receive had taken the message before its write failed',
      );
      if (journalToo) {
        await sleep(1200);
        assert.ok(lines.some((l) => /could not journal the undone hand-outs/.test(l.msg)));
        await assert.rejects(
          send(broker, 'T', 'refused'),
          (e) => isVelaError(e),
          'sends wait for the journal',
        );
      }

      full = false;
      free = 5e9;
      await storeOf(broker).checkDisk();
      const r = await waitForSend(broker, 'm1');
      assert.equal(r.queueOffset, 1, 'the offset taken back goes to the next message');
      assert.deepEqual(bodies(await receive(broker, 'G', 'T', 2000)), ['m1'], 'and the group gets it');
      assert.equal(storeOf(broker).stats().readOnly, false);
      // The hand-out taken back never happened, as far as the counters and the history tell.
      assert.deepEqual(broker.deliveries.of('lost'), [], 'no delivery of a message never stored');
      const m1 = broker.deliveries.of('m1');
      assert.equal(m1.length, 1);
      assert.equal(m1[0]!.queueOffset, 1);
      const out = [...broker.stats.outCounters()].filter((c) => c.group === 'G' && c.topic === 'T');
      assert.equal(
        out.reduce((n, c) => n + c.messages, 0),
        2,
        'delivered: m0 and m1, not the message taken back',
      );
    } finally {
      fs.clear();
      await broker.close();
      fs.uninstall();
      dir.cleanup();
    }
  });
}

/** Send until the broker takes it (after a rollback, sends are refused until the store resumes). */
async function waitForSend(broker: Broker, id: string) {
  const until = Date.now() + 5000;
  for (;;) {
    try {
      return await send(broker, 'T', id);
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(50);
    }
  }
}

test('after a restart, hand-outs past the end of their queue are undone before anything is served', async () => {
  const dir = tempDir();
  const { logger, lines } = captureLogger();
  let broker = await Broker.open({ dataDir: dir.path }, { logger });
  try {
    await broker.topics.upsert('T', { readQueueNums: 1, writeQueueNums: 1 });
    await broker.groups.upsert('G', {});
    await send(broker, 'T', 'm0');
    await send(broker, 'T', 'm1');
    assert.deepEqual(bodies(await receive(broker, 'G', 'T')), ['m0', 'm1']);
    // What a power cut can leave: the hand-out record of offsets 2 and 3 durable, their messages'
    // records not (the receive read them appended; the log's write never reached the disk).
    const lost = [2, 3].map((offset) => ({
      ...freshDelivery(Source.TOPIC, 0, offset, 1, ''),
      nonce: 4242 + offset,
      deadline: Date.now() + 60_000,
      clientId: 'c',
      state: DeliveryState.INFLIGHT,
    }));
    const handedOut = {
      kind: 'deliveries' as const,
      group: 'G',
      topic: 'T',
      nextOffsets: [{ source: Source.TOPIC, queueId: 0, next: 4 }],
      deliveries: lost,
      fifoLows: [],
    };
    broker.consume.apply(handedOut); // as the pop did in memory (a snapshot at close keeps it)
    await broker.consume.journal.append(handedOut);
    await broker.close();

    broker = await Broker.open({ dataDir: dir.path }, { logger });
    assert.ok(lines.some((l) => /past the recovered end of their queues/.test(l.msg)));
    assert.equal(broker.consume.progress('G', 'T')[0]!.inflight, 2, 'm0 and m1 only');
    const r = await send(broker, 'T', 'm2');
    assert.equal(r.queueOffset, 2);
    assert.deepEqual(bodies(await receive(broker, 'G', 'T', 2000)), ['m2'], 'offset 2 is not skipped');
    await broker.close();

    // The undoing was journalled: a second restart does not bring the phantom hand-outs back.
    broker = await Broker.open({ dataDir: dir.path }, { logger });
    assert.equal(broker.consume.progress('G', 'T')[0]!.inflight, 3);
  } finally {
    await broker.close();
    dir.cleanup();
  }
});
