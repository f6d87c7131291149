/**
 * Child process for the push-consumer interop tests. The official Node PushConsumer keeps its
 * process alive after shutdown (an EggLogger timer, protocol.md §12 item 18), so it runs here and
 * exits explicitly.
 *
 * Usage: node --import tsx push-consumer-child.ts <endpoints> <topic> <group> <expected> [filter] [delayMs]
 *
 * Prints one JSON object per line on stdout:
 *   {"event":"started","clientId":…}
 *   {"event":"consumed","messageId":…,"body":…,"tag":…,"messageGroup":…,"deliveryAttempt":…,"offset":…}
 *   {"event":"shutdown","ms":…}
 *   {"event":"error","message":…}
 * It shuts down once `expected` messages were consumed (or after 15 s), then exits 0.
 */
import { ConsumeResult, PushConsumer, type MessageView } from 'rocketmq-client-nodejs';

const [endpoints, topic, group, expectedArg, filter = '*', delayArg = '0'] = process.argv.slice(2);
if (!endpoints || !topic || !group || !expectedArg) {
  console.error('usage: push-consumer-child.ts <endpoints> <topic> <group> <expected> [filter] [delayMs]');
  process.exit(2);
}
const expected = Number(expectedArg);
const delayMs = Number(delayArg);
const emit = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
const quiet = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };

// Backstop: never outlive a broken run (shutdown can wait on polls and unsettled messages).
setTimeout(() => {
  emit({ event: 'error', message: 'child timed out' });
  process.exit(3);
}, 40_000).unref();

let consumed = 0;
let done: () => void = () => {};
const allConsumed = new Promise<void>((resolve) => (done = resolve));

const consumer = new PushConsumer({
  endpoints,
  namespace: '',
  consumerGroup: group,
  subscriptions: new Map([[topic, filter]]),
  logger: quiet,
  messageListener: {
    async consume(m: MessageView) {
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      emit({
        event: 'consumed',
        messageId: m.messageId,
        body: m.body.toString(),
        tag: m.tag,
        messageGroup: m.messageGroup,
        deliveryAttempt: m.deliveryAttempt,
        offset: m.offset,
        corrupted: m.corrupted === true,
      });
      if (++consumed >= expected) done();
      return ConsumeResult.SUCCESS;
    },
  },
});

try {
  await consumer.startup();
  emit({ event: 'started', clientId: consumer.clientId });
  await Promise.race([allConsumed, new Promise((r) => setTimeout(r, 15_000))]);
  const t = Date.now();
  await consumer.shutdown();
  emit({ event: 'shutdown', ms: Date.now() - t });
  process.exit(0);
} catch (err) {
  emit({ event: 'error', message: String((err as Error)?.stack ?? err) });
  process.exit(1);
}
