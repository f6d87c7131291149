/**
 * Consume with a PushConsumer: the SDK receives, calls the listener (up to 16 at once) and acks or
 * nacks. Run the broker (`npm start`) and the producer example, then:
 * `node --import tsx examples/push-consumer.ts` (Ctrl-C to stop; running listeners finish first).
 */
import { Admin, ConsumeResult, PushConsumer, createLogger } from '../src/index.js';

const TOPIC = 'ExampleTopic';
const GROUP = 'ExamplePushGroup';

const admin = new Admin({ url: 'http://127.0.0.1:8082' });
await admin.createTopic(TOPIC);
// Failed messages come back after 1 s, then 5 s; after 3 retries they go to the dead-letter queue.
await admin.createGroup(GROUP, {
  retryMaxTimes: 3,
  groupRetryPolicy: { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [1000, 5000] } },
});

const consumer = new PushConsumer({
  endpoints: '127.0.0.1:8081',
  group: GROUP,
  subscriptions: { [TOPIC]: '*' },
  concurrency: 16,
  logger: createLogger({ level: 'warn' }),
  listener: async (message) => {
    console.log(
      `${message.messageId} tag=${message.tag ?? '-'} attempt=${message.deliveryAttempt}: ${message.text()}`,
    );
    // Returning FAILURE (or throwing) makes the broker redeliver it after the group's retry interval.
    return ConsumeResult.SUCCESS;
  },
});
await consumer.start();
console.log(`consuming ${TOPIC} as ${GROUP}; Ctrl-C to stop`);

process.once('SIGINT', () => {
  console.log('closing…');
  void consumer.close().then(() => console.log('closed'));
});
