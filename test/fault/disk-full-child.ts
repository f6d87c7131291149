/**
 * The disk-full scenario, run by disk-full.test.ts in a child process. With `real`, `<dir>` is a small
 * file system of its own (a tmpfs the parent mounted in a private mount namespace) and the disk really
 * fills; with `emulated` (no way to mount here), writes under `<dir>` fail with ENOSPC through
 * node-faults.ts while the scenario says the disk is full, and disk use is reported to match.
 *
 * A broker runs on `<dir>/data` under a producer and an acking consumer; the disk fills (the producer
 * fills it, then a filler file takes the rest); sends must answer TOO_MANY_REQUESTS (flow control) and
 * nothing else, acks likewise or OK, the store must stay writable-when-possible (not read-only), the
 * journal must not retry compactions in a storm; once the filler is deleted, sends and acks succeed
 * again. Finally the broker is reopened and every acknowledged message read back intact.
 *
 * Prints `RESULT ok <summary>` or `RESULT fail <reason>`.
 *
 * usage: disk-full-child.ts <dir> real|emulated
 */
import { openSync, writeSync, closeSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startBroker } from '../../src/server.js';
import { Broker } from '../../src/broker/broker.js';
import { storeOf } from '../../src/internal.js';
import { statfsDiskUsage } from '../../src/store/disk-usage.js';
import { createLogger } from '../../src/common/logger.js';
import { RawClient } from '../integration/raw-client.js';
import { sleep } from '../helpers.js';
import { NodeFaults } from './node-faults.js';

const [dir, mode] = process.argv.slice(2) as [string, 'real' | 'emulated'];
const data = join(dir, 'data');
const filler = join(dir, 'filler');
const ballast = join(dir, 'ballast');
const TOO_MANY_REQUESTS = 42900;
const OK = 20000;
const body = (id: string) => Buffer.concat([Buffer.from(`${id}|`), Buffer.alloc(4000, id.length % 251)]);

let full = false;
let faults: NodeFaults | null = null;
const TOTAL = 32 << 20;
if (mode === 'emulated') {
  mkdirSync(data, { recursive: true });
  faults = await new NodeFaults(dir).install();
  faults.fail({ ops: ['write', 'writev'], code: 'ENOSPC', when: () => full });
}
const lines: { level: number; msg: string }[] = [];
const logger = createLogger({
  level: 'info',
  destination: { write: (s: string) => void lines.push(JSON.parse(s)) },
});
const options = {
  store: {
    stateCompactBytes: 64 * 1024,
    segmentSize: 1 << 20,
    diskCheckIntervalMs: 100,
    checkpointIntervalMs: 100,
    indexFlushIntervalMs: 20,
    diskRefuseRatio: 1,
    diskCleanupRatio: 1,
    diskForceCleanupRatio: 1,
  },
  consume: { minInvisibleMs: 50 },
};
// Let the disk really fill: disk use as reported never reaches the refusal (or cleanup) threshold,
// so writes run into ENOSPC itself and nothing stored is deleted to make room.
const diskUsage =
  mode === 'emulated'
    ? async () => ({ totalBytes: TOTAL, usedBytes: full ? TOTAL * 0.99 : TOTAL / 2 })
    : async (d: string) => {
        const u = await statfsDiskUsage(d);
        return { totalBytes: u.totalBytes, usedBytes: Math.min(u.usedBytes, u.totalBytes * 0.99) };
      };

function fail(reason: string): never {
  process.stdout.write(`RESULT fail ${reason}\n`);
  process.exit(1);
}

