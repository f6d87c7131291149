/**
 * Interop: FIFO order through the official Node FIFO PushConsumer (rocketmq-client-nodejs 1.0.8),
 * the reproduction of issue 10 §1: a FIFO topic with 8 queues, an orderly group with defaults, three
 * message groups × 30 messages sent one after the other while the consumer runs, a listener of ~10 ms
 * that always succeeds. Within each message group the listener must see 0, 1, 2 … 29, each once, in
 * one process and across two processes of the same group.
 *
 * The official push consumer keeps a ReceiveMessage in flight while it consumes the previous batch,
 * so the broker alone decides the order (protocol.md §8.4, §12 item 21).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer } from 'rocketmq-client-nodejs';
import { sleep } from '../helpers.js';
import { startTestBroker } from '../support/harness.js';
import {
  clientLogger,
  createTopic,
  progressOf,
  simpleConsumer,
  uniqueName,
  type InteropBroker,
} from './support.js';
import { consumedOf, runChild, type ChildEvent, type ChildRun } from './push-child.js';

const GROUPS = ['Order-001', 'Order-002', 'Account-Alice'];
const PER_GROUP = 30;
const LISTENER_MS = '10';

/** Per message group, the sequence numbers in the order the listeners started on them. */
function orderByGroup(events: ChildEvent[]): Map<string, number[]> {
  const sorted = [...events].sort((a, b) => Number(a.at) - Number(b.at));
  const out = new Map<string, number[]>();
  for (const e of sorted) {
    const [g, n] = String(e.body).split('#') as [string, string];
    out.set(g, [...(out.get(g) ?? []), Number(n)]);
  }
  return out;
}

function assertInOrder(events: ChildEvent[]): void {
  const order = orderByGroup(events);
  for (const g of GROUPS) {
    assert.deepEqual(
      order.get(g),
      Array.from({ length: PER_GROUP }, (_, i) => i),
      `consumption order of ${g}`,
    );
  }
}

describe('interop: FIFO order through the official push consumer', { concurrency: true }, () => {
  let b: InteropBroker;
  let producer: Producer;

  before(async () => {
    // Short polls only so that the consumers' shutdown does not wait 20 s (push-consumer.test.ts).
    const t = await startTestBroker({ consume: { maxPollMs: 2000 } });
    b = { running: t.running, endpoints: t.endpoints, close: t.close };
    producer = new Producer({ endpoints: b.endpoints, namespace: '', logger: clientLogger() });
    await producer.startup();
  });
  after(async () => {
    await producer.shutdown();
    await b.close();
  });

  async function setup(prefix: string): Promise<{ topic: string; group: string }> {
    const topic = await createTopic(b, prefix, 'FIFO');
    const group = uniqueName(`G${prefix}`);
    await b.running.broker.groups.upsert(group, { consumeMessageOrderly: true });
    return { topic, group };
  }

  /**
   * Send every message, one after the other, while the consumers consume: the first one, then (once
   * a listener has seen it) the rest a couple of milliseconds apart, as a producer on a slower disk
   * would. Sent all at once before the consumer polls, they would sit in the backlog and every read
   * would happen while nothing is acked.
   */
  async function sendAll(topic: string, consumed: () => number): Promise<void> {
    for (let seq = 0; seq < PER_GROUP; seq++) {
      for (const g of GROUPS) {
        await producer.send({ topic, messageGroup: g, body: Buffer.from(`${g}#${seq}`) });
        if (seq === 0 && g === GROUPS[0]) await until(() => consumed() >= 1, 10_000);
        await sleep(2);
      }
    }
  }

  async function until(cond: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!cond() && Date.now() < deadline) await sleep(50);
  }

  const consumedIn = (runs: ChildRun[]) => () => runs.reduce((a, r) => a + consumedOf(r.events).length, 0);

  test('one process: each message group in order', async () => {
    const { topic, group } = await setup('FifoOne');
    const run = runChild([b.endpoints, topic, group, String(GROUPS.length * PER_GROUP), '*', LISTENER_MS]);
    try {
      const started = await run.started;
      assert.equal(started.event, 'started', String(started.message));
      await sendAll(topic, consumedIn([run]));
      const exit = await run.exited;
      assert.equal(exit.code, 0, `child exit ${exit.code} ${exit.signal}\n${exit.stderr}`);
      const consumed = consumedOf(run.events);
      assert.equal(consumed.length, GROUPS.length * PER_GROUP, 'each message once');
      assertInOrder(consumed);
      assert.equal(progressOf(b, group, topic).lag, 0);
    } finally {
      run.kill();
    }
  });

  test('two processes in one group: each message group in order across both', async () => {
    const { topic, group } = await setup('FifoTwo');
    const runs = [0, 1].map(() => runChild([b.endpoints, topic, group, '0', '*', LISTENER_MS], 60_000));
    try {
      for (const r of runs) {
        const started = await r.started;
        assert.equal(started.event, 'started', String(started.message));
      }
      await sendAll(topic, consumedIn(runs));
      await until(() => consumedIn(runs)() >= GROUPS.length * PER_GROUP, 30_000);
      for (const r of runs) r.stop();
      for (const r of runs) {
        const exit = await r.exited;
        assert.equal(exit.code, 0, `child exit ${exit.code} ${exit.signal}\n${exit.stderr}`);
      }
      const consumed = runs.flatMap((r) => consumedOf(r.events));
      assert.equal(consumed.length, GROUPS.length * PER_GROUP, 'each message once');
      assertInOrder(consumed);
    } finally {
      for (const r of runs) r.kill();
    }
  });

  test('two official SimpleConsumers in one group: each message group in order', async () => {
    const { topic, group } = await setup('FifoSimple');
    const log: ChildEvent[] = [];
    let stop = false;
    const loop = async () => {
      const c = await simpleConsumer(b, group, topic, { awaitDuration: 500 });
      try {
        while (!stop) {
          for (const m of await c.receive(8, 10_000)) {
            log.push({
              event: 'consumed',
              body: m.body.toString(),
              at: performance.timeOrigin + performance.now(),
            });
            await sleep(10);
            await c.ack(m);
          }
        }
      } finally {
        await c.shutdown();
      }
    };
    const loops = [loop(), loop()];
    try {
      await sendAll(topic, () => log.length);
      await until(() => log.length >= GROUPS.length * PER_GROUP, 30_000);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    assert.equal(log.length, GROUPS.length * PER_GROUP, 'each message once');
    assertInOrder(log);
  });
});
