/**
 * Corruption: after a crash the log tail is cut mid-record, or bytes of the last records are flipped.
 * Recovery keeps every earlier record, drops the damaged tail, says so in the log, and the store
 * keeps working. Nothing damaged is ever served.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import {
  readdirSync,
  statSync,
  truncateSync,
  openSync,
  readSync,
  writeSync,
  closeSync,
  existsSync,
} from 'node:fs';
import { join } from 'node:path';
import { MessageStore } from '../../src/store/index.js';
import { tempDir, spawnTs, waitExit, bodyFor, captureLogger } from '../helpers.js';

const CHILD = fileURLToPath(new URL('./append-child.ts', import.meta.url));
const COUNT = 120;

/** Run the child until it has appended COUNT messages, then kill -9 it (no clean shutdown). */
async function crashedStore(dataDir: string): Promise<Map<string, { queueId: number; queueOffset: number }>> {
  const acked = new Map<string, { queueId: number; queueOffset: number }>();
  let done: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const child = spawnTs(CHILD, [dataDir, 'c', `fixed:${COUNT}`], (line) => {
    const [kind, id, q, off] = line.split(' ');
    if (kind === 'A') acked.set(id!, { queueId: Number(q), queueOffset: Number(off) });
    if (kind === 'DONE') done();
  });
  await finished;
  child.kill('SIGKILL');
  await waitExit(child);
  return acked;
}

function lastSegment(dataDir: string): string {
  const dir = join(dataDir, 'commitlog');
  const names = readdirSync(dir)
    .filter((n) => n.endsWith('.log'))
    .sort();
  return join(dir, names.at(-1)!);
}

/**
 * Positions of the last `n` frames of a segment file, found by walking the length fields (up to the
 * zeros past the last record of a segment sized ahead, if the crash left it so).
 */
function lastFrames(path: string, n: number): { start: number; length: number }[] {
  const size = statSync(path).size;
  const fd = openSync(path, 'r');
  const frames: { start: number; length: number }[] = [];
  const head = Buffer.alloc(4);
  for (let p = 0; p < size;) {
    readSync(fd, head, 0, 4, p);
    const length = head.readUInt32LE(0);
    if (length === 0) break;
    frames.push({ start: p, length });
    p += length;
  }
  closeSync(fd);
  return frames.slice(-n);
}

async function readAll(store: MessageStore): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (let q = 0; q < 4; q++) {
    let offset = 0;
    for (;;) {
      const r = await store.read('CrashTopic', q, offset, { maxCount: 1000, maxBytes: 16 << 20 });
      assert.deepEqual(r.corruptOffsets, []);
      for (const m of r.messages) out.set(m.messageId, m.body);
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
  }
  return out;
}

test('a tail cut mid-record is truncated to the last whole record', { timeout: 60_000 }, async () => {
  const dir = tempDir();
  try {
    const acked = await crashedStore(dir.path);
    const seg = lastSegment(dir.path);
    const [last] = lastFrames(seg, 1);
    truncateSync(seg, last!.start + Math.floor(last!.length / 2));

    const { logger, lines } = captureLogger();
    const store = await MessageStore.open({
      dataDir: dir.path,
      segmentSize: 256 * 1024,
      indexEntriesPerFile: 64,
      logger,
    });
    const all = await readAll(store);
    const lost = [...acked.keys()].filter((id) => !all.has(id));
    assert.equal(lost.length, 1, 'exactly the cut record is gone');
    assert.equal(lost[0], `c-${COUNT - 1}`);
    for (const [id, body] of all) assert.deepEqual(body, bodyFor(id));
    assert.ok(store.recoveryReport.truncatedBytes > 0);
    assert.equal(store.recoveryReport.problem?.reason, 'torn record');
    assert.ok(
      lines.some((l) => l.level === 50 && /damaged log tail/.test(l.msg)),
      'recovery says so in the log',
    );

    // Appends continue, and their offsets follow the surviving records.
    const [r] = await store.append([
      {
        topic: 'CrashTopic',
        queueId: acked.get(lost[0]!)!.queueId,
        messageId: 'after',
        body: bodyFor('after'),
      },
    ]);
    assert.equal(r!.queueOffset, acked.get(lost[0]!)!.queueOffset);
    await store.close();
    const again = await MessageStore.open({
      dataDir: dir.path,
      segmentSize: 256 * 1024,
      indexEntriesPerFile: 64,
    });
    assert.ok((await readAll(again)).has('after'));
    await again.close();
  } finally {
    dir.cleanup();
  }
});

test(
  'flipped bytes in the last records: earlier records kept, damaged tail dropped and quarantined',
  { timeout: 60_000 },
  async () => {
    const dir = tempDir();
    try {
      const acked = await crashedStore(dir.path);
      const seg = lastSegment(dir.path);
      const frames = lastFrames(seg, 3);
      const fd = openSync(seg, 'r+');
      for (const f of frames) {
        const at = f.start + Math.floor(f.length / 2);
        const b = Buffer.alloc(1);
        readSync(fd, b, 0, 1, at);
        b[0] = b[0]! ^ 0x5a;
        writeSync(fd, b, 0, 1, at);
      }
      closeSync(fd);

      const { logger, lines } = captureLogger();
      const store = await MessageStore.open({
        dataDir: dir.path,
        segmentSize: 256 * 1024,
        indexEntriesPerFile: 64,
        logger,
      });
      const all = await readAll(store);
      const lost = [...acked.keys()].filter((id) => !all.has(id)).sort();
      assert.deepEqual(lost, [`c-${COUNT - 3}`, `c-${COUNT - 2}`, `c-${COUNT - 1}`].sort());
      for (const [id, body] of all) assert.deepEqual(body, bodyFor(id), `${id} intact`);
      assert.equal(all.size, COUNT - 3);
      assert.equal(store.recoveryReport.problem?.reason, 'checksum mismatch');
      assert.ok(lines.some((l) => l.level === 50 && /damaged log tail/.test(l.msg)));
      // The cut bytes are kept for inspection, not destroyed.
      assert.ok(existsSync(join(dir.path, 'commitlog', 'quarantine')));
      assert.equal(store.recoveryReport.quarantined.length, 1);
      await store.close();
    } finally {
      dir.cleanup();
    }
  },
);

test('a record damaged after a clean shutdown is never served', { timeout: 30_000 }, async () => {
  const dir = tempDir();
  try {
    const { logger, lines } = captureLogger();
    let store = await MessageStore.open({ dataDir: dir.path, logger });
    const ids = Array.from({ length: 10 }, (_, i) => `m${i}`);
    await store.append(ids.map((id) => ({ topic: 'T', queueId: 0, messageId: id, body: bodyFor(id) })));
    await store.close();
    const seg = lastSegment(dir.path);
    const [f] = lastFrames(seg, 10);
    const fd = openSync(seg, 'r+');
    writeSync(fd, Buffer.from([0xff, 0xee]), 0, 2, f!.start + f!.length - 5);
    closeSync(fd);
    store = await MessageStore.open({ dataDir: dir.path, logger });
    const r = await store.read('T', 0, 0, { maxCount: 10 });
    assert.deepEqual(r.corruptOffsets, [0]);
    assert.deepEqual(
      r.messages.map((m) => m.messageId),
      ids.slice(1),
    );
    assert.ok(lines.some((l) => l.level === 50 && /corrupt record skipped/.test(l.msg)));
    await store.close();
  } finally {
    dir.cleanup();
  }
});
