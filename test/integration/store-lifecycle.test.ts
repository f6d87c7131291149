/**
 * Store lifecycle: deleting a topic releases its queues (files, descriptors, memory) for good; time
 * is the injected clock's, never the wall clock's (retention never deletes early because a file's
 * mtime or the system clock jumped).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MessageStore, type MessageInput } from '../../src/store/index.js';
import { ManualClock } from '../../src/common/clock.js';
import { Broker } from '../../src/broker/broker.js';
import { tempDir, bodyFor } from '../helpers.js';

const msg = (topic: string, queueId: number, id: string): MessageInput => ({
  topic,
  queueId,
  messageId: id,
  body: bodyFor(id),
  keys: [`key-${id}`],
});

test('deleteTopic releases the queues of a topic: files, descriptors and memory, across restarts', async () => {
  const dir = tempDir();
  try {
    let store = await MessageStore.open({ dataDir: dir.path, indexFlushIntervalMs: 10 });
    await store.append([msg('Gone', 0, 'g0'), msg('Gone', 1, 'g1'), msg('Kept', 0, 'k0')]);
    await store.checkpoint();
    await store.read('Gone', 0, 0);
    await store.read('Gone', 1, 0);
    const before = store.stats();
    assert.equal(await store.deleteTopic('Gone'), 2);
    assert.deepEqual(
      store.listQueues().map((q) => q.topic),
      ['Kept'],
    );
    assert.ok(store.stats().openFiles < before.openFiles, 'its descriptors are closed');
    assert.equal(existsSync(join(dir.path, 'consumequeue', 'Gone')), false, 'its index files are gone');
    assert.equal((await store.read('Gone', 0, 0)).status, 'NO_SUCH_QUEUE');
    assert.deepEqual(await store.findById('g0'), [], 'its records are never served again');
    assert.equal(await store.deleteTopic('Gone'), 0);

    // A topic created again under the same name starts afresh.
    const [again] = await store.append([msg('Gone', 0, 'new0')]);
    assert.equal(again!.queueOffset, 0);
    await store.close();

    // Across a clean restart, and across a crash (no closing checkpoint: the log is re-read).
    for (const crash of [false, true]) {
      if (crash) {
        const ckpt = JSON.parse(readFileSync(join(dir.path, 'checkpoint.json'), 'utf8'));
        ckpt.logPosition = 0;
        ckpt.queues = [];
        ckpt.keys = {};
        ckpt.clean = false;
        writeFileSync(join(dir.path, 'checkpoint.json'), JSON.stringify(ckpt));
      }
      store = await MessageStore.open({ dataDir: dir.path });
      const r = await store.read('Gone', 0, 0);
      assert.deepEqual(
        r.messages.map((m) => m.messageId),
        ['new0'],
        `crash=${crash}`,
      );
      assert.equal(store.queueState('Gone', 1).maxOffset, 0);
      assert.deepEqual(
        (await store.read('Kept', 0, 0)).messages.map((m) => m.messageId),
        ['k0'],
      );
      assert.deepEqual(await store.findById('g1'), []);
      await store.close();
    }
  } finally {
    dir.cleanup();
  }
});

test('retention never deletes early because of a file mtime or a wall-clock jump: only the store clock counts', async () => {
  const dir = tempDir();
  const clock = new ManualClock(Date.UTC(2030, 0, 1));
  const realNow = Date.now;
  try {
    const opts = { dataDir: dir.path, clock, segmentSize: 4096, retentionMs: 3600_000 };
    let store = await MessageStore.open(opts);
    for (let i = 0; i < 20; i++) await store.append([msg('T', 0, `m${i}`)]);
    await store.close();
    // A checkpoint without store times for the segments (written by an older version, or lost) and
    // files whose mtime says they are decades old (the wall clock was wrong when they were written).
    const ckpt = JSON.parse(readFileSync(join(dir.path, 'checkpoint.json'), 'utf8'));
    delete ckpt.segments;
    writeFileSync(join(dir.path, 'checkpoint.json'), JSON.stringify(ckpt));
    const logDir = join(dir.path, 'commitlog');
    for (const name of readdirSync(logDir))
      utimesSync(join(logDir, name), new Date(2000, 0, 1), new Date(2000, 0, 1));
    // And the system clock jumps ten years ahead.
    Date.now = () => realNow() + 10 * 365 * 86400_000;

    store = await MessageStore.open(opts);
    const segments = store.stats().segments;
    assert.ok(segments > 3);
    let report = await store.runRetention();
    assert.deepEqual(report.deletedSegments, [], 'nothing is deleted before its time by the store clock');
    assert.equal((await store.read('T', 0, 0, { maxCount: 100 })).messages.length, 20);

    clock.advance(3600_000 + 1);
    report = await store.runRetention();
    assert.equal(report.deletedSegments.length, segments - 1, 'once the store clock says so, they go');
    await store.close();
  } finally {
    Date.now = realNow;
    dir.cleanup();
  }
});

test("a broker's data directory is private: files 0600, directories 0700", async () => {
  const dir = tempDir();
  try {
    const dataDir = join(dir.path, 'data');
    const broker = await Broker.open({ dataDir, store: { stateCompactBytes: 1024 } });
    for (let i = 0; i < 20; i++) await broker.topics.upsert(`Private${i}`, {});
    await broker.close();
    const walk = (p: string): void => {
      const st = statSync(p);
      const mode = st.mode & 0o777;
      assert.equal(mode, st.isDirectory() ? 0o700 : 0o600, `${p} is ${mode.toString(8)}`);
      if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
    };
    walk(dataDir);
    assert.ok(
      existsSync(join(dataDir, 'receipt-handle.key')) && existsSync(join(dataDir, 'state', 'snapshot')),
    );
  } finally {
    dir.cleanup();
  }
});