/** Fill what is left of the file system. */
function fillUp(): number {
  if (mode === 'emulated') {
    full = true;
    return 0;
  }
  const fd = openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  let n = 0;
  try {
    for (;;) n += writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
  return n;
}

function freeUp(): void {
  if (mode === 'emulated') full = false;
  else {
    rmSync(filler, { force: true });
    rmSync(ballast, { force: true });
  }
}

// Something to delete later: an operator freeing space frees a useful amount.
if (mode === 'real') {
  const fd = openSync(ballast, 'w');
  for (let i = 0; i < 64; i++) writeSync(fd, Buffer.alloc(64 * 1024, 1));
  closeSync(fd);
}

const running = await startBroker({
  dataDir: data,
  grpcPort: 0,
  httpPort: 0,
  remotingPort: 0,
  logger,
  diskUsage,
  ...options,
});
const http = `http://127.0.0.1:${running.httpPort}`;
const post = (path: string, b: unknown) =>
  fetch(`${http}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(b),
  });
await post('/api/topics', { topic: 'FullT', readQueueNums: 2, writeQueueNums: 2 });
await post('/api/groups', { group: 'FullG' });
const client = new RawClient(`127.0.0.1:${running.grpcPort}`);

const sent = new Set<string>();
const codes = { send: new Map<number, number>(), ack: new Map<number, number>() };
const count = (m: Map<number, number>, c: number) => m.set(c, (m.get(c) ?? 0) + 1);
let phase: 'filling' | 'full' | 'freed' = 'filling';
let stop = false;
let seq = 0;
const refusedInFull: number[] = [];
let okAfterFree = { send: 0, ack: 0 };

const producer = async () => {
  while (!stop) {
    const ids = [`m${seq++}`, `m${seq++}`];
    try {
      const res = await client.send(
        'FullT',
        ids.map((id) => ({ messageId: id, body: body(id) })),
      );
      // Per-message statuses, or one status for the whole request.
      const statuses: number[] = res.entries
        ? res.entries.map((e: { status: { code: number } }) => e.status.code)
        : ids.map(() => res.status.code);
      statuses.forEach((c, i) => {
        count(codes.send, c);
        if (c === OK) {
          sent.add(ids[i]!);
          if (phase === 'freed') okAfterFree.send++;
        } else if (phase === 'full') refusedInFull.push(c);
      });
      if (statuses.some((c) => c !== OK)) await sleep(20);
    } catch (err) {
      fail(`send threw ${(err as Error).message}`);
    }
  }
};
const consumer = async () => {
  while (!stop) {
    try {
      const r = await client.receiveMessages('FullG', 'FullT', { batch: 16, invisibleMs: 5000, pollMs: 100 });
      if (r.status && r.status.code !== OK && r.status.code !== 40401) count(codes.ack, r.status.code);
      if (r.messages.length === 0) continue;
      const res = await client.ack(
        'FullG',
        'FullT',
        r.messages.map(
          (m: { system_properties: { receipt_handle: string } }) => m.system_properties.receipt_handle,
        ),
      );
      for (const e of res.entries ?? []) {
        count(codes.ack, e.status.code);
        if (e.status.code === OK && phase === 'freed') okAfterFree.ack++;
      }
    } catch (err) {
      const code = (err as { code?: number }).code;
      fail(`receive/ack threw ${(err as Error).message} (${code})`);
    }
  }
};

const load = Promise.all([producer(), producer(), consumer()]);
// 1. Produce until the disk refuses (the producer fills it), then take whatever is left.
const refused = () => [...codes.send.keys()].some((c) => c !== OK);
for (let i = 0; i < 600 && !refused(); i++) {
  await sleep(50);
  if (mode === 'emulated' && sent.size > 500) full = true;
}
if (!refused()) fail(`the disk never filled (${sent.size} sent)`);
fillUp();
// 2. Full: keep going for a while; every send is refused with TOO_MANY_REQUESTS.
const compactionFailuresBefore = lines.filter((l) => /compaction failed/.test(l.msg)).length;
phase = 'full';
await sleep(1500);
const compactionFailures =
  lines.filter((l) => /compaction failed/.test(l.msg)).length - compactionFailuresBefore;
const stats = storeOf(running.broker).stats();
// 3. Space comes back: everything resumes.
freeUp();
phase = 'freed';
okAfterFree = { send: 0, ack: 0 };
for (let i = 0; i < 100 && (okAfterFree.send < 10 || okAfterFree.ack < 1); i++) await sleep(50);
stop = true;
await load;
client.close();
await running.close();

if (refusedInFull.length === 0) fail('no send was refused while the disk was full');
const other = refusedInFull.filter((c) => c !== TOO_MANY_REQUESTS);
if (other.length > 0) fail(`sends refused with ${[...new Set(other)]} while the disk was full`);
const badAcks = [...codes.ack.keys()].filter((c) => c !== OK && c !== TOO_MANY_REQUESTS);
if (badAcks.length > 0) fail(`acks/receives answered ${badAcks} (only OK or TOO_MANY_REQUESTS)`);
if (stats.readOnly) fail('the store went read-only: out of space is not an I/O failure');
if (compactionFailures > 3) fail(`${compactionFailures} journal compaction failures in 1.5 s: a retry storm`);
if (okAfterFree.send < 10) fail(`only ${okAfterFree.send} sends succeeded after space was freed`);
if (okAfterFree.ack < 1) fail('no ack succeeded after space was freed');

// 4. Nothing stored earlier is damaged: reopen and read every acknowledged message back.
faults?.uninstall();
const broker = await Broker.open({ dataDir: data, ...options }, { diskUsage });
try {
  const seen = new Set<string>();
  for (let q = 0; q < 2; q++) {
    let offset = 0;
    for (;;) {
      const r = await storeOf(broker).read('FullT', q, offset, { maxCount: 500, maxBytes: 8 << 20 });
      if (r.corruptOffsets.length > 0) fail(`corrupt records at ${r.corruptOffsets}`);
      for (const m of r.messages) {
        const id = Buffer.from(m.body).subarray(0, Buffer.from(m.body).indexOf(0x7c)).toString();
        if (!Buffer.from(m.body).equals(body(id))) fail(`${id} damaged`);
        if (seen.has(id)) fail(`${id} stored twice`);
        seen.add(id);
      }
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
  }
  for (const id of sent) if (!seen.has(id)) fail(`acknowledged ${id} lost`);
  process.stdout.write(
    `RESULT ok ${mode}: ${sent.size} sends acknowledged, ${refusedInFull.length} refused while full ` +
      `(all TOO_MANY_REQUESTS), ${compactionFailures} compaction failures while full, ` +
      `${okAfterFree.send} sends and ${okAfterFree.ack} acks after space was freed\n`,
  );
} finally {
  await broker.close();
}
