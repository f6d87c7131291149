/**
 * Child process for the push-consumer interop tests. The official Node PushConsumer keeps its
 * process alive after shutdown (an EggLogger timer, protocol.md §12 item 18), so it runs here and
 * exits explicitly.
 *
 * Usage: node --import tsx push-consumer-child.ts <endpoints> <topic> <group> <expected> [filter] [delayMs] [failures]
 *
 * `expected` > 0: shut down once the listener was called that many times (or after 15 s). `expected` 0:
 * consume until a line arrives on stdin (or stdin closes). `delayMs`: the listener's processing time.
 * `failures`: a number is the share (percent) of deliveries the listener answers FAILURE, at random; JSON
 * `{ "<body>": n }` answers FAILURE to that message's first `n` deliveries (`-1`: to every one).
 *
 * Prints one JSON object per line on stdout:
 *   {"event":"started","clientId":…}
 *   {"event":"consumed","at":…,"atMs":…,"messageId":…,"body":…,"tag":…,"messageGroup":…,"deliveryAttempt":…,
 *    "offset":…,"result":"SUCCESS"|"FAILURE"}
 *   {"event":"shutdown","ms":…}
 *   {"event":"error","message":…}
 * then exits 0.
 */
import { createInterface } from 'node:readline';
import { ConsumeResult, PushConsumer, type MessageView } from 'rocketmq-client-nodejs';

const [endpoints, topic, group, expectedArg, filter = '*', delayArg = '0', failArg = '0'] =
  process.argv.slice(2);
if (!endpoints || !topic || !group || !expectedArg) {
  console.error(
    'usage: push-consumer-child.ts <endpoints> <topic> <group> <expected> [filter] [delayMs] [failPercent]',
  );
  process.exit(2);
}
const expected = Number(expectedArg);
const delayMs = Number(delayArg);
const byBody = failArg.trim().startsWith('{');
const failPercent = byBody ? 0 : Number(failArg);
const failures = byBody ? (JSON.parse(failArg) as Record<string, number>) : {};
/** Listener calls per message body. */
const calls = new Map<string, number>();
const emit = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);
const quiet = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };

// Backstop: never outlive a broken run (shutdown can wait on polls and unsettled messages).
setTimeout(
  () => {
    emit({ event: 'error', message: 'child timed out' });
    process.exit(3);
  },
  expected > 0 ? 40_000 : 120_000,
).unref();

let consumed = 0;
let done: () => void = () => {};
const finished = new Promise<void>((resolve) => (done = resolve));
if (expected <= 0)
  createInterface({ input: process.stdin })
    .on('line', () => done())
    .on('close', () => done());

const consumer = new PushConsumer({
  endpoints,
  namespace: '',
  consumerGroup: group,
  subscriptions: new Map([[topic, filter]]),
  logger: quiet,
  messageListener: {
    async consume(m: MessageView) {
      // Wall-clock start with sub-millisecond precision, comparable across the processes of one machine.
      const at = performance.timeOrigin + performance.now();
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      const atMs = Date.now();
      const body = m.body.toString();
      const call = (calls.get(body) ?? 0) + 1;
      calls.set(body, call);
      const failFor = failures[body] ?? 0;
      const fail =
        failFor === -1 || call <= failFor || (failPercent > 0 && Math.random() * 100 < failPercent);
      emit({
        event: 'consumed',
        at,
        atMs,
        messageId: m.messageId,
        body,
        tag: m.tag,
        messageGroup: m.messageGroup,
        deliveryAttempt: m.deliveryAttempt,
        offset: m.offset,
        corrupted: m.corrupted === true,
        result: fail ? 'FAILURE' : 'SUCCESS',
      });
      if (fail) return ConsumeResult.FAILURE;
      if (++consumed >= expected && expected > 0) done();
      return ConsumeResult.SUCCESS;
    },
  },
});

try {
  await consumer.startup();
  emit({ event: 'started', clientId: consumer.clientId });
  await Promise.race([finished, ...(expected > 0 ? [new Promise((r) => setTimeout(r, 15_000))] : [])]);
  const t = Date.now();
  await consumer.shutdown();
  emit({ event: 'shutdown', ms: Date.now() - t });
  process.exit(0);
} catch (err) {
  emit({ event: 'error', message: String((err as Error)?.stack ?? err) });
  process.exit(1);
}
