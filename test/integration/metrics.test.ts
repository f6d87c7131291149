/**
 * `GET /metrics`: Prometheus text with RocketMQ 5's names, labels and units, whose values follow real
 * traffic: sends, receives, acks, lag in messages and time, dead letters, request latencies, pull
 * consumers' committed offsets, connections, storage; plus Node's process metrics. Off with
 * `metrics: false`; behind the admin token when there is one.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Admin, Producer, PullConsumer, SimpleConsumer } from '../../src/index.js';
import { RawClient } from './raw-client.js';
import { startTestBroker, uniqueName, waitFor, use, closeAll, type TestBroker } from '../support/harness.js';
import { sleep } from '../helpers.js';

/** One sample of the exposition: metric name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A strict parser of the Prometheus text format (what a scraper would accept; Go's float parser takes any case of NaN). */
function parse(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.e+-]+|[Nn]a[Nn]|\+Inf|-Inf)$/.exec(line);
    assert.ok(m, `not a valid sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3]) {
      for (const l of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    }
    samples.push({ name: m[1]!, labels, value: Number(m[4]) });
  }
  return { samples, types };
}

let b: TestBroker;
let admin: Admin;
before(async () => {
  b = await startTestBroker();
  admin = new Admin({ url: b.adminUrl });
});
after(async () => {
  await closeAll();
  await b.close();
});

async function scrape(url = b.adminUrl) {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parse(await res.text());
}

/** The value of one series (labels given must match; others may be anything), 0 when absent. */
function value(s: { samples: Sample[] }, name: string, labels: Record<string, string> = {}): number {
  const hits = s.samples.filter(
    (x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v),
  );
  return hits.reduce((a, x) => a + x.value, 0);
}

test('sends, receives and acks move the counters and the lag gauges of push/simple consumers', async () => {
  const topic = uniqueName('MetT');
  const group = uniqueName('MetG');
  await admin.createTopic(topic, { readQueueNums: 2, writeQueueNums: 2 });
  await admin.createGroup(group);
  const t = { topic };
  const g = { topic, consumer_group: group, is_retry: 'false' };

  const before = await scrape();
  assert.equal(value(before, 'rocketmq_messages_in_total', t), 0);
  const topics0 = value(before, 'rocketmq_topic_number');
  assert.ok(topics0 >= 1);

  const producer = use(new Producer({ endpoints: b.endpoints }));
  for (let i = 0; i < 10; i++) await producer.send({ topic, body: Buffer.alloc(1500, 0x61) });
  const consumer = use(
    new SimpleConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      awaitDurationMs: 500,
    }),
  );
  // The group now has state: nothing delivered yet for the first receive of 4.
  const got = await consumer.receive(4, 10_000);
  assert.equal(got.length, 4);
  await sleep(30);

  const mid = await scrape();
  const common = { cluster: 'DefaultCluster', node_type: 'broker', node_id: 'broker-0' };
  assert.equal(
    value(mid, 'rocketmq_messages_in_total', { ...t, message_type: 'normal', is_system: 'false', ...common }),
    10,
  );
  assert.equal(value(mid, 'rocketmq_throughput_in_total', t), 15_000);
  assert.equal(value(mid, 'rocketmq_message_size_count', t), 10);
  assert.equal(value(mid, 'rocketmq_message_size_bucket', { ...t, le: '1024' }), 0);
  assert.equal(value(mid, 'rocketmq_message_size_bucket', { ...t, le: '4096' }), 10);
  assert.equal(mid.types.get('rocketmq_message_size'), 'histogram');
  assert.equal(value(mid, 'rocketmq_messages_out_total', g), 4);
  assert.equal(value(mid, 'rocketmq_throughput_out_total', g), 6000);
  assert.equal(value(mid, 'rocketmq_consumer_inflight_messages', g), 4);
  assert.equal(value(mid, 'rocketmq_consumer_ready_messages', g), 6);
  assert.equal(value(mid, 'rocketmq_consumer_lag_messages', g), 10);
  assert.ok(value(mid, 'rocketmq_consumer_lag_latency_milliseconds', g) >= 30);
  assert.ok(value(mid, 'rocketmq_consumer_queueing_latency_milliseconds', g) >= 30);
  assert.ok(value(mid, 'rocketmq_topic_number') >= topics0);
  assert.ok(
    value(mid, 'rocketmq_storage_size_bytes', { storage_type: 'local', storage_medium: 'disk' }) > 15_000,
  );
  assert.ok(value(mid, 'rocketmq_storage_flush_latency_milliseconds_count') >= 10);
  assert.ok(
    value(mid, 'rocketmq_rpc_latency_milliseconds_count', {
      protocol_type: 'grpc',
      request_code: 'send_message',
      response_code: 'ok',
    }) >= 10,
  );
  assert.ok(
    value(mid, 'rocketmq_rpc_latency_milliseconds_count', {
      request_code: 'receive_message',
      is_long_polling: 'true',
    }) >= 1,
  );
  assert.ok(value(mid, 'rocketmq_producer_connections', { protocol_type: 'grpc' }) >= 1);
  assert.equal(
    value(mid, 'rocketmq_consumer_connections', { consumer_group: group, consume_mode: 'simple' }),
    1,
  );
  // Node's process metrics.
  assert.ok(value(mid, 'process_cpu_user_seconds_total') > 0);
  assert.ok(value(mid, 'nodejs_heap_size_used_bytes') > 0);

  for (const m of got) await consumer.ack(m);
  const rest = await consumer.receive(32, 10_000);
  for (const m of rest) await consumer.ack(m);
  const done = await scrape();
  assert.equal(value(done, 'rocketmq_messages_out_total', g), 10);
  assert.equal(value(done, 'rocketmq_consumer_inflight_messages', g), 0);
  assert.equal(value(done, 'rocketmq_consumer_lag_messages', g), 0);
  assert.equal(value(done, 'rocketmq_consumer_lag_latency_milliseconds', g), 0);
});

test('failures: errors by response code, dead letters, retry lag', async () => {
  const topic = uniqueName('MetDlq');
  const group = uniqueName('MetDlqG');
  await admin.createTopic(topic);
  await admin.createGroup(group, { retryMaxTimes: 0 });
  const raw = new RawClient(b.endpoints);
  try {
    const missing = await raw.send(uniqueName('NoSuchTopic'), [{ body: Buffer.from('x') }]);
    assert.equal(missing.status.code, 40402);
  } finally {
    raw.close();
  }
  const s1 = await scrape();
  assert.ok(
    value(s1, 'rocketmq_rpc_latency_milliseconds_count', {
      request_code: 'send_message',
      response_code: 'topic_not_found',
    }) >= 1,
  );

  const producer = use(new Producer({ endpoints: b.endpoints }));
  await producer.send({ topic, body: 'dead' });
  const consumer = use(
    new SimpleConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      awaitDurationMs: 500,
    }),
  );
  assert.equal((await consumer.receive(1, 100)).length, 1); // never acked: its one attempt expires
  await waitFor(
    async () =>
      value(await scrape(), 'rocketmq_send_to_dlq_messages_total', { topic, consumer_group: group }) === 1,
    { what: 'the dead letter counted' },
  );
  const s2 = await scrape();
  assert.equal(value(s2, 'vela_consumer_dlq_messages', { consumer_group: group }), 1);
  assert.equal(
    value(s2, 'rocketmq_consumer_lag_messages', { topic, consumer_group: group, is_retry: 'false' }),
    0,
  );
});

test('pull consumers: lag follows the committed offsets', async () => {
  const topic = uniqueName('MetPull');
  const group = uniqueName('MetPullG');
  await admin.createTopic(topic, { readQueueNums: 1, writeQueueNums: 1 });
  await admin.createGroup(group);
  const producer = use(new Producer({ endpoints: b.endpoints }));
  for (let i = 0; i < 6; i++) await producer.send({ topic, body: `p${i}` });
  const consumer = use(
    new PullConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      autoCommitIntervalMs: 0,
      longPollingTimeoutMs: 200,
    }),
  );
  let n = 0;
  const ac = new AbortController();
  for await (const _m of consumer.messages({ signal: ac.signal })) {
    if (++n === 4) break;
  }
  // The fourth counts as consumed once the loop asks for a fifth: 3 are committed.
  await consumer.commit();
  assert.equal(b.running.broker.offsets.get(group, topic, 0)?.offset, 3);
  const g = { topic, consumer_group: group, is_retry: 'false' };
  const s = await scrape();
  assert.equal(value(s, 'rocketmq_consumer_lag_messages', g), 3);
  assert.equal(value(s, 'rocketmq_consumer_ready_messages', g), 3);
  assert.ok(value(s, 'rocketmq_consumer_lag_latency_milliseconds', g) > 0);
  assert.ok(value(s, 'rocketmq_messages_out_total', g) >= 4);
});

test('delay and transactional messages: scheduled, delivered, committed, rolled back, open', async () => {
  const delayTopic = uniqueName('MetDelay');
  const txTopic = uniqueName('MetTx');
  await admin.createTopic(delayTopic, { messageType: 'DELAY' });
  await admin.createTopic(txTopic, { messageType: 'TRANSACTION' });
  const p = use(new Producer({ endpoints: b.endpoints, topics: [delayTopic, txTopic] }));
  await p.start();
  const at = Date.now();
  await p.send({ topic: delayTopic, body: 'soon', deliveryTimestamp: at + 300 });
  await p.send({ topic: delayTopic, body: 'later', deliveryTimestamp: at + 3_600_000 });
  let s = await scrape();
  assert.equal(value(s, 'rocketmq_timer_enqueue_total', { topic: delayTopic }), 2);
  assert.ok(value(s, 'rocketmq_timer_message_snapshot') >= 1);
  assert.ok(value(s, 'rocketmq_delay_message_latency_seconds_count') >= 2);
  assert.ok(
    value(s, 'rocketmq_delay_message_latency_seconds_bucket', { le: '1' }) >= 1,
    'the 300 ms delay falls in the first bucket',
  );
  await waitFor(
    async () => value(await scrape(), 'rocketmq_timer_dequeue_total', { topic: delayTopic }) === 1,
    { timeoutMs: 10_000, what: 'the due delay message delivered' },
  );
  s = await scrape();
  assert.equal(
    value(s, 'rocketmq_timer_dequeue_total', { topic: delayTopic }),
    1,
    'the later one still waits',
  );
  assert.ok(value(s, 'vela_timer_delivery_lateness_milliseconds_count') >= 1);

  const committed = p.beginTransaction();
  await committed.send({ topic: txTopic, body: 'yes' });
  const rolledBack = p.beginTransaction();
  await rolledBack.send({ topic: txTopic, body: 'no' });
  await p.beginTransaction().send({ topic: txTopic, body: 'open' });
  s = await scrape();
  assert.equal(value(s, 'rocketmq_half_messages', { topic: txTopic }), 3);
  await committed.commit();
  await rolledBack.rollback();
  s = await scrape();
  assert.equal(value(s, 'rocketmq_commit_messages_total', { topic: txTopic }), 1);
  assert.equal(value(s, 'rocketmq_rollback_messages_total', { topic: txTopic }), 1);
  assert.equal(value(s, 'rocketmq_half_messages', { topic: txTopic }), 1);
  assert.equal(value(s, 'rocketmq_finish_message_latency_milliseconds_count', { topic: txTopic }), 2);
});

test('metrics can be turned off; with a token they need it', async () => {
  const off = await startTestBroker({ metrics: false });
  try {
    assert.equal((await fetch(`${off.adminUrl}/metrics`)).status, 404);
  } finally {
    await off.close();
  }
  const token = 'metrics-token-0123456789';
  const guarded = await startTestBroker({ adminToken: token });
  try {
    assert.equal((await fetch(`${guarded.adminUrl}/metrics`)).status, 401);
    const ok = await fetch(`${guarded.adminUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(ok.status, 200);
    assert.ok(parse(await ok.text()).samples.length > 0);
  } finally {
    await guarded.close();
  }
});

test('the Grafana dashboard in docs/ charts only series the broker exports', async () => {
  const { readFileSync } = await import('node:fs');
  const dash = JSON.parse(
    readFileSync(new URL('../../docs/grafana/vela-dashboard.json', import.meta.url), 'utf8'),
  ) as { panels: { targets?: { expr: string }[] }[] };
  const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  assert.ok(exprs.length >= 20);
  const s = await scrape();
  const exported = new Set(s.samples.map((x) => x.name));
  for (const e of exprs) {
    for (const [name] of e.matchAll(/\b(rocketmq|vela|process|nodejs)_[a-z0-9_]+/g)) {
      assert.ok(exported.has(name), `${name} (in "${e}") is not exported`);
    }
  }
});
