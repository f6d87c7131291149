import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { readdirSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StateLog } from '../../src/store/index.js';
import { isVelaError } from '../../src/common/errors.js';
import { tempDir, spawnTs, waitExit, sleep } from '../helpers.js';

const CHILD = fileURLToPath(new URL('../crash/state-child.ts', import.meta.url));

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

test(
  'state survives kill -9: every acknowledged record replays exactly once',
  { timeout: 60_000 },
  async () => {
    const dir = tempDir();
    try {
      const acked = new Set<number>();
      let next = 0;
      for (let round = 0; round < 4; round++) {
        const child = spawnTs(CHILD, [dir.path, String(next)], (line) => {
          if (line.startsWith('A ')) acked.add(Number(line.slice(2)));
        });
        while (acked.size < (round + 1) * 200) {
          if (child.exitCode !== null) assert.fail('child exited early');
          await sleep(10);
        }
        await sleep(Math.random() * 300);
        child.kill('SIGKILL');
        await waitExit(child);

        const seen: number[] = [];
        const log = await StateLog.open(
          { dir: dir.path, segmentSize: 64 * 1024 },
          {
            onSnapshot: (d) => seen.push(...(JSON.parse(d.toString()) as number[])),
            onRecord: (r) => seen.push(r.readUInt32LE(0)),
          },
        );
        await log.close();
        const counts = new Map<number, number>();
        for (const k of seen) counts.set(k, (counts.get(k) ?? 0) + 1);
        for (const k of acked) assert.ok(counts.has(k), `acknowledged record ${k} lost`);
        for (const [k, c] of counts) assert.equal(c, 1, `record ${k} replayed ${c} times`);
        next = Math.max(...seen) + 1;
      }
    } finally {
      dir.cleanup();
    }
  },
);
