/**
 * Child process for the push-consumer interop tests. The official Node PushConsumer keeps its
 * process alive after shutdown (an EggLogger timer, protocol.md §12 item 18), so it runs here and
 * exits explicitly.
 *
 * Usage: node --import tsx push-consumer-child.ts <endpoints> <topic> <group> <expected> [filter] [delayMs]
 *   [failures]
 *
 * `failures` is JSON `{ "<body>": n }`: the listener answers FAILURE to that message's first `n`
 * deliveries (`-1`: to every one), SUCCESS otherwise.
 *
 * Prints one JSON object per line on stdout:
 *   {"event":"started","clientId":…}
 *   {"event":"consumed","messageId":…,"body":…,"tag":…,"messageGroup":…,"deliveryAttempt":…,"offset":…,
 *    "result":"SUCCESS"|"FAILURE","atMs":…}
 *   {"event":"shutdown","ms":…}
 *   {"event":"error","message":…}
 * It shuts down once the listener was called `expected` times (or after 15 s), then exits 0.
 */
import { ConsumeResult, PushConsumer, type MessageView } from 'rocketmq-client-nodejs';

const [endpoints, topic, group, expectedArg, filter = '*', delayArg = '0', failuresArg = '{}'] =
  process.argv.slice(2);
if (!endpoints || !topic || !group || !expectedArg) {
  console.error('usage: push-consumer-child.ts <endpoints> <topic> <group> <expected> [filter] [delayMs]');
  process.exit(2);
}
const expected = Number(expectedArg);
const delayMs = Number(delayArg);
const failures = JSON.parse(failuresArg) as Record<string, number>;
/** Listener calls per message body (the Node client's FIFO retries keep the delivery attempt honest, too). */
const calls = new Map<string, number>();
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
      const atMs = Date.now();
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      const body = m.body.toString();
      const call = (calls.get(body) ?? 0) + 1;
      calls.set(body, call);
      const failFor = failures[body] ?? 0;
      const result = failFor === -1 || call <= failFor ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
      emit({
        event: 'consumed',
        messageId: m.messageId,
        body,
        tag: m.tag,
        messageGroup: m.messageGroup,
        deliveryAttempt: m.deliveryAttempt,
        offset: m.offset,
        corrupted: m.corrupted === true,
        result: result === ConsumeResult.SUCCESS ? 'SUCCESS' : 'FAILURE',
        atMs,
      });
      if (++consumed >= expected) done();
      return result;
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
