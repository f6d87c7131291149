/**
 * Consumption retry and dead-letter queues through the gRPC endpoint, with short policies
 * (next = [300 ms, 600 ms]) so the timing is real but quick.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { Code } from '../../src/common/codes.js';
import { fromMillis } from '../../src/protocol/codec.js';
import { tempDir, captureLogger } from '../helpers.js';
import { RawClient, startTestBroker } from './raw-client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

let running: RunningBroker;
let client: RawClient;
const logs = captureLogger();
let seq = 0;
const unique = (p: string) => `${p}_${process.pid}_${++seq}`;
const SHORT = { type: 'CUSTOMIZED' as const, next: [300, 600] };

let close: () => Promise<void>;

before(async () => {
  ({ running, client, close } = await startTestBroker({ logger: logs.logger }));
});

after(() => close());

async function setup(retryMaxTimes: number): Promise<{ topic: string; group: string }> {
  const topic = unique('T');
  const group = unique('G');
  await running.broker.topics.upsert(topic, {});
  await running.broker.groups.upsert(group, { retryMaxTimes, retryPolicy: SHORT });
  return { topic, group };
}

/** A push consumer's receive: auto-renewed, the server picks the invisible time. */
async function pushReceive(c: RawClient, group: string, topic: string, pollMs: number): Promise<Any[]> {
  const frames = await c.receive({
    group: { name: group },
    message_queue: { topic: { name: topic }, id: -1 },
    filter_expression: { type: 1, expression: '*' },
    batch_size: 32,
    auto_renew: true,
    long_polling_timeout: fromMillis(pollMs),
  });
  return frames.filter((f) => f.message).map((f) => f.message);
}

const sp = (m: Any) => m.system_properties;

test('push retry: the policy is enforced over 0 ms nacks, attempts count, new ids carry ORIGIN_MESSAGE_ID, then the DLQ', async () => {
  const { topic, group } = await setup(2); // 3 deliveries
  await client.send(topic, [
    { messageId: 'P1', tag: 'T1', keys: ['k-P1'], properties: { a: '1' }, body: Buffer.from('payload') },
  ]);

  let [m] = await pushReceive(client, group, topic, 0);
  assert.equal(sp(m).delivery_attempt, 1);
  const ids = [sp(m).message_id];
  let nacked = Date.now();
  assert.equal(
    (await client.changeInvisible(group, topic, sp(m).receipt_handle, 0)).status.code,
    Code.OK,
    'the nack (0 ms, as the Node client sends)',
  );

  for (const [attempt, wait] of [
    [2, 300],
    [3, 600],
  ] as const) {
    [m] = await pushReceive(client, group, topic, 3000);
    const after = Date.now() - nacked;
    assert.ok(m, `attempt ${attempt} delivered`);
    assert.equal(sp(m).delivery_attempt, attempt);
    assert.ok(
      after >= wait - 15,
      `attempt ${attempt} came back after ${after} ms: the ${wait} ms policy is the floor`,
    );
    assert.ok(after <= wait + 150, `attempt ${attempt} came back after ${after} ms`);
    assert.equal(m.user_properties.ORIGIN_MESSAGE_ID, 'P1');
    assert.equal(m.topic.name, topic);
    assert.equal(sp(m).tag, 'T1');
    assert.deepEqual(sp(m).keys, ['k-P1']);
    assert.equal(m.body.toString(), 'payload');
    ids.push(sp(m).message_id);
    nacked = Date.now();
    await client.changeInvisible(group, topic, sp(m).receipt_handle, 0);
  }
  assert.equal(new Set(ids).size, 3, 'every retry is a new message id');
  assert.equal((await pushReceive(client, group, topic, 800)).length, 0, 'no fourth delivery');
  // The console's delivery history, found by the original id: each attempt, how it ended, what came next.
  assert.deepEqual(
    running.broker.deliveries.of('P1').map((d) => [d.attempt, d.retry, d.outcome, d.next]),
    [
      [1, false, 'NACKED', 'RETRY'],
      [2, true, 'NACKED', 'RETRY'],
      [3, true, 'NACKED', 'DLQ'],
    ],
  );

  const dlq = `%DLQ%${group}`;
  assert.ok(running.broker.topics.get(dlq), 'the DLQ topic is created on demand');
  assert.equal(running.broker.consume.deadLettered.get(group), 1);
  assert.ok(
    logs.lines.some((l) => /dead-letter queue/.test(l.msg) && l.group === group),
    'a log line records it',
  );

  // The DLQ is a topic like any other: another group consumes it.
  const reader = unique('G');
  await running.broker.groups.upsert(reader, {});
  const { messages } = await client.receiveMessages(reader, dlq);
  assert.equal(messages.length, 1);
  assert.equal(sp(messages[0]).message_id, 'P1', 'the dead letter keeps the original id');
  assert.equal(messages[0].user_properties.DLQ_ORIGIN_TOPIC, topic);
  assert.equal(messages[0].user_properties.a, '1');
});

