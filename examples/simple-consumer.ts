/**
 * Consume with a SimpleConsumer: the application receives, processes and acks at its own pace.
 * Run the broker (`npm start`) and the producer example, then:
 * `node --import tsx examples/simple-consumer.ts` (stops after 5 s without messages, or Ctrl-C).
 */
import { Admin, SimpleConsumer } from '../src/index.js';

const TOPIC = 'ExampleTopic';
const GROUP = 'ExampleSimpleGroup';

const admin = new Admin({ url: 'http://127.0.0.1:8082' });
await admin.createTopic(TOPIC);
await admin.createGroup(GROUP);

const consumer = new SimpleConsumer({
  endpoints: '127.0.0.1:8081',
  group: GROUP,
  subscriptions: { [TOPIC]: '*' },
  awaitDurationMs: 5000,
});
await consumer.start();

// One explicit receive: up to 16 messages, each invisible to the group for 30 s unless acked.
const first = await consumer.receive(16, 30_000);
for (const m of first) {
  console.log(`received ${m.messageId}: ${m.text()}`);
  await consumer.ack(m);
}

// Then as an async iterator, until Ctrl-C or 5 s without a message.
const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
let idle = setTimeout(() => stop.abort(), 5000);
for await (const m of consumer.messages({ invisibleDurationMs: 30_000, signal: stop.signal })) {
  clearTimeout(idle);
  if (m.text().includes('slow')) {
    // Need more time? Extend the message's invisibility (its receipt handle is replaced).
    await consumer.changeInvisibleDuration(m, 60_000);
  }
  console.log(`received ${m.messageId} (attempt ${m.deliveryAttempt}): ${m.text()}`);
  await consumer.ack(m);
  idle = setTimeout(() => stop.abort(), 5000);
}
clearTimeout(idle);
await consumer.close();
console.log('done');
