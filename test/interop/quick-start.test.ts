/**
 * The RocketMQ 5 Node quick start, unchanged, against a broker with its defaults (issue 10): the
 * README's Producer and SimpleConsumer and the PushConsumer quick start, on a topic created with
 * `updateTopic` and consumer groups nobody created (they are created on first use, as RocketMQ's
 * autoCreateSubscriptionGroup does).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Producer, SimpleConsumer } from 'rocketmq-client-nodejs';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { tempDir } from '../helpers.js';
import { clientLogger } from './support.js';
import { consumedOf, runChild } from './push-child.js';

let running: RunningBroker;
let dir: ReturnType<typeof tempDir>;
let endpoints: string;

before(async () => {
  dir = tempDir('vela-quick-start-');
  // The defaults, except free ports and a shorter longest poll: the push consumer's shutdown waits
  // for its poll in flight (push-consumer.test.ts).
  running = await startBroker({
    dataDir: dir.path,
    grpcPort: 0,
    httpPort: 0,
    remotingPort: 0,
    consume: { maxPollMs: 2000 },
  });
  endpoints = `127.0.0.1:${running.grpcPort}`;
  // `vela admin updateTopic -t TopicTest` (RocketMQ's quick start: `mqadmin updateTopic`).
  const r = await fetch(`http://127.0.0.1:${running.httpPort}/api/topics`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ topic: 'TopicTest' }),
  });
  assert.equal(r.status, 200, await r.text());
});
after(async () => {
  await running.close();
  dir.cleanup();
});

test('producer, SimpleConsumer and PushConsumer of the quick start, with groups not created beforehand', async () => {
  // As the quick start, plus `namespace: ''` (the TypeScript types require it) and a quiet logger (the
  // default one writes to ~/logs/rocketmq).
  const producer = new Producer({ endpoints, namespace: '', logger: clientLogger() });
  await producer.startup();
  const sent: string[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const receipt = await producer.send({
        topic: 'TopicTest',
        tag: 'nodejs-demo',
        body: Buffer.from(JSON.stringify({ hello: 'rocketmq-client-nodejs world 😄', now: Date(), i })),
      });
      sent.push(receipt.messageId);
    }
  } finally {
    await producer.shutdown();
  }

  const simpleConsumer = new SimpleConsumer({
    consumerGroup: 'nodejs-demo-group',
    endpoints,
    namespace: '',
    subscriptions: new Map().set('TopicTest', 'nodejs-demo'),
    logger: clientLogger(),
  });
  await simpleConsumer.startup();
  const received: string[] = [];
  try {
    while (received.length < sent.length) {
      const messages = await simpleConsumer.receive(20);
      for (const message of messages) {
        received.push(message.messageId);
        await simpleConsumer.ack(message);
      }
    }
  } finally {
    await simpleConsumer.shutdown();
  }
  assert.deepEqual(received.sort(), [...sent].sort());

  // PushConsumerQuickStart: its own group, also not created beforehand, gets every message too.
  const push = runChild([endpoints, 'TopicTest', 'YourConsumerGroup', String(sent.length)]);
  try {
    const exit = await push.exited;
    assert.equal(exit.code, 0, `child exit ${exit.code} ${exit.signal}\n${exit.stderr}`);
    assert.deepEqual(
      consumedOf(push.events)
        .map((e) => String(e.messageId))
        .sort(),
      [...sent].sort(),
    );
  } finally {
    push.kill();
  }
  for (const g of ['nodejs-demo-group', 'YourConsumerGroup'])
    assert.ok(running.broker.groups.get(g), `${g} created on first use`);
});
