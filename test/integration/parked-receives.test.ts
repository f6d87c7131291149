/**
 * Parked long polls are bounded per client, per group and broker-wide, fairly: a client parking many
 * receives cannot make another consumer's receive fail, a receive with messages ready is always
 * answered, pulls are bounded too, and one arrival does not wake every parked receive of a group.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Broker, storeOf } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import { isVelaError } from '../../src/common/errors.js';
import { tempDir } from '../helpers.js';

const ALL = parseFilter('TAG', '*');
let dir: ReturnType<typeof tempDir>;
let broker: Broker;
const aborts: AbortController[] = [];

before(async () => {
  dir = tempDir('vela-parked-');
  broker = await Broker.open({
    dataDir: dir.path,
    consume: { maxParkedReceives: 4, maxParkedPerClient: 3, maxParkedPerGroup: 100, minInvisibleMs: 0 },
  });
  for (const t of ['Ready', 'Empty', 'PullT']) await broker.topics.upsert(t, {});
  for (const g of ['G1', 'G2', 'G3', 'G4']) await broker.groups.upsert(g, {});
});
after(async () => {
  for (const a of aborts) a.abort();
  await broker.close();
  dir.cleanup();
});

function receive(clientId: string, topic: string, group = 'G1', pollMs = 60_000) {
  const a = new AbortController();
  aborts.push(a);
  const p = broker.consume.receive({
    group,
    topic,
    filter: ALL,
    invisibleMs: 30_000,
    autoRenew: false,
    clientId,
    pollMs,
    signal: a.signal,
  });
  return { p, abort: () => a.abort() };
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(cond(), 'condition never held');
}

const send = (topic: string, n: number) =>
  storeOf(broker).append(
    Array.from({ length: n }, (_, i) => ({
      topic,
      queueId: 0,
      messageId: `${topic}-${Date.now()}-${i}`,
      body: Buffer.from('x'),
    })),
  );

test('a hog parking its share cannot refuse a receive that has messages ready, nor another client', async () => {
  const lot = broker.consume.parking;
  const hog = [receive('hog', 'Empty'), receive('hog', 'Empty'), receive('hog', 'Empty')];
  await until(() => lot.parkedBy('hog') === 3);
  // Over its own share: the hog itself is refused.
  await assert.rejects(receive('hog', 'Empty').p, (e) => isVelaError(e, 'TOO_MANY_REQUESTS'));

  await send('Ready', 2);
  const got = await receive('other', 'Ready', 'G2').p;
  assert.equal(got.length, 2, 'messages ready are handed out whatever is parked');

  // The lot (4) fills up: another client still gets to wait, the hog gives up its oldest.
  const a = receive('a', 'Empty', 'G2');
  await until(() => lot.parked === 4);
  const b = receive('b', 'Empty', 'G3');
  const displaced = await Promise.race(hog.map((r) => r.p));
  assert.deepEqual(displaced, [], "one of the hog's receives is answered empty to make room");
  await until(() => lot.parkedBy('b') === 1);
  assert.equal(lot.parkedBy('hog'), 2);
  for (const r of [a, b, ...hog]) r.abort();
  await Promise.all([a.p, b.p, ...hog.map((r) => r.p)]);
  assert.equal(lot.parked, 0, 'every place is given back');
});

test('PullMessage long polls are bounded per client too', async () => {
  const lot = broker.consume.parking;
  const pulls = [0, 1, 2].map(() => {
    const a = new AbortController();
    aborts.push(a);
    const p = broker.pull.pull({
      group: 'G4',
      topic: 'PullT',
      queueId: 0,
      offset: 0,
      filter: ALL,
      pollMs: 60_000,
      clientId: 'puller',
      signal: a.signal,
    });
    return { p, a };
  });
  await until(() => lot.parkedBy('puller') === 3);
  await assert.rejects(
    broker.pull.pull({
      group: 'G4',
      topic: 'PullT',
      queueId: 0,
      offset: 0,
      filter: ALL,
      pollMs: 60_000,
      clientId: 'puller',
    }),
    (e) => isVelaError(e, 'TOO_MANY_REQUESTS'),
  );
  await send('PullT', 1);
  for (const { p } of pulls) assert.equal((await p).messages.length, 1, 'an arrival wakes every parked pull');
  assert.equal(lot.parked, 0);
});

interface Parked {
  p: Promise<unknown>;
  a: AbortController;
}

/**
 * A broker of its own (in a temp dir) with `topic` (`queues` queues) and `group`, for `body`; what
 * `park` parked is aborted and awaited after it, and the broker closed.
 */
