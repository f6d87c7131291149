/**
 * Produce messages: normal ones (batched automatically when sent concurrently), then a few FIFO
 * messages. Run the broker first (`npm start`), then: `node --import tsx examples/producer.ts`.
 */
import { Admin, Producer, VelaClientError } from '../src/index.js';

const TOPIC = 'ExampleTopic';
const FIFO_TOPIC = 'ExampleFifoTopic';

// Topics are created explicitly (the admin API listens on 8082 by default).
const admin = new Admin({ url: 'http://127.0.0.1:8082' });
await admin.createTopic(TOPIC);
await admin.createTopic(FIFO_TOPIC, { messageType: 'FIFO' });

const producer = new Producer({ endpoints: '127.0.0.1:8081', topics: [TOPIC, FIFO_TOPIC] });
await producer.start();
try {
  // One message, with a tag, keys and properties.
  const receipt = await producer.send({
    topic: TOPIC,
    body: JSON.stringify({ orderId: 1, amount: 42 }),
    tag: 'created',
    keys: ['order-1'],
    properties: { source: 'example' },
  });
  console.log(`sent ${receipt.messageId} at offset ${receipt.offset}`);

  // Many concurrent sends: coalesced into a few SendMessage requests, one receipt each.
  const receipts = await Promise.all(
    Array.from({ length: 100 }, (_, i) => producer.send({ topic: TOPIC, body: `message ${i}`, tag: 'bulk' })),
  );
  console.log(`sent ${receipts.length} more messages`);

  // FIFO: messages of one message group are stored and delivered in the order they are sent.
  for (const step of ['created', 'paid', 'shipped']) {
    await producer.send({ topic: FIFO_TOPIC, body: `order-7 ${step}`, messageGroup: 'order-7' });
  }
  console.log('sent 3 FIFO messages for order-7');
} catch (err) {
  if (err instanceof VelaClientError) {
    console.error(`send failed: ${err.codeName} (${err.code}), retriable=${err.retriable}: ${err.message}`);
  } else throw err;
} finally {
  await producer.close();
}
