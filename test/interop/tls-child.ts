/**
 * Child process for the TLS interop test: the official Node client (rocketmq-client-nodejs 1.0.8) with
 * `sslEnabled: true`. It trusts the broker's certificate only through NODE_EXTRA_CA_CERTS (the client
 * passes no CA of its own, protocol.md §1), which Node reads at start-up: hence a child process.
 *
 * Usage: node --import tsx tls-child.ts <endpoints> <topic> <group>
 * Prints one JSON line: {"sent":<message id>,"received":<message id>,"body":…} or {"error":…}, exits 0.
 */
import { Producer, SimpleConsumer } from 'rocketmq-client-nodejs';

const [endpoints, topic, group] = process.argv.slice(2) as [string, string, string];
const quiet = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };
setTimeout(() => {
  process.stdout.write(`${JSON.stringify({ error: 'child timed out' })}\n`);
  process.exit(3);
}, 30_000).unref();

try {
  const producer = new Producer({ endpoints, namespace: '', topic, sslEnabled: true, logger: quiet });
  await producer.startup();
  const receipt = await producer.send({ topic, tag: 'tls', body: Buffer.from('over TLS') });
  const consumer = new SimpleConsumer({
    endpoints,
    namespace: '',
    consumerGroup: group,
    subscriptions: new Map([[topic, '*']]),
    awaitDuration: 1000,
    sslEnabled: true,
    logger: quiet,
  });
  await consumer.startup();
  let received: { id: string; body: string } | undefined;
  for (let i = 0; i < 10 && !received; i++) {
    for (const m of await consumer.receive(1, 10_000)) {
      await consumer.ack(m);
      received = { id: m.messageId, body: m.body.toString() };
    }
  }
  await producer.shutdown();
  await consumer.shutdown();
  process.stdout.write(
    `${JSON.stringify({ sent: receipt.messageId, received: received?.id, body: received?.body })}\n`,
  );
  process.exit(0);
} catch (err) {
  process.stdout.write(`${JSON.stringify({ error: String((err as Error)?.message ?? err) })}\n`);
  process.exit(0);
}