test('simple consumer: retry after the invisible time, after changeInvisibleDuration, then the DLQ', async () => {
  const { topic, group } = await setup(1); // 2 deliveries
  await client.send(topic, [{ messageId: 'S1' }]);
  const popped = Date.now(); // before the request: the broker starts the clock no earlier
  const first = await client.receiveMessages(group, topic, { invisibleMs: 300 });
  assert.equal(sp(first.messages[0]).delivery_attempt, 1);
  const again = await client.receiveMessages(group, topic, { invisibleMs: 5000, pollMs: 2000 });
  const back = Date.now() - popped;
  assert.equal(sp(again.messages[0]).delivery_attempt, 2);
  assert.ok(back >= 290 && back <= 450, `retry ${back} ms after the receive (invisible 300 ms)`);
  assert.equal(again.messages[0].user_properties.ORIGIN_MESSAGE_ID, 'S1');
  // Shorten its invisible time: it fails again at the new deadline and, out of attempts, goes to the DLQ.
  await client.changeInvisible(group, topic, sp(again.messages[0]).receipt_handle, 100);
  assert.equal((await client.receiveMessages(group, topic, { pollMs: 700 })).messages.length, 0);
  const dlq = await running.broker.deadLetters(group);
  assert.deepEqual(
    dlq.messages.map((m) => [m.messageId, m.reconsumeTimes]),
    [['S1', 2]],
  );
  assert.deepEqual(
    running.broker.deliveries.of('S1').map((d) => [d.attempt, d.outcome, d.next]),
    [
      [1, 'EXPIRED', 'RETRY'],
      [2, 'EXPIRED', 'DLQ'],
    ],
    'a changed invisible time leaves the delivery open until it ends',
  );
});

test('ForwardMessageToDeadLetterQueue moves a delivery to the DLQ and settles it', async () => {
  const { topic, group } = await setup(16);
  await client.send(topic, [{ messageId: 'F1' }]);
  const { messages } = await client.receiveMessages(group, topic);
  const r = await client.unary('ForwardMessageToDeadLetterQueue', {
    group: { name: group },
    topic: { name: topic },
    receipt_handle: sp(messages[0]).receipt_handle,
    message_id: 'F1',
    delivery_attempt: 1,
    max_delivery_attempts: 17,
  });
  assert.equal(r.status.code, Code.OK);
  assert.equal(
    (await client.ack(group, topic, [sp(messages[0]).receipt_handle])).status.code,
    Code.INVALID_RECEIPT_HANDLE,
  );
  assert.deepEqual(
    (await running.broker.deadLetters(group)).messages.map((m) => m.messageId),
    ['F1'],
  );
  assert.deepEqual(
    running.broker.deliveries.of('F1').map((d) => [d.attempt, d.outcome, d.next]),
    [[1, 'FORWARDED_TO_DLQ', 'DLQ']],
    'the refused ack left the forwarded delivery as it was',
  );
  const bad = await client.unary('ForwardMessageToDeadLetterQueue', {
    group: { name: group },
    topic: { name: topic },
    receipt_handle: 'forged',
  });
  assert.equal(bad.status.code, Code.INVALID_RECEIPT_HANDLE);
});

test('the admin API lists dead letters and resends them to the group', async () => {
  const { topic, group } = await setup(0); // 1 delivery
  await client.send(topic, [{ messageId: 'D1' }, { messageId: 'D2' }]);
  const got = await pushReceive(client, group, topic, 0);
  for (const m of got) await client.changeInvisible(group, topic, sp(m).receipt_handle, 0);
  const base = `http://127.0.0.1:${running.httpPort}/api/groups/${group}/dlq`;
  let listed: Any;
  for (let i = 0; i < 50; i++) {
    listed = await (await fetch(base)).json();
    if (listed.messages.length === 2) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.deepEqual(listed.messages.map((m: Any) => m.messageId).sort(), ['D1', 'D2']);
  assert.equal(listed.messages[0].originTopic, topic);

  const one: Any = await (
    await fetch(`${base}/resend`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messageId: 'D2' }),
    })
  ).json();
  assert.equal(one.resent, 1);
  const back = await pushReceive(client, group, topic, 1000);
  assert.equal(back.length, 1);
  assert.equal(back[0].user_properties.ORIGIN_MESSAGE_ID, 'D2');
  assert.equal(sp(back[0]).delivery_attempt, 1, 'attempts start again');
  const missing = await fetch(`${base}/resend`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messageId: 'nope' }),
  });
  assert.equal(missing.status, 404);
});

