/**
 * Child process for the delete-topic crash test: with checkpoints far apart, fill a topic, hold some
 * of it in flight, delete it, create it again and send one message, then print READY and wait to be
 * killed (never closing anything).
 *
 * usage: delete-topic-child.ts <dataDir>
 */
import { Broker } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';

const [dataDir] = process.argv.slice(2) as [string];
const broker = await Broker.open({
  dataDir,
  store: { checkpointIntervalMs: 2_000_000_000, indexFlushIntervalMs: 2_000_000_000 },
});
const send = async (topic: string, bodies: string[]) => {
  await broker.produce.send(bodies.map((b) => ({ topic, messageId: `${topic}-${b}`, body: Buffer.from(b) })));
};
await broker.topics.upsert('KT', { readQueueNums: 2, writeQueueNums: 2 });
await broker.topics.upsert('Keep', { readQueueNums: 1, writeQueueNums: 1 });
await broker.groups.upsert('KG', {});
await send(
  'KT',
  Array.from({ length: 20 }, (_, i) => `old${i}`),
);
const got = await broker.consume.receive({
  group: 'KG',
  topic: 'KT',
  filter: parseFilter('TAG', '*'),
  invisibleMs: 10_000,
  autoRenew: false,
  clientId: 'c',
  pollMs: 0,
});
await broker.consume.ack('KG', 'KT', got[0]!.receiptHandle);
await broker.deleteTopic('KT');
await broker.topics.upsert('KT', { readQueueNums: 2, writeQueueNums: 2 });
await send('KT', ['new']);
await send('Keep', ['kept']);
process.stdout.write('READY\n');
setInterval(() => {}, 1000);
