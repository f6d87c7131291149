/**
 * Child process for the failure crash test: a broker (no network) hands out one message and makes
 * its delivery fail in one of several ways; the moment the consumption core has stored the retry (or
 * dead letter) and goes to journal the delivery as settled, the process kills itself with SIGKILL.
 * That is the crash between the two writes, every time, not by chance.
 *
 * Prints `SENT <messageId>` once the message is stored and `TRAPPED` just before the kill.
 *
 * usage: failure-child.ts <dataDir> <scenario>
 *   expire       a simple consumer's invisible time runs out: a retry
 *   nack         a push consumer's nack: a retry
 *   release      a push consumer leaves: a retry, due at once
 *   dlq          the invisible time runs out on the last attempt: a dead letter
 *   forward      ForwardMessageToDeadLetterQueue: a dead letter
 *   fifo-dlq     an orderly group's last attempt runs out: a dead letter
 */
import { writeSync } from 'node:fs';
import { Broker } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import type { StateRecord } from '../../src/broker/state-journal.js';
import { FAILURE_TOPIC, FAILURE_GROUP, scenarioConfig, type Scenario } from './failure-scenarios.js';

const [dataDir, scenario] = process.argv.slice(2) as [string, Scenario];
const broker = await Broker.open({ dataDir, consume: { minInvisibleMs: 0 } });
const { fifo, retryMaxTimes } = scenarioConfig(scenario);
await broker.topics.upsert(FAILURE_TOPIC, {
  readQueueNums: 1,
  writeQueueNums: 1,
  ...(fifo ? { attributes: { 'message.type': 'FIFO' } } : {}),
});
await broker.groups.upsert(FAILURE_GROUP, {
  retryMaxTimes,
  consumeMessageOrderly: fifo,
  retryPolicy: { type: 'CUSTOMIZED', next: [60_000] },
});
const [sent] = await broker.produce.send([
  {
    topic: FAILURE_TOPIC,
    messageId: `M-${scenario}`,
    body: Buffer.from(`body of ${scenario}`),
    ...(fifo ? { messageGroup: 'A' } : {}),
  },
]);
if (!sent || 'code' in sent) throw new Error(`send failed: ${String(sent)}`);
process.stdout.write(`SENT M-${scenario}\n`);

const push = scenario === 'nack' || scenario === 'release';
const [d] = await broker.consume.receive({
  group: FAILURE_GROUP,
  topic: FAILURE_TOPIC,
  filter: parseFilter('TAG', '*'),
  batchSize: 1,
  ...(push ? {} : { invisibleMs: scenario === 'forward' ? 3600_000 : 300 }),
  autoRenew: push,
  clientId: 'crash-client',
  pollMs: 0,
});
if (!d) throw new Error('nothing received');

// From now on the first record that settles a delivery is the failure's: die instead of writing it.
const journal = broker.consume.journal;
const append = journal.append.bind(journal);
journal.append = (...records: StateRecord[]) => {
  if (records.some((r) => r.kind === 'settled')) {
    writeSync(1, 'TRAPPED\n');
    process.kill(process.pid, 'SIGKILL');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10_000); // until the signal lands
  }
  return append(...records);
};

if (scenario === 'nack') {
  await broker.consume.changeInvisibleDuration(FAILURE_GROUP, FAILURE_TOPIC, d.receiptHandle, 0);
} else if (scenario === 'release') {
  await broker.consume.releaseClient('crash-client');
} else if (scenario === 'forward') {
  await broker.consume.forwardToDeadLetter(FAILURE_GROUP, FAILURE_TOPIC, d.receiptHandle);
}
// expire, dlq, fifo-dlq: the invisible time runs out by itself.
await new Promise((r) => setTimeout(r, 30_000));
throw new Error('the failure was never settled');
