import { test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import assert from 'node:assert/strict';
import { MessageStore, tagHash, type MessageInput } from '../../src/store/index.js';
import { DERIVE_BODY_CRC_FROM } from '../../src/store/record-codec.js';
import { ManualClock } from '../../src/common/clock.js';
import { isVelaError } from '../../src/common/errors.js';
import { Code } from '../../src/common/codes.js';
import { tempDir, bodyFor, captureLogger } from '../helpers.js';

const msg = (
  topic: string,
  queueId: number,
  id: string,
  extra: Partial<MessageInput> = {},
): MessageInput => ({
  topic,
  queueId,
  messageId: id,
  body: bodyFor(id),
  ...extra,
});

async function withStore(
  opts: Partial<Parameters<typeof MessageStore.open>[0]>,
  fn: (store: MessageStore, dataDir: string) => Promise<void>,
): Promise<void> {
  const dir = tempDir();
  const store = await MessageStore.open({ dataDir: dir.path, ...opts });
  try {
    await fn(store, dir.path);
  } finally {
    await store.close();
    dir.cleanup();
  }
}

test('appends get consecutive offsets per queue, in call order, and read back intact', async () => {
  await withStore({}, async (store) => {
    const r1 = await store.append([msg('A', 0, 'a0'), msg('A', 1, 'a1'), msg('A', 0, 'a2')]);
    const r2 = await store.append([msg('A', 0, 'a3'), msg('B', 0, 'b0')]);
    assert.deepEqual(
      [...r1, ...r2].map((r) => [r.messageId, r.queueId, r.queueOffset]),
      [
        ['a0', 0, 0],
        ['a1', 1, 0],
        ['a2', 0, 1],
        ['a3', 0, 2],
        ['b0', 0, 0],
      ],
    );
    assert.ok(r1[1]!.logPosition > r1[0]!.logPosition);
    const read = await store.read('A', 0, 0);
    assert.equal(read.status, 'FOUND');
    assert.deepEqual(
      read.messages.map((m) => [m.messageId, m.queueOffset]),
      [
        ['a0', 0],
        ['a2', 1],
        ['a3', 2],
      ],
    );
    for (const m of read.messages) assert.deepEqual(m.body, bodyFor(m.messageId));
    assert.equal(read.nextOffset, 3);
    assert.deepEqual(store.queueState('A', 0).maxOffset, 3);
  });
});

test('reads are bounded by count and bytes (the first message always comes) and report their status', async () => {
  await withStore({}, async (store) => {
    const big = Buffer.alloc(10_000, 1);
    await store.append(Array.from({ length: 10 }, (_, i) => msg('T', 0, `m${i}`, { body: big })));
    assert.equal((await store.read('T', 0, 0, { maxCount: 3 })).messages.length, 3);
    assert.equal((await store.read('T', 0, 0, { maxBytes: 25_000 })).messages.length, 2);
    assert.equal((await store.read('T', 0, 0, { maxBytes: 10 })).messages.length, 1);
    assert.equal((await store.read('T', 0, 10)).status, 'NO_NEW_MESSAGE');
    const over = await store.read('T', 0, 99);
    assert.equal(over.status, 'OFFSET_OVERFLOW');
    assert.equal(over.nextOffset, 10);
    assert.equal((await store.read('T', 5, 0)).status, 'NO_SUCH_QUEUE');
  });
});

test('tag filters skip non-matching messages through the index', async () => {
  await withStore({}, async (store) => {
    await store.append(
      Array.from({ length: 30 }, (_, i) => msg('T', 0, `m${i}`, { tag: ['A', 'B', 'C'][i % 3]! })),
    );
    const r = await store.read('T', 0, 0, { maxCount: 5, tagHashes: new Set([tagHash('A'), tagHash('C')]) });
    assert.deepEqual(
      r.messages.map((m) => m.messageId),
      ['m0', 'm2', 'm3', 'm5', 'm6'],
    );
    assert.equal(r.nextOffset, 7);
    const none = await store.read('T', 0, 0, { tagHashes: new Set([tagHash('Z')]) });
    assert.equal(none.messages.length, 0);
    assert.equal(none.nextOffset, 30, 'an empty filtered read still moves forward');
  });
});

test('messages are found by id and by key, newest first, collisions excluded', async () => {
  await withStore({ segmentSize: 32 * 1024 }, async (store) => {
    for (let i = 0; i < 50; i++) {
      await store.append([msg(i % 2 ? 'X' : 'Y', 0, `id-${i}`, { keys: [`order-${i % 5}`, `user-${i}`] })]);
    }
    const byId = await store.findById('id-17');
    assert.deepEqual(
      byId.map((m) => [m.messageId, m.topic]),
      [['id-17', 'X']],
    );
    const byKey = await store.findByKey('order-2');
    assert.deepEqual(
      byKey.map((m) => m.messageId),
      ['id-47', 'id-42', 'id-37', 'id-32', 'id-27', 'id-22', 'id-17', 'id-12', 'id-7', 'id-2'],
    );
    assert.deepEqual(
      (await store.findByKey('order-2', { topic: 'Y', limit: 2 })).map((m) => m.messageId),
      ['id-42', 'id-32'],
    );
    assert.deepEqual(await store.findById('nope'), []);
  });
});

test('time search: the first offset stored at or after a timestamp', async () => {
  const clock = new ManualClock(1_000_000);
  await withStore({ clock }, async (store) => {
    for (let i = 0; i < 10; i++) {
      await store.append([msg('T', 0, `m${i}`)]);
      clock.advance(1000);
    }
    assert.equal(await store.offsetForTimestamp('T', 0, 0), 0);
    assert.equal(await store.offsetForTimestamp('T', 0, 1_004_000), 4);
    assert.equal(await store.offsetForTimestamp('T', 0, 1_004_001), 5);
    assert.equal(await store.offsetForTimestamp('T', 0, 9_999_999), 10);
  });
});

test('a clean reopen recovers without scanning and keeps offsets, ids and lookups', async () => {
  const dir = tempDir();
  try {
    let store = await MessageStore.open({
      dataDir: dir.path,
      segmentSize: 16 * 1024,
      indexEntriesPerFile: 16,
    });
    for (let i = 0; i < 100; i++) await store.append([msg('T', i % 3, `m${i}`, { keys: [`k${i}`] })]);
    await store.close();
    store = await MessageStore.open({ dataDir: dir.path, segmentSize: 16 * 1024, indexEntriesPerFile: 16 });
    assert.equal(store.recoveryReport.clean, true);
    assert.equal(store.recoveryReport.scannedBytes, 0);
    assert.equal(store.queueState('T', 0).maxOffset, 34);
    assert.deepEqual(
      (await store.findByKey('k99')).map((m) => m.messageId),
      ['m99'],
    );
    const [r] = await store.append([msg('T', 0, 'after')]);
    assert.equal(r!.queueOffset, 34);
    await store.close();
  } finally {
    dir.cleanup();
  }
});

test('one process per data directory', async () => {
  await withStore({}, async (_store, dataDir) => {
    await assert.rejects(MessageStore.open({ dataDir }), (e) => isVelaError(e, 'STORE_LOCKED'));
  });
});

test('retention deletes expired segments with a fake clock, moves minOffset, never the active segment', async () => {
  const clock = new ManualClock(0);
  const H = 3600_000;
  const { logger, lines } = captureLogger();
  await withStore(
    {
      clock,
      segmentSize: 8 * 1024,
      retentionMs: 72 * H,
      logger,
      diskUsage: async () => ({ totalBytes: 100, usedBytes: 10 }),
    },
    async (store) => {
      const body = Buffer.alloc(1000, 7);
      for (let i = 0; i < 40; i++) {
        await store.append([msg('T', 0, `m${i}`, { body, keys: [`k${i}`] })]);
        clock.advance(H);
      }
      const segmentsBefore = store.stats().segments;
      assert.ok(segmentsBefore >= 5);
      // Message i was stored at hour i. Until hour 72 nothing is older than the retention time.
      clock.set(72 * H - 1);
      assert.deepEqual((await store.runRetention()).deletedSegments, [], 'nothing is old enough yet');
      // At hour 100 messages 0..28 are expired; a segment goes only when all of its messages are.
      clock.set(100 * H);
      const report = await store.runRetention();
      assert.ok(report.deletedSegments.length > 0);
      assert.ok(report.deletedSegments.every((s) => s.reason === 'expired'));
      const state = store.queueState('T', 0);
      const perSegment = Math.ceil(40 / segmentsBefore);
      assert.ok(
        state.minOffset <= 29 && state.minOffset > 29 - perSegment - 1,
        `minOffset ${state.minOffset}`,
      );
      const old = await store.read('T', 0, 0);
      assert.equal(old.status, 'OFFSET_TOO_SMALL');
      assert.equal(old.nextOffset, state.minOffset);
      const fresh = await store.read('T', 0, state.minOffset);
      assert.equal(fresh.messages[0]!.messageId, `m${state.minOffset}`);
      assert.deepEqual(await store.findByKey('k0'), [], 'deleted messages are gone from the key index');
      assert.ok(lines.some((l) => /retention deleted/.test(l.msg)));
      clock.set(10_000 * H);
      await store.runRetention();
      assert.equal(store.stats().segments, 1, 'the active segment stays');
      assert.equal(store.queueState('T', 0).maxOffset, 40, 'acks or deletion never move the max offset');
    },
  );
});

test('disk pressure: cleanup deletes oldest segments, refusal above 90 % is flow control and clears', async () => {
  let used = 50;
  await withStore(
    { segmentSize: 8 * 1024, diskUsage: async () => ({ totalBytes: 100, usedBytes: used }) },
    async (store) => {
      const body = Buffer.alloc(1000, 7);
      for (let i = 0; i < 40; i++) await store.append([msg('T', 0, `m${i}`, { body })]);
      const before = store.stats().segments;
      used = 80; // cleanup threshold: deletes the oldest segments even though none expired
      const r = await store.runRetention();
      assert.ok(r.deletedSegments.length > 0 && r.deletedSegments.every((s) => s.reason === 'disk-cleanup'));
      assert.ok(store.stats().segments < before);

      used = 95;
      await store.checkDisk();
      const err = await store.append([msg('T', 0, 'refused')]).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(isVelaError(err, 'STORE_DISK_FULL'), 'refused above 90 %');
      assert.equal(err.code, Code.TOO_MANY_REQUESTS);
      assert.equal(err.retriable, true);
      used = 60;
      await store.checkDisk();
      const [ok] = await store.append([msg('T', 0, 'accepted')]);
      assert.equal(ok!.queueOffset, 40, 'the refused append took no offset');
    },
  );
});

test('bad input is refused before anything is written', async () => {
  await withStore({}, async (store) => {
    for (const bad of [
      { ...msg('T', 0, 'x'), topic: '' },
      { ...msg('T', 0, 'x'), queueId: -1 },
      { ...msg('T', 0, 'x'), queueId: 1.5 },
      { ...msg('T', 0, 'x'), messageId: '' },
      { ...msg('T', 0, 'x'), tag: 'é'.repeat(40_000) },
      { ...msg('T', 0, 'x'), body: 'not bytes' as unknown as Buffer },
    ]) {
      await assert.rejects(store.append([msg('T', 0, 'good'), bad]), (e) =>
        isVelaError(e, 'STORE_BAD_ARGUMENT'),
      );
    }
    assert.equal(store.queueState('T', 0).maxOffset, 0, 'a batch with one bad message stores nothing');
  });
});

test('async flush acknowledges after the write and persists on close', async () => {
  const dir = tempDir();
  try {
    let store = await MessageStore.open({ dataDir: dir.path, flush: 'async', flushIntervalMs: 20 });
    await store.append(Array.from({ length: 100 }, (_, i) => msg('T', 0, `m${i}`)));
    assert.equal((await store.read('T', 0, 0, { maxCount: 200 })).messages.length, 100);
    await store.close();
    store = await MessageStore.open({ dataDir: dir.path });
    assert.equal(store.queueState('T', 0).maxOffset, 100);
    await store.close();
  } finally {
    dir.cleanup();
  }
});

test('arrival listeners hear of messages only once they are readable', async () => {
  await withStore({}, async (store) => {
    const events: [string, number, number, number][] = [];
    store.onArrival((topic, queueId, maxOffset) =>
      events.push([topic, queueId, maxOffset, store.queueState(topic, queueId).maxOffset]),
    );
    await store.append([msg('T', 0, 'a'), msg('T', 0, 'b'), msg('U', 2, 'c')]);
    assert.deepEqual(events.sort(), [
      ['T', 0, 2, 2],
      ['U', 2, 1, 1],
    ]);
  });
});

test('concurrent appenders share fsyncs and all get their own results', async () => {
  await withStore({ segmentSize: 64 * 1024 }, async (store) => {
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => store.append([msg('T', i % 4, `m${i}`)])),
    );
    const offsets = new Map<number, number[]>();
    for (const [r] of results) offsets.set(r!.queueId, [...(offsets.get(r!.queueId) ?? []), r!.queueOffset]);
    for (const list of offsets.values())
      assert.deepEqual(
        list,
        Array.from({ length: 50 }, (_, i) => i),
      );
    for (let q = 0; q < 4; q++)
      assert.equal((await store.read('T', q, 0, { maxCount: 100 })).messages.length, 50);
  });
});

