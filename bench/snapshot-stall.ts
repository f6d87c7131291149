/**
 * State snapshot stall (not a test): `node --import tsx bench/snapshot-stall.ts [deliveries] [rounds]`.
 *
 * In process, sync flush: one topic, one group, `deliveries` messages (default 100,000) received
 * with a one-hour invisible time, so that many deliveries are in flight. Then `rounds` (default 5)
 * journal compactions, each while a 1 ms interval probes the event loop: prints, per compaction, the
 * longest the loop was blocked (the stall every other request sees), how long the compaction took
 * and the snapshot's size.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../src/broker/broker.js';
import { parseFilter } from '../src/broker/filter.js';

const total = Number(process.argv[2] ?? 100_000);
const rounds = Number(process.argv[3] ?? 5);
const dir = mkdtempSync(join(tmpdir(), 'vela-snapshot-stall-'));
const broker = await Broker.open({ dataDir: dir, consume: { maxInflightPerGroup: total + 1 } });
try {
  await broker.topics.upsert('StallT', {});
  await broker.groups.upsert('StallG', {});
  for (let i = 0; i < total; i += 1000) {
    await broker.produce.send(
      Array.from({ length: Math.min(1000, total - i) }, (_, j) => ({
        topic: 'StallT',
        body: Buffer.alloc(16, 97),
        messageId: `STALL${i + j}`,
      })),
    );
  }
  const filter = parseFilter('TAG', '*');
  let inFlight = 0;
  const receiver = async () => {
    for (;;) {
      const got = await broker.consume.receive({
        group: 'StallG',
        topic: 'StallT',
        filter,
        batchSize: 32,
        invisibleMs: 3600_000,
        autoRenew: false,
        clientId: 'stall',
        pollMs: 0,
      });
      if (got.length === 0) return;
      inFlight += got.length;
    }
  };
  await Promise.all(Array.from({ length: 8 }, receiver));
  process.stdout.write(`${inFlight} deliveries in flight\n`);

  const journal = broker.consume.journal;
  for (let r = 0; r < rounds; r++) {
    let last = performance.now();
    let worst = 0;
    const probe = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 1);
    await new Promise((res) => setTimeout(res, 20));
    worst = 0;
    last = performance.now();
    const t0 = performance.now();
    await journal.compact();
    const took = performance.now() - t0;
    await new Promise((res) => setTimeout(res, 5));
    clearInterval(probe);
    const size = statSync(join(dir, 'state', 'snapshot')).size;
    process.stdout.write(
      `compaction ${r + 1}: event loop blocked at most ${worst.toFixed(1)} ms; took ${took.toFixed(0)} ms;` +
        ` snapshot ${(size / 1048576).toFixed(1)} MiB; load average ${loadavg()[0]!.toFixed(2)}\n`,
    );
  }
} finally {
  await broker.close();
  rmSync(dir, { recursive: true, force: true });
}
