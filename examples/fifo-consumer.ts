/**
 * FIFO consumption: a group with `consumeMessageOrderly` gets the messages of each message group in
 * the order they were sent, one at a time; different message groups are processed in parallel.
 * Run the broker (`npm start`), then `node --import tsx examples/fifo-consumer.ts`: it sends three
 * orders' events and prints them as they are consumed (Ctrl-C to stop).
 */
import { Admin, ConsumeResult, Producer, PushConsumer } from '../src/index.js';

const TOPIC = 'ExampleFifoTopic';
const GROUP = 'ExampleFifoGroup';

const admin = new Admin({ url: 'http://127.0.0.1:8082' });
await admin.createTopic(TOPIC, { messageType: 'FIFO' });
// A failed FIFO message is retried after 1 s and holds back its message group meanwhile.
await admin.createGroup(GROUP, { consumeMessageOrderly: true, retryMaxTimes: 5, fifoRetryIntervalMs: 1000 });

const producer = new Producer({ endpoints: '127.0.0.1:8081' });
for (const step of ['created', 'paid', 'shipped', 'delivered']) {
  // Sends of one group are awaited one after the other: that is what fixes their order.
  await Promise.all(
    ['order-1', 'order-2', 'order-3'].map((order) =>
      producer.send({ topic: TOPIC, body: `${order} ${step}`, messageGroup: order }),
    ),
  );
}
await producer.close();

const consumer = new PushConsumer({
  endpoints: '127.0.0.1:8081',
  group: GROUP,
  subscriptions: { [TOPIC]: '*' },
  concurrency: 4,
  listener: async (message) => {
    console.log(`[${message.messageGroup}] ${message.text()} (attempt ${message.deliveryAttempt})`);
    await new Promise((r) => setTimeout(r, 100));
    return ConsumeResult.SUCCESS;
  },
});
await consumer.start();
console.log(`FIFO group: ${consumer.fifo}; Ctrl-C to stop`);
process.once('SIGINT', () => void consumer.close());
