import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readdirSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StateLog } from '../../src/store/index.js';
import { isVelaError } from '../../src/common/errors.js';
import { crc32 } from 'node:zlib';
import { StateJournal, type StateParticipant, type StateRecord } from '../../src/broker/state-journal.js';
import { silentLogger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';
import { NodeFaults } from '../fault/node-faults.js';

async function openCollect(
  dir: string,
  segmentSize = 4096,
): Promise<{ log: StateLog; snapshot: string | null; records: string[] }> {
  const out = { snapshot: null as string | null, records: [] as string[] };
  const log = await StateLog.open(
    { dir, segmentSize },
    { onSnapshot: (d) => (out.snapshot = d.toString()), onRecord: (r) => out.records.push(r.toString()) },
  );
  return { log, ...out };
}

test('records replay in order after reopen; a snapshot replaces what it covers', async () => {
  const dir = tempDir();
  try {
    let s = await openCollect(dir.path);
    assert.equal(s.snapshot, null);
    await s.log.appendMany([Buffer.from('a'), Buffer.from('b')]);
    await s.log.append(Buffer.from('c'));
    await s.log.close();
    s = await openCollect(dir.path);
    assert.deepEqual(s.records, ['a', 'b', 'c']);

    for (let i = 0; i < 200; i++) await s.log.append(Buffer.from(`r${i}`.padEnd(100, '.')));
    const journal = join(dir.path, 'journal');
    const segmentsBefore = readdirSync(journal).length;
    assert.ok(segmentsBefore > 3);
    await s.log.compact(Buffer.from('state-at-203'));
    await s.log.append(Buffer.from('after'));
    assert.ok(readdirSync(journal).length < segmentsBefore, 'covered journal segments are deleted');
    await s.log.close();

    s = await openCollect(dir.path);
    assert.equal(s.snapshot, 'state-at-203');
    assert.deepEqual(s.records, ['after']);
    await s.log.close();
  } finally {
    dir.cleanup();
  }
});

test('a damaged snapshot is refused rather than silently dropping state', async () => {
  const dir = tempDir();
  try {
    const s = await openCollect(dir.path);
    await s.log.compact(Buffer.from('precious'));
    await s.log.close();
    const path = join(dir.path, 'snapshot');
    const bytes = readFileSync(path);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
    writeFileSync(path, bytes);
    await assert.rejects(openCollect(dir.path), (e) => isVelaError(e, 'STORE_CORRUPT_RECORD'));
  } finally {
    dir.cleanup();
  }
});

test('a snapshot is written and replayed chunk by chunk; one written by the previous format still reads', async () => {
  const dir = tempDir();
  try {
    const chunks: string[] = [];
    let s = await openCollect(dir.path);
    await s.log.append(Buffer.from('before'));
    await s.log.compact(
      (function* () {
        for (let i = 0; i < 5; i++) yield Buffer.from(`chunk-${i}`);
      })(),
    );
    await s.log.append(Buffer.from('after'));
    await s.log.close();
    const log = await StateLog.open(
      { dir: dir.path },
      {
        onSnapshot: (c, v) => chunks.push(`${v}:${c.toString()}`),
        onRecord: (r) => chunks.push(r.toString()),
      },
    );
    await log.close();
    assert.deepEqual(chunks, ['2:chunk-0', '2:chunk-1', '2:chunk-2', '2:chunk-3', '2:chunk-4', 'after']);

    // The previous format: magic "VSNP" | f64 position | u32 crc | one blob.
    const blob = Buffer.from('legacy-state');
    const file = Buffer.alloc(16 + blob.length);
    file.writeUInt32LE(0x56534e50, 0);
    file.writeDoubleLE(0, 4);
    blob.copy(file, 16);
    file.writeUInt32LE(crc32(blob), 12);
    writeFileSync(join(dir.path, 'snapshot'), file);
    s = await openCollect(dir.path);
    assert.equal(s.snapshot, 'legacy-state');
    await s.log.close();
  } finally {
    dir.cleanup();
  }
});

/**
 * A participant with a large state: one entry per key, applied before journalling. The journal
 * carries only the broker's typed records: an entry travels as an offset commit (key as the group,
 * pad as the topic, v as the offset), a deletion as the group's offsets forgotten.
 */
class BigState implements StateParticipant {
  readonly stateKey = 'big';
  readonly entries = new Map<string, { v: number; pad: string }>();
  apply(rec: StateRecord): boolean {
    if (rec.kind === 'offsetCommitted') this.entries.set(rec.group, { v: rec.offset, pad: rec.topic });
    else if (rec.kind === 'offsetsForgotten') this.entries.delete(rec.group!);
    else return false;
    return true;
  }
  snapshot(): unknown {
    return [...this.entries];
  }
  /** A live walk: no copy of the whole state. */
  snapshotItems(): Iterable<unknown> {
    return this.entries.entries();
  }
  restore(data: unknown): void {
    this.entries.clear();
    for (const [k, v] of data as [string, { v: number; pad: string }][]) this.entries.set(k, v);
  }
}

const bigSet = (key: string, v: number, pad: string): StateRecord => ({
  kind: 'offsetCommitted',
  group: key,
  topic: pad,
  queueId: 0,
  offset: v,
  updatedAt: 0,
});

/** The body sizes of a snapshot file's chunks (format 2: header, then length + CRC + body, then trailer). */
function snapshotChunkSizes(file: Buffer): number[] {
  const sizes: number[] = [];
  let at = 16;
  while (at + 4 <= file.length) {
    const len = file.readUInt32LE(at);
    if (len === 0xffffffff) return sizes;
    sizes.push(len);
    at += 8 + len;
  }
  throw new Error(`snapshot without a trailer after ${sizes.length} chunks`);
}

test('compacting a large state serializes it a chunk per turn of the event loop (streamed, not one string)', async () => {
  const dir = tempDir();
  const crashed = tempDir();
  try {
    const big = new BigState();
    const journal = await StateJournal.open({ dir: dir.path, flush: 'sync', logger: silentLogger() }, [big]);
    const pad = 'x'.repeat(40);
    for (let i = 0; i < 300_000; i++) big.entries.set(`key-${i}`, { v: i, pad });
    await journal.append(bigSet('key-last', -1, pad));
    big.entries.set('key-last', { v: -1, pad });
    // The event loop's turns while the snapshot is taken and written (one per pass of its check phase).
    let turns = 0;
    let counting = true;
    const turn = (): void => {
      turns++;
      if (counting) setImmediate(turn);
    };
    setImmediate(turn);
    // How many entries of the state the snapshot walks within each turn.
    const walkedInTurn = new Map<number, number>();
    big.snapshotItems = function* () {
      for (const entry of big.entries.entries()) {
        if (counting) walkedInTurn.set(turns, (walkedInTurn.get(turns) ?? 0) + 1);
        yield entry;
      }
    };
    const done = journal.compact();
    // The state keeps changing while the snapshot is written (each change applied, then journalled).
    let changing = true;
    const changes = (async () => {
      for (let n = 0; changing; n++) {
        const key = `key-${(n * 7919) % 300_000}`;
        if (n % 3 === 0) {
          big.entries.delete(key);
          await journal.append({ kind: 'offsetsForgotten', group: key });
        } else {
          big.entries.set(key, { v: -n, pad });
          await journal.append(bigSet(key, -n, pad));
        }
      }
    })();
    await done;
    counting = false;
    changing = false;
    await changes;
    const expected = new Map(big.entries);
    // What a crash now would leave (the journal is durable): the snapshot taken while the state
    // changed, plus the journal from its position. (Closing would write a fresh snapshot instead.)
    cpSync(dir.path, crashed.path, { recursive: true, filter: (src) => !src.endsWith('LOCK') });
    await journal.close();
    // The snapshot went out as many small chunks (not one string of the whole state), and the loop
    // turned between them: no turn serialized more than a chunk's worth of the state.
    const chunks = snapshotChunkSizes(readFileSync(join(crashed.path, 'snapshot')));
    const total = chunks.reduce((a, b) => a + b, 0);
    const largest = Math.max(...chunks);
    assert.ok(total > 10 * 1024 * 1024, `the snapshot holds ${total} bytes`);
    assert.ok(
      largest <= 128 * 1024,
      `a snapshot chunk of ${largest} bytes (${chunks.length} chunks, ${total} bytes)`,
    );
    const walked = [...walkedInTurn.values()];
    const mostInOneTurn = Math.max(...walked);
    assert.ok(
      mostInOneTurn <= 2 * (300_000 / chunks.length),
      `${mostInOneTurn} entries serialized in one turn of the event loop (${walked.length} turns, ${chunks.length} chunks)`,
    );

    const back = new BigState();
    const again = await StateJournal.open({ dir: crashed.path, flush: 'sync', logger: silentLogger() }, [
      back,
    ]);
    assert.equal(back.entries.size, expected.size);
    for (const [k, v] of expected) assert.deepEqual(back.entries.get(k), v, k);
    assert.ok(expected.size < 300_001, 'the test changed the state during the compaction');
    await again.close();
  } finally {
    dir.cleanup();
    crashed.cleanup();
  }
});

test('a compaction that keeps failing (disk full) is retried with backoff, not on every append', async () => {
  const dir = tempDir();
  const faults = await new NodeFaults(dir.path).install();
  try {
    const big = new BigState();
    const journal = await StateJournal.open(
      { dir: dir.path, flush: 'sync', logger: silentLogger(), compactBytes: 256 },
      [big],
    );
    faults.fail({ ops: ['open'], path: /snapshot\.tmp$/, code: 'ENOSPC' });
    const pad = 'y'.repeat(100);
    for (let i = 0; i < 200; i++) {
      big.entries.set(`k${i}`, { v: i, pad });
      await journal.append(bigSet(`k${i}`, i, pad));
    }
    await new Promise((r) => setTimeout(r, 50));
    const attempts = faults.count('open', /snapshot\.tmp$/);
    assert.ok(attempts >= 1 && attempts <= 3, `${attempts} compaction attempts for 200 appends`);
    faults.clear();
    await journal.close();
    const back = new BigState();
    const again = await StateJournal.open({ dir: dir.path, flush: 'sync', logger: silentLogger() }, [back]);
    assert.equal(back.entries.size, 200);
    await again.close();
  } finally {
    faults.uninstall();
    dir.cleanup();
  }
});