test('waiting retries and in-flight messages survive a restart: nothing lost, nothing early', async () => {
  const d = tempDir();
  try {
    const opts = {
      dataDir: d.path,
      grpcPort: 0,
      httpPort: 0,
      remotingPort: 0,
      consume: { minInvisibleMs: 100 },
    };
    let b = await startBroker(opts);
    await b.broker.topics.upsert('RT', {});
    await b.broker.groups.upsert('RG', { retryPolicy: { type: 'CUSTOMIZED', next: [1500] } });
    let c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    await c.send('RT', [{ messageId: 'WAIT' }]);
    const [m] = await pushReceive(c, 'RG', 'RT', 0);
    // Both taken before the request: the broker starts neither clock before it gets the request,
    // however long its answer then takes to arrive.
    const nacked = Date.now();
    await c.changeInvisible('RG', 'RT', sp(m).receipt_handle, 0);
    await c.send('RT', [{ messageId: 'FLY' }]);
    const popped = Date.now();
    const fly = await c.receiveMessages('RG', 'RT', { invisibleMs: 1200 });
    assert.equal(fly.messages.length, 1);
    c.close();
    await b.close();

    b = await startBroker(opts);
    c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    assert.equal(
      (await c.receiveMessages('RG', 'RT', { pollMs: 0 })).messages.length,
      0,
      'nothing is due yet',
    );
    const seen = new Map<string, number>();
    while (seen.size < 2) {
      const r = await c.receiveMessages('RG', 'RT', { pollMs: 3000 });
      assert.ok(r.messages.length > 0, 'both come back');
      for (const x of r.messages) seen.set(x.user_properties.ORIGIN_MESSAGE_ID, Date.now());
    }
    assert.ok(seen.get('WAIT')! - nacked >= 1480, 'the waiting retry kept its due time');
    assert.ok(seen.get('FLY')! - popped >= 1180, 'the in-flight message kept its deadline');
    c.close();
    await b.close();
  } finally {
    d.cleanup();
  }
});

test('flow control: sends are refused over the backlog threshold and on a full disk, and both clear', async () => {
  const d = tempDir();
  let used = 10;
  try {
    const b = await startBroker({
      dataDir: d.path,
      grpcPort: 0,
      httpPort: 0,
      remotingPort: 0,
      flowControl: { maxReadyBacklog: 5, checkIntervalMs: 30 },
      consume: { maxParkedReceives: 1 },
      store: { diskCheckIntervalMs: 20 },
      diskUsage: async () => ({ totalBytes: 100, usedBytes: used }),
    });
    const c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    await b.broker.topics.upsert('FT', {});
    await b.broker.groups.upsert('FG', {});
    await c.receiveMessages('FG', 'FT'); // the group now follows the topic
    await c.send(
      'FT',
      Array.from({ length: 10 }, () => ({})),
    );
    await new Promise((r) => setTimeout(r, 100));
    const refused = await c.send('FT', [{}]);
    assert.equal(refused.status.code, Code.TOO_MANY_REQUESTS, 'backlog over the threshold');
    for (let got = 0; got < 10;) {
      const r = await c.receiveMessages('FG', 'FT');
      got += r.messages.length;
      await c.ack(
        'FG',
        'FT',
        r.messages.map((m: Any) => sp(m).receipt_handle),
      );
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await c.send('FT', [{}])).status.code, Code.OK, 'clears when the backlog is consumed');

    used = 95;
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await c.send('FT', [{}])).status.code, Code.TOO_MANY_REQUESTS, 'disk above 90 %');
    used = 50;
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await c.send('FT', [{}])).status.code, Code.OK, 'clears when space is back');

    // Receives: one may park; the next is refused rather than queued without bound.
    await b.broker.topics.upsert('Empty', {});
    const parked = c.receiveMessages('FG', 'Empty', { pollMs: 500 });
    await new Promise((r) => setTimeout(r, 50));
    const second = await c.receiveMessages('FG', 'Empty', { pollMs: 500 });
    assert.equal(second.status.code, Code.TOO_MANY_REQUESTS);
    await parked;
    c.close();
    await b.close();
  } finally {
    d.cleanup();
  }
});