async function withOwnBroker(
  topic: string,
  group: string,
  queues: number,
  body: (b: Broker, park: (n: number, batchSize?: number) => Parked[]) => Promise<void>,
): Promise<void> {
  const d = tempDir(`vela-${topic}-`);
  const b = await Broker.open({ dataDir: d.path, consume: { minInvisibleMs: 0 } });
  const parked: Parked[] = [];
  const park = (n: number, batchSize?: number) => {
    const more = Array.from({ length: n }, (_, i) => {
      const a = new AbortController();
      const p = b.consume.receive({
        group,
        topic,
        filter: ALL,
        invisibleMs: 30_000,
        autoRenew: false,
        clientId: `${topic}-${parked.length + i}`,
        pollMs: 60_000,
        signal: a.signal,
        ...(batchSize !== undefined ? { batchSize } : {}),
      });
      return { p, a };
    });
    parked.push(...more);
    return more;
  };
  try {
    await b.topics.upsert(topic, { readQueueNums: queues, writeQueueNums: queues });
    await b.groups.upsert(group, {});
    await body(b, park);
  } finally {
    for (const r of parked) r.a.abort();
    await Promise.all(parked.map((r) => r.p.catch(() => {})));
    await b.close();
    d.cleanup();
  }
}

/** Counts the store reads of `topic` until `stop()`. */
function countReads(b: Broker, topic: string): { readonly count: number; stop(): void } {
  const store = storeOf(b);
  const read = store.read.bind(store);
  const counter = {
    count: 0,
    stop: () => {
      store.read = read;
    },
  };
  store.read = (t, ...rest) => {
    if (t === topic) counter.count++;
    return read(t, ...rest);
  };
  return counter;
}

const messagesOf = (topic: string, n: number, queues: number) =>
  Array.from({ length: n }, (_, i) => ({
    topic,
    queueId: i % queues,
    messageId: `${topic}-${i}`,
    body: Buffer.from('x'),
  }));

test('one arrival wakes one parked receive of a group, not all of them', () =>
  withOwnBroker('Herd', 'HG', 1, async (b, park) => {
    const parked = park(10);
    await until(() => b.consume.parking.parked === 10);
    const reads = countReads(b, 'Herd');
    await storeOf(b).append(messagesOf('Herd', 1, 1));
    const first = (await Promise.race(parked.map((r) => r.p))) as unknown[];
    assert.equal(first.length, 1);
    await until(() => b.consume.parking.parked === 9);
    await new Promise((r) => setTimeout(r, 50));
    // The receive that took the message read everything there was: it woke no other to look again.
    assert.equal(reads.count, 1, `${reads.count} reads of the topic for one message`);
    reads.stop();
  }));

test('one write to every queue of a topic wakes one parked receive, which takes it all', () =>
  withOwnBroker('Spread', 'SG', 8, async (b, park) => {
    const parked = park(6);
    await until(() => b.consume.parking.parked === 6);
    const reads = countReads(b, 'Spread');
    await storeOf(b).append(messagesOf('Spread', 8, 8));
    const first = (await Promise.race(parked.map((r) => r.p))) as unknown[];
    assert.equal(first.length, 8, "the woken receive takes every queue's message");
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(b.consume.parking.parked, 5, 'the others stay parked');
    // One look at each queue that got a message. A wake per queue woke a receive per queue, and each
    // of them read every queue to find the messages gone.
    assert.equal(reads.count, 8, `${reads.count} reads of the topic for one write`);
    reads.stop();
  }));

test('a receive that leaves messages behind wakes the next parked receive of its group', () =>
  withOwnBroker('More', 'MG', 2, async (b, park) => {
    const parked = park(3, 2);
    await until(() => b.consume.parking.parked === 3);
    await storeOf(b).append(messagesOf('More', 5, 2));
    // Batches of 2: three receives share the five messages, without any new arrival to wake them.
    const got = (await Promise.all(parked.map((r) => r.p))) as unknown[][];
    assert.deepEqual(got.map((g) => g.length).sort(), [1, 2, 2]);
  }));

test('a parked pull is woken by an arrival on its own queue, not by one on another queue', () =>
  withOwnBroker('PQ', 'PG', 2, async (b) => {
    const a = new AbortController();
    const reads = countReads(b, 'PQ');
    const pulled = b.pull.pull({
      group: 'PG',
      topic: 'PQ',
      queueId: 0,
      offset: 0,
      filter: ALL,
      pollMs: 60_000,
      clientId: 'pq-puller',
      signal: a.signal,
    });
    try {
      await until(() => b.consume.parking.parked === 1);
      assert.equal(reads.count, 1);
      await storeOf(b).append([{ topic: 'PQ', queueId: 1, messageId: 'PQ1', body: Buffer.from('x') }]);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(reads.count, 1, 'an arrival on queue 1 made the pull of queue 0 look again');
      assert.equal(b.consume.parking.parked, 1);
      await storeOf(b).append([{ topic: 'PQ', queueId: 0, messageId: 'PQ0', body: Buffer.from('y') }]);
      const r = await pulled;
      assert.deepEqual(
        r.messages.map((m) => m.messageId),
        ['PQ0'],
      );
    } finally {
      reads.stop();
      a.abort();
      await pulled.catch(() => {});
    }
  }));