test('a key lookup returns each message once, even with repeated keys and an index flush under way', async () => {
  await withStore({ indexFlushIntervalMs: 1 }, async (store) => {
    for (let i = 0; i < 20; i++)
      await store.append([msg('T', 0, `dup-${i}`, { keys: ['same', 'same', `dup-${i}`] })]);
    const lookups = await Promise.all(
      Array.from({ length: 20 }, () => store.findByKey('same', { limit: 100 })),
    );
    for (const found of lookups) {
      const ids = found.map((m) => m.messageId);
      assert.equal(ids.length, 20);
      assert.equal(new Set(ids).size, 20, 'no message twice');
    }
  });
});

test("a read that verifies records, or serves this process's own, carries each body's CRC (the delivery digest); an unverified one does not", async () => {
  const dir = tempDir();
  try {
    let store = await MessageStore.open({ dataDir: dir.path });
    // Two bodies too short to be worth deriving (the delivery computes those), two long enough.
    const bodies = [Buffer.alloc(0), Buffer.from('x'), randomBytes(1024), randomBytes(5000)];
    await store.append(
      bodies.map((body, i) => msg('Crc', 0, `m${i}`, { body, properties: { k: 'v'.repeat(i * 10) } })),
    );
    // Still in memory: the bytes this process wrote, checksum and all (no verification needed).
    const recent = await store.read('Crc', 0, 0, { maxCount: 10 });
    assert.deepEqual(
      recent.messages.map((m) => m.bodyCrc),
      recent.messages.map((m) => (m.body.length >= DERIVE_BODY_CRC_FROM ? crc32(m.body) >>> 0 : -1)),
    );
    await store.close();
    store = await MessageStore.open({ dataDir: dir.path });
    let r = await store.read('Crc', 0, 0, { maxCount: 10 });
    assert.equal(r.messages.length, 4);
    for (const m of r.messages) {
      const want = m.body.length >= DERIVE_BODY_CRC_FROM ? crc32(m.body) >>> 0 : -1;
      assert.equal(m.bodyCrc, want, m.messageId);
    }
    assert.equal(r.messages.filter((m) => m.bodyCrc !== -1).length, 2);
    await store.close();
    store = await MessageStore.open({ dataDir: dir.path, verifyChecksumOnRead: false });
    r = await store.read('Crc', 0, 0, { maxCount: 10 });
    for (const m of r.messages) assert.equal(m.bodyCrc, -1, 'not verified: not known');
    await store.close();
  } finally {
    dir.cleanup();
  }
});
