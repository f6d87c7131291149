/**
 * Pull benchmark (not a test): `npm run bench:pull`. 1 KiB messages on 8 queues, read by offset with
 * PullMessage (1,024 per pull) by one consumer and by 4 consumers (2 queues each), committing offsets
 * after each pull, against a broker in a child process. Target: ≥ 200,000 msgs/s for one consumer.
 */
import { rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchClient, admin, startBrokerChild, stopChild } from './bench-client.js';

const ROOT = join(fileURLToPath(new URL('..', import.meta.url)), '.bench-data', 'pull');
const quick = process.argv.includes('--quick');
const total = quick ? 50_000 : 200_000;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function consume(port: number, group: string, consumers: number): Promise<number> {
  const t0 = performance.now();
  let got = 0;
  await Promise.all(
    Array.from({ length: consumers }, async (_, i) => {
      const c = new BenchClient(port);
      const mine = [0, 1, 2, 3, 4, 5, 6, 7].filter((q) => q % consumers === i);
      for (const q of mine) {
        let offset = 0;
        for (;;) {
          const r = await c.pull(group, 'PullBench', q, offset, 1024);
          if (r.count === 0) break;
          got += r.count;
          offset = r.next;
          await c.call('UpdateOffset', {
            group: { name: group },
            message_queue: { topic: { name: 'PullBench' }, id: q },
            offset,
          });
        }
      }
      c.close();
    }),
  );
  if (got !== total) throw new Error(`pulled ${got} of ${total}`);
  return total / ((performance.now() - t0) / 1000);
}

rmSync(ROOT, { recursive: true, force: true });
mkdirSync(ROOT, { recursive: true });
const b = await startBrokerChild(ROOT);
await admin(b.httpPort, '/api/topics', { topic: 'PullBench' });
await admin(b.httpPort, '/api/groups', { group: 'Pull1' });
await admin(b.httpPort, '/api/groups', { group: 'Pull4' });
const p = new BenchClient(b.grpcPort);
const body = Buffer.alloc(1024, 0x61);
for (let i = 0; i < total; i += 256)
  await p.send(
    'PullBench',
    Array.from({ length: Math.min(256, total - i) }, () => body),
  );
p.close();
console.log(`Vela pull benchmark — node ${process.version}, ${fmt(total)} messages of 1 KiB on 8 queues\n`);
const one = await consume(b.grpcPort, 'Pull1', 1);
const four = await consume(b.grpcPort, 'Pull4', 4);
console.log(`| measurement | result |\n| --- | --- |`);
console.log(
  `| pull, 1 consumer, 1,024 per pull, commit per pull | ${fmt(one)} msgs/s (${fmt((one * 1024) / 1e6)} MB/s) |`,
);
console.log(`| pull, 4 consumers on 8 queues | ${fmt(four)} msgs/s |`);
await stopChild(b.child);
rmSync(ROOT, { recursive: true, force: true });
