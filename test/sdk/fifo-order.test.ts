/**
 * FIFO order through Vela's SDK (issue 10 §1): a FIFO topic with 8 queues, an orderly group with
 * defaults, three message groups × 30 messages sent one after the other while consumers consume,
 * ~10 ms per message. Within each message group the consumers must see 0 … 29, each once, in order:
 * through one PushConsumer, through two PushConsumers of the group, and through SimpleConsumers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConsumeResult, Producer, PushConsumer, SimpleConsumer, type MessageView } from '../../src/index.js';
import { sleep } from '../helpers.js';
import { closeAll, startTestBroker, unique, use, waitFor, type TestBroker } from './support.js';

const GROUPS = ['Order-001', 'Order-002', 'Account-Alice'];
const PER_GROUP = 30;
const TOTAL = GROUPS.length * PER_GROUP;

describe('FIFO order through the SDK', { concurrency: true }, () => {
  let b: TestBroker;
  let producer: Producer;
  before(async () => {
    b = await startTestBroker();
    producer = use(new Producer({ endpoints: b.endpoints }));
  });
  after(async () => {
    await closeAll();
    await b.close();
  });

  async function setup(): Promise<{ topic: string; group: string }> {
    const topic = unique('FifoT');
    const group = unique('FifoG');
    await b.running.broker.topics.upsert(topic, { attributes: { 'message.type': 'FIFO' } });
    await b.running.broker.groups.upsert(group, { consumeMessageOrderly: true });
    return { topic, group };
  }

  /** One after the other, while the consumers run: the first, then (once it is consumed) the rest. */
  async function sendAll(topic: string, consumed: () => number): Promise<void> {
    for (let seq = 0; seq < PER_GROUP; seq++) {
      for (const g of GROUPS) {
        await producer.send({ topic, body: `${g}#${seq}`, messageGroup: g });
        if (seq === 0 && g === GROUPS[0]) await waitFor(() => consumed() > 0, 10_000, 'the first message');
        await sleep(2);
      }
    }
  }

  function assertInOrder(log: string[]): void {
    for (const g of GROUPS) {
      assert.deepEqual(
        log.filter((x) => x.startsWith(`${g}#`)).map((x) => Number(x.split('#')[1])),
        Array.from({ length: PER_GROUP }, (_, i) => i),
        `consumption order of ${g}`,
      );
    }
  }

  for (const consumers of [1, 2]) {
    test(`${consumers} PushConsumer(s): each message group in order`, async () => {
      const { topic, group } = await setup();
      const log: string[] = [];
      const listener = async (m: MessageView) => {
        log.push(m.text());
        await sleep(10);
        return ConsumeResult.SUCCESS;
      };
      const cs = Array.from({ length: consumers }, () =>
        use(new PushConsumer({ endpoints: b.endpoints, group, subscriptions: { [topic]: '*' }, listener })),
      );
      for (const c of cs) await c.start();
      await sendAll(topic, () => log.length);
      await waitFor(() => log.length >= TOTAL, 20_000, 'every message consumed');
      for (const c of cs) await c.close();
      assert.equal(log.length, TOTAL, 'each message once');
      assertInOrder(log);
    });
  }

  test('two SimpleConsumers: each message group in order', async () => {
    const { topic, group } = await setup();
    const log: string[] = [];
    let stop = false;
    const loop = async () => {
      const c = use(new SimpleConsumer({ endpoints: b.endpoints, group, subscriptions: { [topic]: '*' } }));
      await c.start();
      while (!stop) {
        for (const m of await c.receive(8, 10_000, { awaitDurationMs: 200 })) {
          log.push(m.text());
          await sleep(10);
          await c.ack(m);
        }
      }
      await c.close();
    };
    const loops = [loop(), loop()];
    await sendAll(topic, () => log.length);
    await waitFor(() => log.length >= TOTAL, 20_000, 'every message consumed');
    stop = true;
    await Promise.all(loops);
    assert.equal(log.length, TOTAL, 'each message once');
    assertInOrder(log);
  });
});
