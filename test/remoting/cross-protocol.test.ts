/**
 * One messaging model behind both protocols: a message sent over gRPC (Vela's SDK) is consumed over
 * Remoting (the Java client) and the reverse, with the same message id and properties; a group with
 * consumers of both kinds is served with a warning, in the log and in consumerProgress.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { Producer, SimpleConsumer } from '../../src/index.js';
import { createLogger } from '../../src/common/logger.js';
import { AdminOperations } from '../../src/admin/operations.js';
import { startTestBroker, uniqueName, closeAll, use, waitFor, type TestBroker } from '../support/harness.js';
import { tempDir } from '../helpers.js';
import { javaClasspath, runJava } from './client-programs.js';
import { onsConsumer, closeOns, removeOnsHome } from './ons-support.js';

let b: TestBroker;
const home = tempDir('vela-cross-home-');
const logLines: string[] = [];
const ns = () => `127.0.0.1:${b.running.remotingPort}`;

before(async () => {
  await javaClasspath();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  b = use(await startTestBroker({ logger: createLogger({ level: 'warn', destination: sink }) }));
});
after(async () => {
  await closeOns();
  await closeAll();
  home.cleanup();
  removeOnsHome();
});

async function setup() {
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await b.running.broker.topics.upsert(topic, { readQueueNums: 2, writeQueueNums: 2 });
  await b.running.broker.groups.upsert(group, {});
  return { topic, group };
}

describe('gRPC and Remoting on one broker', { concurrency: false }, () => {
  test('gRPC producer → Remoting (Java) consumer: same message id, tag, keys and properties', async () => {
    const { topic, group } = await setup();
    const p = use(new Producer({ endpoints: b.endpoints, topics: [topic] }));
    await p.start();
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const r = await p.send({
        topic,
        body: `grpc ${i}`,
        tag: 'TagG',
        keys: [`gk${i}`],
        properties: { color: 'green' },
      });
      ids.push(r.messageId);
    }
    const got = (await runJava(home.path, ['consume', ns(), topic, group, '3'])).filter(
      (e) => e.event === 'received',
    );
    assert.deepEqual(
      got.map((m) => m.msgId).sort(),
      [...ids].sort(),
      'the gRPC message id is the Remoting msgId',
    );
    for (const m of got) {
      const props = m.properties as Record<string, string>;
      assert.equal(m.tags, 'TagG');
      assert.equal(m.keys, `gk${(m.body as string).slice(5)}`);
      assert.equal(props.color, 'green');
      assert.equal(props.UNIQ_KEY, m.msgId);
      assert.ok(!Object.keys(props).some((k) => k.startsWith('__VELA')), 'no internal property leaks');
    }
  });

  test('Remoting (Java) producer → gRPC consumer: same message id and user properties', async () => {
    const { topic, group } = await setup();
    const sent = (await runJava(home.path, ['send', ns(), topic, '3', 'TagJ'])).filter(
      (e) => e.event === 'sent',
    );
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 1000,
      }),
    );
    await c.start();
    const got = [];
    while (got.length < 3) {
      const batch = await c.receive(32, 10_000);
      for (const m of batch) await c.ack(m);
      got.push(...batch);
    }
    assert.deepEqual(got.map((m) => m.messageId).sort(), sent.map((s) => s.msgId).sort());
    for (const m of got) {
      assert.equal(m.tag, 'TagJ');
      assert.deepEqual(m.properties, { color: 'blue', origin: 'java' }, 'only the user properties');
      assert.equal(m.keys.length, 1);
    }
    await c.close();
  });

  test('one group with gRPC and Remoting consumers is served with a warning (log and consumerProgress)', async () => {
    const { topic, group } = await setup();
    const grpc = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 200,
      }),
    );
    await grpc.start();
    await grpc.receive(1, 1000);
    const ons = onsConsumer(b.running.remotingPort, group);
    ons.subscribe(topic, '*', async () => {});
    await ons.ready();
    await waitFor(
      () => logLines.some((l) => l.includes(group) && l.includes('both')),
      5000,
      'the warning in the log',
    );
    const progress = new AdminOperations(b.running.broker).consumerProgress(group);
    assert.match(progress.warnings?.[0] ?? '', /both push\/simple \(gRPC\) consumers and queue-granularity/);
    await ons.close();
    await grpc.close();
  });
});
