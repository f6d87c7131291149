/**
 * The log's chunk cache: spans read from the files once, in aligned chunks, shared by every read of
 * them; never serving bytes the log no longer holds; within its bound.
 */
import { test } from 'node:test';
import { closeSync, openSync, readdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { SegmentLog } from '../../src/store/segment-log.js';
import { MessageStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';

const CHUNK = 4096;
/** A chunk buffer: the chunk and 1/16 of it past its end. */
const HELD = CHUNK + CHUNK / 16;
const frame = (i: number, size = 1000) => Buffer.alloc(size, i & 0xff);

/** The bytes the chunk cache holds for [position, position + length), or null. */
function cached(log: SegmentLog, position: number, length: number): Buffer | null {
  const out = Buffer.alloc(length);
  return log.copyCached(position, length, out, 0) ? out : null;
}

async function withLog(
  opts: { chunkCacheBytes: number; segmentSize?: number },
  fn: (log: SegmentLog) => Promise<void>,
): Promise<void> {
  const dir = tempDir();
  const log = await SegmentLog.open({
    dir: dir.path,
    segmentSize: opts.segmentSize ?? 1 << 20,
    flush: 'async',
    flushIntervalMs: 3_600_000,
    logger: silentLogger(),
    readCacheBytes: 0,
    chunkCacheBytes: opts.chunkCacheBytes,
    chunkSize: CHUNK,
  });
  try {
    await fn(log);
  } finally {
    await log.close();
    dir.cleanup();
  }
}

test('records are served from whole chunks, equal to the files, each chunk read once', async () => {
  await withLog({ chunkCacheBytes: 8 * HELD }, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 20; i++) positions.push(log.appendFrame(frame(i))); // 20,000 bytes: 4 whole chunks
    await log.whenDurable();
    assert.equal(cached(log, positions[0]!, 1000), null, 'nothing cached before a load');
    await log.loadChunks(positions[0]!, positions[19]! + 1000);
    assert.equal(log.chunkCacheSize, 4 * HELD, 'the partial chunk at the head is left out');
    for (let i = 0; i < 20; i++) {
      const p = positions[i]!;
      const held = cached(log, p, 1000);
      const chunk = Math.floor(p / CHUNK);
      if (chunk >= 4 || p + 1000 > chunk * CHUNK + HELD) {
        assert.equal(held, null, `frame ${i} is not within one chunk and what it holds past its end`);
      } else {
        assert.ok(held, `frame ${i} from a chunk`);
        assert.deepEqual(held, frame(i));
      }
      assert.deepEqual(await log.read(p, 1000), frame(i));
    }
  });
});

test('the cache keeps at most its bound; chunks of deleted segments are dropped', async () => {
  await withLog({ chunkCacheBytes: 3 * HELD, segmentSize: 4 * CHUNK }, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 64; i++) positions.push(log.appendFrame(frame(i, 1024))); // 4 segments of 16 frames
    await log.whenDurable();
    await log.loadChunks(0, positions[47]! + 1024);
    assert.equal(log.chunkCacheSize, 3 * HELD, 'the three chunks read last');
    assert.equal(cached(log, positions[0]!, 1024), null, 'the oldest were evicted');
    assert.deepEqual(cached(log, positions[40]!, 1024), frame(40, 1024));
    await log.loadChunks(positions[60]!, positions[60]! + 1024);
    assert.equal(log.chunkCacheSize, 3 * HELD);
    assert.equal(cached(log, positions[36]!, 1024), null, 'the least recently used went');
    await log.deleteSegmentsBefore(positions[48]!);
    assert.equal(log.chunkCacheSize, HELD, 'the chunks of the deleted segments are gone');
    assert.equal(cached(log, positions[40]!, 1024), null);
    assert.deepEqual(cached(log, positions[60]!, 1024), frame(60, 1024));
  });
});

test('truncation (recovery) forgets the chunks: nothing past the cut is served', async () => {
  await withLog({ chunkCacheBytes: 8 * HELD }, async (log) => {
    const positions: number[] = [];
    for (let i = 0; i < 12; i++) positions.push(log.appendFrame(frame(i, 1024)));
    await log.whenDurable();
    await log.loadChunks(0, 3 * CHUNK);
    assert.deepEqual(cached(log, positions[5]!, 1024), frame(5, 1024));
    await log.truncate(positions[4]!);
    assert.equal(log.chunkCacheSize, 0);
    assert.equal(cached(log, positions[5]!, 1024), null, 'cut: not served from memory');
    assert.equal((await log.read(positions[5]!, 1024)).length, 0, 'nor from the files');
  });
});

test('a store with the chunk cache reads interleaved queues as it does without, and still finds corruption', async () => {
  const results: string[][] = [];
  for (const logChunkCacheBytes of [0, 64 * 1024]) {
    const dir = tempDir();
    const open = () =>
      MessageStore.open({ dataDir: dir.path, flush: 'sync', logReadCacheBytes: 0, logChunkCacheBytes });
    let store = await open();
    try {
      // Four queues interleaved in the log, 3 KiB bodies: a queue's records are 12 KiB apart.
      const batch = [];
      for (let i = 0; i < 200; i++) {
        batch.push({ topic: 'T', queueId: i % 4, body: Buffer.alloc(3000, i & 0xff), messageId: `m${i}` });
      }
      await store.append(batch);
      const victim = (await store.read('T', 1, 30, { maxCount: 1 })).messages[0]!;
      await store.close();
      // One flipped byte in the body of queue 1's offset 30: read from the files, it must be caught.
      const [segment] = readdirSync(join(dir.path, 'commitlog')).filter((n) => /^\d{20}\.log$/.test(n));
      const fd = openSync(join(dir.path, 'commitlog', segment!), 'r+');
      writeSync(fd, Buffer.from([0x5a]), 0, 1, victim.logPosition + victim.size - 100);
      closeSync(fd);
      store = await open();
      const seen: string[] = [];
      const corrupt: string[] = [];
      for (let q = 0; q < 4; q++) {
        let offset = 0;
        for (;;) {
          const r = await store.read('T', q, offset, { maxCount: 16 });
          if (r.status !== 'FOUND') break;
          for (const m of r.messages) {
            assert.ok(
              m.body.every((b) => b === (Number(m.messageId.slice(1)) & 0xff)),
              `${m.messageId} body`,
            );
            seen.push(`${q}:${m.queueOffset}:${m.messageId}`);
          }
          corrupt.push(...r.corruptOffsets.map((o) => `${q}:${o}`));
          offset = r.nextOffset;
        }
      }
      assert.equal(seen.length, 199);
      assert.deepEqual(corrupt, ['1:30']);
      results.push(seen);
    } finally {
      await store.close();
      dir.cleanup();
    }
  }
  assert.deepEqual(results[1], results[0]);
});
