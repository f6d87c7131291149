/**
 * What a client or an admin call can make the broker keep (in memory and in every state snapshot) is
 * bounded: topic attributes, queues per topic, retry intervals, client ids, namespaces, client
 * properties and broadcast consumer names. Over a bound: a clear error with RocketMQ's status code.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Code } from '../../src/common/codes.js';
import { isVelaError } from '../../src/common/errors.js';
import { RawClient } from './raw-client.js';
import { startTestBroker, uniqueName, type TestBroker } from '../support/harness.js';

let b: TestBroker;
before(async () => {
  b = await startTestBroker();
});
after(() => b.close());

async function post(path: string, body: unknown): Promise<{ status: number; json: { code?: number } }> {
  const res = await fetch(`${b.adminUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as { code?: number } };
}

test('topic attributes are bounded in number and size; queues per topic too', async () => {
  const topic = uniqueName('AttrT');
  const huge = await post('/api/topics', { topic, attributes: { big: 'x'.repeat(2 * 1024 * 1024) } });
  assert.equal(huge.status, 400);
  assert.equal(huge.json.code, Code.BAD_REQUEST);
  const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
  assert.equal((await post('/api/topics', { topic, attributes: many })).status, 400);
  const badKey = await post('/api/topics', { topic, attributes: { ['k'.repeat(65)]: 'v' } });
  assert.equal(badKey.status, 400);
  assert.equal((await post('/api/topics', { topic, attributes: 'abc' })).status, 400);
  assert.equal((await post('/api/topics', { topic, readQueueNums: 100_000 })).status, 400);
  assert.equal(b.running.broker.topics.get(topic), undefined, 'nothing was created');
  const ok = await post('/api/topics', { topic, attributes: { 'queue.type': 'x'.repeat(1024) } });
  assert.equal(ok.status, 200, 'within the bounds');
});

test('retry intervals are bounded (a year): no interval that would never come', async () => {
  const group = uniqueName('RG');
  const r = await post('/api/groups', {
    group,
    groupRetryPolicy: { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [1000, 1e300] } },
  });
  assert.equal(r.status, 400);
  const e = await post('/api/groups', {
    group,
    groupRetryPolicy: {
      type: 'EXPONENTIAL',
      exponentialRetryPolicy: { initial: 1, max: 1e20, multiplier: 2 },
    },
  });
  assert.equal(e.status, 400);
  await assert.rejects(
    b.running.broker.groups.upsert(group, { fifoRetryIntervalMs: 2 * 365 * 24 * 3600_000 }),
    (err) => isVelaError(err, 'ILLEGAL_GROUP_CONFIG'),
  );
  const day = await post('/api/groups', { group, fifoRetryIntervalMs: 30 * 24 * 3600_000 });
  assert.equal(day.status, 200, '30 days, beyond a timer, is fine');
});

test('client ids, namespaces, client properties and consumer names are bounded at the gRPC edge', async () => {
  const topic = uniqueName('CT');
  await b.running.broker.topics.upsert(topic, {});
  const longId = new RawClient(b.endpoints, 'c'.repeat(600));
  const ns = new RawClient(b.endpoints);
  ns.metadata.set('x-mq-namespace', 'n'.repeat(100));
  const c = new RawClient(b.endpoints);
  try {
    const r1 = await longId.unary('QueryRoute', { topic: { name: topic } });
    assert.equal(r1.status.code, Code.BAD_REQUEST);
    assert.match(r1.status.message, /client id/);
    const r2 = await ns.unary('QueryRoute', { topic: { name: topic } });
    assert.equal(r2.status.code, Code.BAD_REQUEST);
    assert.match(r2.status.message, /namespace/);
    const r3 = await c.unary('QueryRoute', { topic: { name: topic, resource_namespace: 'bad%ns' } });
    assert.equal(r3.status.code, Code.BAD_REQUEST);

    const group = uniqueName('CG');
    const sub = { group: { name: group }, subscriptions: [{ topic: { name: topic } }] };
    const named = await c.telemetry({
      client_type: 4,
      subscription: sub,
      client_properties: { 'vela.consume.mode': 'BROADCASTING', 'vela.consumer.name': 'n'.repeat(100) },
    });
    named.end();
    assert.equal(named.reply.status.code, Code.ILLEGAL_CONSUMER_GROUP);
    const props = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`p${i}`, 'v']));
    const many = await c.telemetry({ client_type: 4, subscription: sub, client_properties: props });
    many.end();
    assert.equal(many.reply.status.code, Code.BAD_REQUEST);
    const fine = await c.telemetry({
      client_type: 4,
      subscription: sub,
      client_properties: { 'vela.consume.mode': 'BROADCASTING', 'vela.consumer.name': 'node-1' },
    });
    fine.end();
    assert.equal(fine.reply.status?.code ?? Code.OK, Code.OK);
  } finally {
    longId.close();
    ns.close();
    c.close();
  }
});
