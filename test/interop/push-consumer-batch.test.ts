/**
 * Interop: how many messages one ReceiveMessage hands the official Node PushConsumer
 * (rocketmq-client-nodejs 1.0.8). A standard group gets one receive loop per broker: the client
 * sends the next ReceiveMessage only when the previous one has been answered, asking for
 * min(Settings.receive_batch_size, free cache). With 32 per round trip its rate was bounded by the
 * round trip, not by CPU (issue 12, W3: 228 msgs/s at 5,000 sent/s).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer } from 'rocketmq-client-nodejs';
import type { Delivered } from '../../src/broker/consume/pop.js';
import { tempDir } from '../helpers.js';
import { clientLogger, createGroup, createTopic, progressOf, type InteropBroker } from './support.js';
import { consumedOf, runChild, startPushBroker } from './push-child.js';

const PUSH_BATCH = 100;
const BACKLOG = 150;

describe('interop: PushConsumer receive batches', () => {
  let b: InteropBroker;
  let producer: Producer;
  let dir: ReturnType<typeof tempDir>;
  /** Messages per answered ReceiveMessage, per group. */
  const receives = new Map<string, number[]>();
  let restore = () => {};

  before(async () => {
    dir = tempDir('vela-interop-push-batch-');
    b = await startPushBroker(dir.path, { maxPushBatch: PUSH_BATCH });
    const consume = b.running.broker.consume;
    const original = consume.receive;
    consume.receive = async function (this: typeof consume, req): Promise<Delivered[]> {
      const out = await original.call(this, req);
      if (out.length > 0) receives.set(req.group, [...(receives.get(req.group) ?? []), out.length]);
      return out;
    };
    restore = () => {
      consume.receive = original;
    };
    producer = new Producer({ endpoints: b.endpoints, namespace: '', logger: clientLogger() });
    await producer.startup();
  });
  after(async () => {
    restore();
    await producer.shutdown();
    await b.close();
    dir.cleanup();
  });

  test('a backlog goes out in receives of the batch size the broker told the client, not 32', async (t) => {
    const topic = await createTopic(b, 'PushBatch');
    const group = await createGroup(b, 'GPushBatch');
    const bodies = new Set<string>();
    for (let i = 0; i < BACKLOG; i++) {
      const body = `m-${i}`;
      bodies.add(body);
      await producer.send({ topic, body: Buffer.from(body) });
    }
    const run = runChild([b.endpoints, topic, group, String(BACKLOG)]);
    t.after(() => run.kill());
    const started = await run.started;
    assert.equal(started.event, 'started', String(started.message));
    const exit = await run.exited;
    assert.equal(exit.code, 0, exit.stderr);

    const consumed = consumedOf(run.events);
    assert.deepEqual(new Set(consumed.map((e) => String(e.body))), bodies, 'every message consumed');
    const sizes = receives.get(group) ?? [];
    assert.equal(
      sizes.reduce((a, n) => a + n, 0),
      BACKLOG,
      `each message handed out once (receives: ${sizes.join(', ')})`,
    );
    // The client asks for min(receive_batch_size, free cache of 1,024): the first receive takes a full batch.
    assert.equal(sizes[0], PUSH_BATCH, `receives: ${sizes.join(', ')}`);
    assert.ok(
      sizes.every((n) => n <= PUSH_BATCH),
      `no receive above the push batch (receives: ${sizes.join(', ')})`,
    );
    assert.equal(progressOf(b, group, topic).lag, 0, 'no lag');
    assert.equal(progressOf(b, group, topic).inflight, 0, 'nothing in flight');
  });
});
