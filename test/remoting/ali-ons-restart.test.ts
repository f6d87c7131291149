/** ali-ons: consumer offsets live in the broker and survive its restart. */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestBroker, uniqueName, closeAll, waitFor } from '../support/harness.js';
import { tempDir } from '../helpers.js';
import { closeOns, ons, onsConsumer, onsProducer, removeOnsHome } from './ons-support.js';

after(async () => {
  await closeOns();
  await closeAll();
  removeOnsHome();
});

test('a consumer restarted after a broker restart resumes after what it consumed', async () => {
  const dir = tempDir('vela-ali-ons-restart-');
  let broker = await startTestBroker({ dataDir: dir.path, keepDataDir: true });
  try {
    const port = broker.running.remotingPort;
    const topic = uniqueName('T');
    const group = uniqueName('G');
    await broker.running.broker.topics.upsert(topic, { readQueueNums: 2, writeQueueNums: 2 });
    await broker.running.broker.groups.upsert(group, {});
    const p = await onsProducer(port);
    for (let i = 0; i < 6; i++) await p.send(new ons.Message(topic, 'T', `first-${i}`));
    const got: string[] = [];
    const c1 = onsConsumer(port, group);
    c1.subscribe(topic, '*', async (m) => void got.push(m.body.toString()));
    await c1.ready();
    await waitFor(() => got.length >= 6, 10_000, 'the first six');
    const committed = () =>
      broker.running.broker.offsets.list(group, topic).reduce((n, o) => n + o.offset, 0);
    await waitFor(() => committed() === 6, 5000, 'offsets committed');
    await c1.close();
    await p.close();
    await closeOns();
    await broker.close();

    // The same port: clients configured with it find the broker again.
    broker = await startTestBroker({ dataDir: dir.path, keepDataDir: true, remotingPort: port });
    assert.equal(committed(), 6, 'the committed offsets were recovered');
    const p2 = await onsProducer(port);
    for (let i = 0; i < 4; i++) await p2.send(new ons.Message(topic, 'T', `second-${i}`));
    const after: string[] = [];
    const c2 = onsConsumer(port, group);
    c2.subscribe(topic, '*', async (m) => void after.push(m.body.toString()));
    await c2.ready();
    await waitFor(() => after.length >= 4, 10_000, 'the next four');
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(after.sort(), ['second-0', 'second-1', 'second-2', 'second-3']);
    await c2.close();
    await p2.close();
    await closeOns();
  } finally {
    await broker.close();
    dir.cleanup();
  }
});
