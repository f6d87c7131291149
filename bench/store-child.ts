/**
 * Benchmark child: fills a store with 1 KiB records until the log reaches a size, printing
 * `P <logBytes> <rssBytes>` at each GiB and `DONE` at the end, then waits to be killed.
 *
 * usage: store-child.ts <dataDir> <bytes> <checkpointIntervalMs>
 */
import { MessageStore } from '../src/store/index.js';

const [dataDir, bytesArg, ckptArg] = process.argv.slice(2) as [string, string, string];
const target = Number(bytesArg);
const store = await MessageStore.open({ dataDir, flush: 'async', checkpointIntervalMs: Number(ckptArg) });
const body = Buffer.alloc(1024, 0x61);
let seq = 0;
let nextReport = 1024 ** 3;
const emit = (s: string) => process.stdout.write(s + '\n');
while (store.stats().logEnd < target) {
  const batch = [];
  for (let i = 0; i < 256; i++, seq++) {
    batch.push({
      topic: 'BenchTopic',
      queueId: seq & 7,
      messageId: `0A0000010000${seq.toString(16).padStart(20, '0')}`,
      body,
      tag: 'T',
    });
  }
  await store.append(batch);
  if (store.stats().logEnd >= nextReport) {
    emit(`P ${store.stats().logEnd} ${process.memoryUsage().rss}`);
    nextReport += 1024 ** 3;
  }
}
emit(`DONE ${store.stats().logEnd} ${process.memoryUsage().rss}`);
setInterval(() => {}, 1000);
