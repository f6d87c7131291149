/**
 * Reserved names (issue 10 §4): nobody creates a topic or group in the broker's namespaces (`%RETRY%`,
 * `%DLQ%`, `%SYS%`, `%LMQ%`) or under RocketMQ's system names, through the admin API, the registries or
 * automatic creation; what exists already (a DLQ) can still be updated.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Code } from '../../src/common/codes.js';
import { isVelaError } from '../../src/common/errors.js';
import { startTestBroker, type TestBroker } from '../support/harness.js';
import { RawClient } from './raw-client.js';

let b: TestBroker;
let client: RawClient;
before(async () => {
  b = await startTestBroker({ autoCreateTopics: true });
  client = new RawClient(b.endpoints);
});
after(async () => {
  client.close();
  await b.close();
});

const RESERVED_TOPICS = [
  '%RETRY%G+T',
  '%RETRY%G_T',
  '%DLQ%SomeGroup',
  '%SYS%Mine',
  '%LMQ%Mine',
  'TBW102',
  'SCHEDULE_TOPIC_XXXX',
  'RMQ_SYS_TRANS_HALF_TOPIC',
  'RMQ_SYS_ANYTHING',
  'rmq_sys_anything',
  'CHECKPOINT_TOPIC',
];
const RESERVED_GROUPS = ['%RETRY%G', '%DLQ%G', '%SYS%G', '%LMQ%G', 'CID_RMQ_SYS_G', 'G%BROADCAST%c1'];

async function post(path: string, body: unknown): Promise<{ status: number; json: { error?: string } }> {
  const r = await fetch(`${b.adminUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: (await r.json()) as { error?: string } };
}

test('the admin API refuses topics in the system namespaces: ILLEGAL_TOPIC, nothing created', async () => {
  for (const topic of RESERVED_TOPICS) {
    const r = await post('/api/topics', { topic });
    assert.equal(r.json.error, 'ILLEGAL_TOPIC', topic);
    assert.ok(r.status >= 400 && r.status < 500, `${topic}: ${r.status}`);
    assert.equal(b.running.broker.topics.get(topic), undefined, topic);
  }
  assert.equal((await post('/api/topics', { topic: 'Ordinary_Topic-1' })).status, 200);
});

test('the admin API refuses groups in the system namespaces: ILLEGAL_CONSUMER_GROUP', async () => {
  for (const group of RESERVED_GROUPS) {
    const r = await post('/api/groups', { group });
    assert.equal(r.json.error, 'ILLEGAL_CONSUMER_GROUP', group);
    assert.equal(b.running.broker.groups.get(group), undefined, group);
  }
  assert.equal((await post('/api/groups', { group: 'Ordinary_Group-1' })).status, 200);
});

test('automatic creation refuses them too: a receive for %SYS% group, a route for a %DLQ% topic', async () => {
  await b.running.broker.topics.upsert('AutoT', {});
  const r = await client.receiveMessages('%SYS%Sneaky', 'AutoT');
  assert.equal(r.status.code, Code.ILLEGAL_CONSUMER_GROUP);
  assert.equal(b.running.broker.groups.get('%SYS%Sneaky'), undefined);
  const route = await client.unary('QueryRoute', {
    topic: { name: '%DLQ%Sneaky' },
    endpoints: { scheme: 1, addresses: [{ host: '127.0.0.1', port: 1 }] },
  });
  assert.equal(route.status.code, Code.ILLEGAL_TOPIC);
  assert.equal(b.running.broker.topics.get('%DLQ%Sneaky'), undefined);
  const send = await client.send('%RETRY%Sneaky_AutoT', [{}]);
  assert.equal(send.status.code, Code.ILLEGAL_TOPIC, 'a send with automatic creation');
});

test("the broker's own topics are still created by the broker, and can be updated afterwards", async () => {
  const broker = b.running.broker;
  await broker.topics.upsert('%DLQ%Owner', { readQueueNums: 1, writeQueueNums: 1 }, { system: true });
  const updated = await broker.topics.upsert('%DLQ%Owner', { perm: 4 });
  assert.equal(updated.perm, 4);
  await assert.rejects(broker.topics.upsert('%DLQ%Other', {}), (e) => isVelaError(e, 'ILLEGAL_TOPIC'));
  await assert.rejects(broker.groups.upsert('%RETRY%X', {}), (e) => isVelaError(e, 'ILLEGAL_CONSUMER_GROUP'));
});
