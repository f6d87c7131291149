/** The Go Remoting client (github.com/apache/rocketmq-client-go/v2 v2.1.2, pinned in go/go.mod): producer and push consumer. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestBroker, uniqueName, closeAll, use, waitFor, type TestBroker } from '../support/harness.js';
import { tempDir } from '../helpers.js';
import { decodeOffsetMessageId } from '../../src/remoting/message-codec.js';
import { goBinary, runGo } from './client-programs.js';

let b: TestBroker;
const home = tempDir('vela-go-home-');

before(async () => {
  await goBinary();
  b = use(await startTestBroker());
});
after(async () => {
  await closeAll();
  home.cleanup();
});

test('Go producer and push consumer: tag, keys, properties and ids round-trip', async () => {
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await b.running.broker.topics.upsert(topic, { readQueueNums: 4, writeQueueNums: 4 });
  await b.running.broker.groups.upsert(group, {});
  const ns = `127.0.0.1:${b.running.remotingPort}`;
  const sent = (await runGo(home.path, ['produce', ns, topic, '5'])).filter((e) => e.event === 'sent');
  assert.equal(sent.length, 5);
  for (const s of sent) {
    assert.equal(s.status, 0, 'SendOK');
    assert.equal(decodeOffsetMessageId(s.offsetMsgId as string)?.address, ns);
    const [stored] = await b.running.broker.findMessageById(s.msgId as string);
    assert.equal(stored?.tag, 'TagGo');
    assert.equal(stored?.properties.lang, 'go');
  }
  const got = (await runGo(home.path, ['consume', ns, topic, group, '5'])).filter(
    (e) => e.event === 'received',
  );
  assert.deepEqual(got.map((m) => m.msgId).sort(), sent.map((s) => s.msgId).sort());
  for (const m of got) {
    assert.equal(m.tags, 'TagGo');
    assert.equal(m.topic, topic);
    assert.match(m.keys as string, /^go-\d$/);
    assert.equal((m.properties as Record<string, string>).lang, 'go');
  }
});

test('Go push consumer: offsets committed at shutdown survive a restart (no redelivery)', async () => {
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await b.running.broker.topics.upsert(topic, { readQueueNums: 4, writeQueueNums: 4 });
  await b.running.broker.groups.upsert(group, {});
  const ns = `127.0.0.1:${b.running.remotingPort}`;
  const first = (await runGo(home.path, ['produce', ns, topic, '6'])).filter((e) => e.event === 'sent');
  const got1 = (await runGo(home.path, ['consume', ns, topic, group, '6'])).filter(
    (e) => e.event === 'received',
  );
  assert.deepEqual(got1.map((m) => m.msgId).sort(), first.map((s) => s.msgId).sort());
  // The consumer commits at shutdown (well before its 5 s timer): the broker has every offset.
  const committed = () =>
    [0, 1, 2, 3].reduce((n, q) => n + (b.running.broker.offsets.get(group, topic, q)?.offset ?? 0), 0);
  await waitFor(() => committed() === 6, 10_000);
  // A new consumer of the group starts where the last one stopped: only the new messages.
  const second = (await runGo(home.path, ['produce', ns, topic, '3'])).filter((e) => e.event === 'sent');
  const got2 = (await runGo(home.path, ['consume', ns, topic, group, '3'])).filter(
    (e) => e.event === 'received',
  );
  assert.deepEqual(got2.map((m) => m.msgId).sort(), second.map((s) => s.msgId).sort(), 'no redelivery');
  await waitFor(() => committed() === 9, 10_000);
});
