/**
 * Consumption core micro-benchmark (not a test): `node --import tsx bench/consume-micro.ts [total]`.
 *
 * In process, no gRPC, sync flush:
 * - consume + ack: 1 KiB messages in one topic (8 queues), then 4 loops that each receive 32 and ack
 *   them in one call until everything is consumed. Prints throughput and the CPU time the process
 *   spent per message (less sensitive than wall time to other work on a shared machine).
 * - redelivery: 30 times, receive one message with a 100 ms invisible duration, do not ack it, and
 *   long-poll until it is delivered again. Prints how long the first receive took and how late the
 *   redelivery was after its deadline (design §3: within 100 ms).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBroker } from '../src/server.js';
import { parseFilter } from '../src/broker/filter.js';

const total = Number(process.argv[2] ?? 40_000);
const dir = mkdtempSync(join(tmpdir(), 'vela-consume-micro-'));
const running = await startBroker({
  dataDir: dir,
  grpcPort: 0,
  httpPort: 0,
  consume: { minInvisibleMs: 100 },
});
try {
  const broker = running.broker;
  await broker.topics.upsert('BenchT', {});
  await broker.groups.upsert('BenchG', {});
  for (let i = 0; i < total; i += 500) {
    await broker.produce.send(
      Array.from({ length: Math.min(500, total - i) }, (_, j) => ({
        topic: 'BenchT',
        body: Buffer.alloc(1024, 97),
        messageId: `BENCH${i + j}`,
      })),
    );
  }
  const filter = parseFilter('TAG', '*');
  let got = 0;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: 4 }, async (_, k) => {
      while (got < total) {
        const delivered = await broker.consume.receive({
          group: 'BenchG',
          topic: 'BenchT',
          filter,
          batchSize: 32,
          invisibleMs: 60_000,
          autoRenew: false,
          clientId: `bench-${k}`,
          pollMs: 0,
        });
        if (delivered.length === 0) break;
        got += delivered.length;
        const refused = await broker.consume.ackMany(
          'BenchG',
          'BenchT',
          delivered.map((d) => d.receiptHandle),
        );
        if (refused.some((e) => e)) throw new Error('an ack was refused');
      }
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  console.log(
    `consume + ack (receive 32, batch ack), 4 loops: ${Math.round(got / (ms / 1000))} msgs/s ` +
      `(${got} in ${Math.round(ms)} ms), CPU ${((cpu.user + cpu.system) / got).toFixed(1)} µs/msg`,
  );

  await broker.topics.upsert('BenchLate', { readQueueNums: 1, writeQueueNums: 1 });
  const receiveOne = (invisibleMs: number, pollMs: number) =>
    broker.consume.receive({
      group: 'BenchG',
      topic: 'BenchLate',
      filter,
      batchSize: 1,
      invisibleMs,
      autoRenew: false,
      clientId: 'bench-late',
      pollMs,
    });
  const took: number[] = [];
  const late: number[] = [];
  for (let i = 0; i < 30; i++) {
    await broker.produce.send([{ topic: 'BenchLate', body: Buffer.alloc(1024, 97), messageId: `LATE${i}` }]);
    const asked = performance.now();
    await receiveOne(100, 0);
    took.push(performance.now() - asked);
    const [again] = await receiveOne(60_000, 2000);
    late.push(performance.now() - asked - 100); // at least this late (the deadline started after `asked`)
    await broker.consume.ack('BenchG', 'BenchLate', again!.receiptHandle);
  }
  const pct = (xs: number[], p: number) =>
    [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!.toFixed(1);
  console.log(
    `receive (one message): p50 ${pct(took, 0.5)} ms, p90 ${pct(took, 0.9)} ms, max ${pct(took, 1)} ms; ` +
      `redelivery after a 100 ms invisible time, late by: p50 ${pct(late, 0.5)} ms, p90 ${pct(late, 0.9)} ms, max ${pct(late, 1)} ms`,
  );
} finally {
  await running.close();
  rmSync(dir, { recursive: true, force: true });
}
