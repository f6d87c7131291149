/**
 * Interop: failures in the official Node PushConsumer (rocketmq-client-nodejs 1.0.8), in a child
 * process (push-consumer-child.ts). A standard consumer's FAILURE is a nack asking for almost no delay
 * (protocol.md §12 item 6): the broker holds the message for the group's retry policy anyway, and
 * dead-letters it after the last attempt. A FIFO consumer retries in place, in the client, then
 * forwards the message to the DLQ (ForwardMessageToDeadLetterQueue) and the message group moves on.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer } from 'rocketmq-client-nodejs';
import { startTestBroker, type TestBroker } from '../support/harness.js';
import { MIN_INVISIBLE_MS, clientLogger, createTopic, progressOf, uniqueName } from './support.js';
import { MAX_POLL_MS, consumedOf, runChild, type ChildEvent } from './push-child.js';

/** Slack for timings on a shared 2-core machine. */
const SLACK_MS = 1500;
const POLICY_MS = [1000, 2000];

describe('interop: PushConsumer failures (child process)', { concurrency: true }, () => {
  let b: TestBroker;
  let producer: Producer;
  before(async () => {
    b = await startTestBroker({ consume: { minInvisibleMs: MIN_INVISIBLE_MS, maxPollMs: MAX_POLL_MS } });
    producer = new Producer({ endpoints: b.endpoints, namespace: '', logger: clientLogger() });
    await producer.startup();
  });
  after(async () => {
    await producer.shutdown();
    await b.close();
  });

  const interop = () => ({ running: b.running, endpoints: b.endpoints, close: b.close });
  const calls = (events: ChildEvent[], body: string) => consumedOf(events).filter((e) => e.body === body);

  async function deadLetters(group: string): Promise<{ body: string; origin: string }[]> {
    const page = await b.running.broker.deadLetters(group);
    return page.messages.map((m) => ({
      body: m.body.toString(),
      origin: m.properties.ORIGIN_MESSAGE_ID ?? m.messageId,
    }));
  }

  test('FAILURE: redelivered on the group’s retry policy, whatever delay the client asks; then the DLQ', async () => {
    const topic = await createTopic(interop(), 'PushRetry');
    const group = uniqueName('GPushRetry');
    await b.running.broker.groups.upsert(group, {
      retryMaxTimes: 3,
      retryPolicy: { type: 'CUSTOMIZED', next: POLICY_MS },
    });
    const ok = await producer.send({ topic, body: Buffer.from('retry-ok') });
    const dead = await producer.send({ topic, body: Buffer.from('retry-dead') });
    // retry-ok fails twice then succeeds (3 calls); retry-dead fails all 4 attempts.
    const run = runChild([
      b.endpoints,
      topic,
      group,
      '7',
      '*',
      '0',
      JSON.stringify({ 'retry-ok': 2, 'retry-dead': -1 }),
    ]);
    const exit = await run.exited;
    assert.equal(exit.code, 0, `child exit ${exit.code} ${exit.signal}\n${exit.stderr}`);

    const okCalls = calls(run.events, 'retry-ok');
    assert.deepEqual(
      okCalls.map((c) => [c.deliveryAttempt, c.result]),
      [
        [1, 'FAILURE'],
        [2, 'FAILURE'],
        [3, 'SUCCESS'],
      ],
    );
    for (let i = 1; i < okCalls.length; i++) {
      const gap = Number(okCalls[i]!.atMs) - Number(okCalls[i - 1]!.atMs);
      const policy = POLICY_MS[i - 1]!;
      assert.ok(
        gap >= policy - 100,
        `attempt ${i + 1} came ${gap} ms after attempt ${i} (policy ${policy} ms)`,
      );
      assert.ok(gap <= policy + MAX_POLL_MS + SLACK_MS, `attempt ${i + 1} came ${gap} ms late`);
    }
    assert.deepEqual(
      calls(run.events, 'retry-dead').map((c) => [c.deliveryAttempt, c.result]),
      [1, 2, 3, 4].map((n) => [n, 'FAILURE']),
      'retryMaxTimes 3: four deliveries',
    );
    assert.deepEqual(await deadLetters(group), [{ body: 'retry-dead', origin: dead.messageId }]);
    assert.notEqual(ok.messageId, dead.messageId);
    const p = progressOf(interop(), group, topic);
    assert.deepEqual([p.lag, p.inflight, p.ready], [0, 0, 0], 'nothing left in the group');
  });

  test('FIFO group: a failure is retried in place, in order; after the last attempt the DLQ, and the group moves on', async () => {
    const topic = await createTopic(interop(), 'PushFifoRetry', 'FIFO');
    const group = uniqueName('GPushFifoRetry');
    await b.running.broker.groups.upsert(group, {
      consumeMessageOrderly: true,
      retryMaxTimes: 2,
      fifoRetryIntervalMs: 500,
    });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(
        (await producer.send({ topic, messageGroup: 'Order-1', body: Buffer.from(`fifo#${i}`) })).messageId,
      );
    }
    // #1 fails once; #2 fails every attempt (3 with retryMaxTimes 2).
    const run = runChild([
      b.endpoints,
      topic,
      group,
      '7',
      '*',
      '0',
      JSON.stringify({ 'fifo#1': 1, 'fifo#2': -1 }),
    ]);
    const exit = await run.exited;
    assert.equal(exit.code, 0, `child exit ${exit.code} ${exit.signal}\n${exit.stderr}`);
    assert.deepEqual(
      consumedOf(run.events).map((c) => [c.body, c.deliveryAttempt, c.result]),
      [
        ['fifo#0', 1, 'SUCCESS'],
        ['fifo#1', 1, 'FAILURE'],
        ['fifo#1', 2, 'SUCCESS'],
        ['fifo#2', 1, 'FAILURE'],
        ['fifo#2', 2, 'FAILURE'],
        ['fifo#2', 3, 'FAILURE'],
        ['fifo#3', 1, 'SUCCESS'],
      ],
      'one message group, in order, retried in place',
    );
    assert.deepEqual(await deadLetters(group), [{ body: 'fifo#2', origin: ids[2]! }]);
    const p = progressOf(interop(), group, topic);
    assert.deepEqual([p.lag, p.inflight, p.ready], [0, 0, 0], 'nothing left in the group');
  });
});
