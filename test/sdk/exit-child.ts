/**
 * Child process for the "process exits by itself" test: produce, consume with a push consumer and a
 * simple consumer, close everything, print CLOSED, and then do nothing: the process must exit on its
 * own (no leaked timer, stream or channel keeps the event loop alive).
 */
import { ConsumeResult, Producer, PushConsumer, SimpleConsumer } from '../../src/index.js';

const [endpoints, topic, pushGroup, simpleGroup] = process.argv.slice(2) as [string, string, string, string];
const producer = new Producer({ endpoints, topics: [topic] });
await Promise.all(Array.from({ length: 10 }, (_, i) => producer.send({ topic, body: `exit-${i}` })));
let consumed = 0;
const push = new PushConsumer({
  endpoints,
  group: pushGroup,
  subscriptions: { [topic]: '*' },
  listener: () => {
    consumed++;
    return ConsumeResult.SUCCESS;
  },
});
await push.start();
const simple = new SimpleConsumer({
  endpoints,
  group: simpleGroup,
  subscriptions: { [topic]: '*' },
  awaitDurationMs: 5000,
});
const received = await simple.receive(32, 10_000);
await Promise.all(received.map((m) => simple.ack(m)));
while (consumed < 10) await new Promise((r) => setTimeout(r, 10));
// A receive long-polling at close time must not hold the process either.
const iterating = (async () => {
  for await (const m of simple.messages()) void m;
})();
await new Promise((r) => setTimeout(r, 50));
await Promise.all([producer.close(), push.close(), simple.close()]);
await iterating;
process.stdout.write(`CLOSED ${consumed} ${received.length}\n`);
