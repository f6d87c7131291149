/**
 * The broker through its gRPC endpoint, as any client sees it: routing, validation codes, consumption
 * semantics, receipt-handle rules, redelivery timing and restarts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { storeOf } from '../../src/internal.js';
import { Code } from '../../src/common/codes.js';
import { tempDir, sleep } from '../helpers.js';
import { RawClient, startTestBroker } from './raw-client.js';
import { fromMillis } from '../../src/protocol/codec.js';
import { LOADED_SLACK_MS } from '../support/harness.js';

let running: RunningBroker;
let client: RawClient;
let seq = 0;
const unique = (p: string) => `${p}_${process.pid}_${++seq}`;

async function topicAndGroup(
  opts: { fifo?: boolean; queues?: number } = {},
): Promise<{ topic: string; group: string }> {
  const topic = unique('T');
  const group = unique('G');
  await running.broker.topics.upsert(topic, {
    ...(opts.queues ? { readQueueNums: opts.queues, writeQueueNums: opts.queues } : {}),
    ...(opts.fifo ? { attributes: { 'message.type': 'FIFO' } } : {}),
  });
  await running.broker.groups.upsert(group, {});
  return { topic, group };
}

let close: () => Promise<void>;

before(async () => {
  ({ running, client, close } = await startTestBroker());
});

after(() => close());

test('QueryRoute: queue 0 present and read-write, endpoints echo the caller, types from the topic', async () => {
  const { topic } = await topicAndGroup({ fifo: true, queues: 4 });
  const endpoints = { scheme: 1, addresses: [{ host: '127.0.0.1', port: running.grpcPort }] };
  const r = await client.unary('QueryRoute', { topic: { name: topic }, endpoints });
  assert.equal(r.status.code, Code.OK);
  assert.equal(r.message_queues.length, 4);
  const q0 = r.message_queues[0];
  assert.equal(q0.id ?? 0, 0);
  assert.equal(q0.permission, 4);
  assert.deepEqual(q0.broker.endpoints.addresses, endpoints.addresses);
  assert.deepEqual(q0.accept_message_types, [2]);
  const missing = await client.unary('QueryRoute', { topic: { name: 'NoSuchTopic' }, endpoints });
  assert.equal(missing.status.code, Code.TOPIC_NOT_FOUND);
});

test('send then receive: ids, offsets, system properties and the MD5 digest', async () => {
  const { topic, group } = await topicAndGroup();
  const sent = await client.send(topic, [
    {
      messageId: 'ID-1',
      tag: 'TagA',
      keys: ['k1', 'k2'],
      properties: { a: '1' },
      body: Buffer.from('hello'),
    },
  ]);
  assert.equal(sent.status.code, Code.OK);
  assert.equal(sent.entries[0].message_id, 'ID-1');
  assert.equal(typeof (sent.entries[0].offset ?? 0), 'number');
  const { status, messages } = await client.receiveMessages(group, topic);
  assert.equal(status.code, Code.OK);
  assert.equal(messages.length, 1);
  const m = messages[0];
  assert.equal(m.system_properties.message_id, 'ID-1');
  assert.equal(m.system_properties.tag, 'TagA');
  assert.deepEqual(m.system_properties.keys, ['k1', 'k2']);
  assert.deepEqual(m.user_properties, { a: '1' });
  assert.equal(m.system_properties.delivery_attempt, 1);
  assert.equal(m.system_properties.body_digest.type, 2);
  assert.equal(m.system_properties.body_digest.checksum, '5D41402ABC4B2A76B9719D911017C592');
  assert.ok(m.system_properties.receipt_handle);
  assert.equal(m.body.toString(), 'hello');
  const ack = await client.ack(group, topic, [m.system_properties.receipt_handle]);
  assert.equal(ack.status.code, Code.OK);
});

test('x-vela-accept-digest: CRC32 gets CRC32 digests on receive and pull; other callers keep MD5', async () => {
  const { topic, group } = await topicAndGroup({ queues: 1 });
  await client.send(topic, [{ body: Buffer.from('123456789') }]);
  const vela = new RawClient(client.address);
  try {
    vela.metadata.set('x-vela-accept-digest', 'CRC32');
    const crc = { type: 1, checksum: 'CBF43926' };
    const md5 = { type: 2, checksum: '25F9E794323B453885F5181F1B624D0B' };
    assert.deepEqual((await vela.pull(group, topic, 0, 0)).messages[0].system_properties.body_digest, crc);
    assert.deepEqual((await client.pull(group, topic, 0, 0)).messages[0].system_properties.body_digest, md5);
    const received = await vela.receiveMessages(group, topic);
    assert.deepEqual(received.messages[0].system_properties.body_digest, crc);
  } finally {
    vela.close();
  }
});

test('every send validation rule answers its own code and stores nothing', async () => {
  const { topic } = await topicAndGroup();
  const { topic: fifoTopic } = await topicAndGroup({ fifo: true });
  const cases: [string, string, object[], number][] = [
    ['empty body', topic, [{ body: Buffer.alloc(0) }], Code.MESSAGE_BODY_EMPTY],
    ['body over 4 MiB', topic, [{ body: Buffer.alloc(4 * 1024 * 1024 + 1) }], Code.MESSAGE_BODY_TOO_LARGE],
    ['blank message id', topic, [{ messageId: ' ' }], Code.ILLEGAL_MESSAGE_ID],
    ['tag with |', topic, [{ tag: 'a|b' }], Code.ILLEGAL_MESSAGE_TAG],
    ['tag with a control character', topic, [{ tag: 'a\u0001' }], Code.ILLEGAL_MESSAGE_TAG],
    ['blank key', topic, [{ keys: ['ok', ' '] }], Code.ILLEGAL_MESSAGE_KEY],
    ['reserved property', topic, [{ properties: { UNIQ_KEY: 'x' } }], Code.ILLEGAL_MESSAGE_PROPERTY_KEY],
    [
      'too many properties',
      topic,
      [{ properties: Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`p${i}`, 'v'])) }],
      Code.MESSAGE_PROPERTIES_TOO_LARGE,
    ],
    [
      'properties over 16 KiB',
      topic,
      [{ properties: { big: 'x'.repeat(17 * 1024) } }],
      Code.MESSAGE_PROPERTIES_TOO_LARGE,
    ],
    [
      'FIFO message to a NORMAL topic',
      topic,
      [{ messageType: 2, messageGroup: 'g1' }],
      Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
    ],
    [
      'NORMAL message to a FIFO topic',
      fifoTopic,
      [{ messageType: 1 }],
      Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
    ],
    ['FIFO message without a group', fifoTopic, [{ messageType: 2 }], Code.ILLEGAL_MESSAGE_GROUP],
    [
      'message group too long',
      fifoTopic,
      [{ messageType: 2, messageGroup: 'g'.repeat(65) }],
      Code.ILLEGAL_MESSAGE_GROUP,
    ],
    ['unknown topic', 'NoSuchTopicHere', [{}], Code.TOPIC_NOT_FOUND],
    ['illegal topic name', 'bad topic!', [{}], Code.ILLEGAL_TOPIC],
  ];
  for (const [what, t, msgs, code] of cases) {
    const r = await client.send(t, msgs);
    assert.equal(r.status.code, code, what);
  }
  assert.equal(
    storeOf(running.broker)
      .listQueues()
      .filter((q) => q.topic === topic || q.topic === fifoTopic).length,
    0,
    'nothing was stored',
  );
  const empty = await client.unary('SendMessage', { messages: [] });
  assert.equal(empty.status.code, Code.MESSAGE_CORRUPTED);
});

test('a batch with good and bad messages: per-entry statuses, MULTIPLE_RESULTS, the good one stored', async () => {
  const { topic } = await topicAndGroup();
  const r = await client.send(topic, [{ messageId: 'GOOD' }, { tag: 'x|y' }]);
  assert.equal(r.status.code, Code.MULTIPLE_RESULTS);
  assert.deepEqual(
    r.entries.map((e: { status: { code: number } }) => e.status.code),
    [Code.OK, Code.ILLEGAL_MESSAGE_TAG],
  );
  assert.equal(
    storeOf(running.broker)
      .listQueues()
      .filter((q) => q.topic === topic)
      .reduce((a, q) => a + q.maxOffset, 0),
    1,
  );
});

test('requests without a client id, malformed frames and bad receives get their codes; the broker keeps serving', async () => {
  const { topic, group } = await topicAndGroup();
  const anonymous = new RawClient(client.address, '');
  const r = await anonymous.send(topic, [{}]);
  assert.equal(r.status.code, Code.CLIENT_ID_REQUIRED);
  anonymous.close();

  const garbage = await client.rawUnary('SendMessage', Buffer.from([0x0a, 0x05, 0x01]));
  assert.equal(garbage.error, undefined, 'not a bare gRPC failure');
  assert.equal(garbage.response.status.code, Code.BAD_REQUEST);

  // Unknown groups are created on first use (RocketMQ's autoCreateSubscriptionGroup, the default).
  assert.equal(running.broker.groups.get('NoSuchGroupYet'), undefined);
  assert.equal((await client.receiveMessages('NoSuchGroupYet', topic)).status.code, Code.MESSAGE_NOT_FOUND);
  assert.ok(running.broker.groups.get('NoSuchGroupYet'), 'created on first use');
  assert.equal((await client.receiveMessages(group, 'NoSuchTopic')).status.code, Code.TOPIC_NOT_FOUND);
  assert.equal(
    (await client.receiveMessages(group, topic, { invisibleMs: 10 })).status.code,
    Code.ILLEGAL_INVISIBLE_TIME,
  );
  const sql = await client.receive({
    group: { name: group },
    message_queue: { topic: { name: topic } },
    filter_expression: { type: 2, expression: 'a > 1' },
    invisible_duration: fromMillis(1000),
  });
  assert.equal(sql[0].status.code, Code.ILLEGAL_FILTER_EXPRESSION);

  assert.equal((await client.send(topic, [{ messageId: 'still-ok' }])).status.code, Code.OK);
});

test('receipt handles: forged, foreign, tampered, stale and superseded handles are refused', async () => {
  const a = await topicAndGroup();
  const otherGroup = unique('G');
  await running.broker.groups.upsert(otherGroup, {});
  await client.send(a.topic, [{ messageId: 'H1' }, { messageId: 'H2' }]);
  const { messages } = await client.receiveMessages(a.group, a.topic, { invisibleMs: 30_000 });
  assert.equal(messages.length, 2);
  const [h1, h2] = messages.map(
    (m: { system_properties: { receipt_handle: string } }) => m.system_properties.receipt_handle,
  ) as [string, string];

  const code = async (p: Promise<{ status: { code: number } }>) => (await p).status.code;
  assert.equal(await code(client.ack(a.group, a.topic, ['not-a-handle'])), Code.INVALID_RECEIPT_HANDLE);
  assert.equal(
    await code(client.ack(otherGroup, a.topic, [h1])),
    Code.INVALID_RECEIPT_HANDLE,
    "another group's handle",
  );
  const tampered = h1.slice(0, 5) + (h1[5] === 'A' ? 'B' : 'A') + h1.slice(6);
  assert.equal(await code(client.ack(a.group, a.topic, [tampered])), Code.INVALID_RECEIPT_HANDLE);

  assert.equal(await code(client.ack(a.group, a.topic, [h1])), Code.OK);
  assert.equal(await code(client.ack(a.group, a.topic, [h1])), Code.INVALID_RECEIPT_HANDLE, 'acked twice');
  assert.equal(
    await code(client.changeInvisible(a.group, a.topic, h1, 1000)),
    Code.INVALID_RECEIPT_HANDLE,
    'change after ack',
  );

  const changed = await client.changeInvisible(a.group, a.topic, h2, 30_000);
  assert.equal(changed.status.code, Code.OK);
  assert.notEqual(changed.receipt_handle, h2);
  assert.equal(
    await code(client.ack(a.group, a.topic, [h2])),
    Code.INVALID_RECEIPT_HANDLE,
    'superseded handle',
  );
  assert.equal(await code(client.ack(a.group, a.topic, [changed.receipt_handle])), Code.OK);
  assert.equal((await client.receiveMessages(a.group, a.topic)).messages.length, 0, 'nobody else was acked');
});

test('an expired message is visible again after its deadline, with delivery_attempt 2', async () => {
  const { topic, group } = await topicAndGroup();
  await client.send(topic, [{ messageId: 'EXP' }]);
  // The deadline starts on the broker, between these two instants: a slow answer (a loaded machine)
  // moves `popped` later, not the deadline.
  const asked = Date.now();
  const first = await client.receiveMessages(group, topic, { invisibleMs: 800 });
  const popped = Date.now();
  const handle = first.messages[0].system_properties.receipt_handle;
  const again = await client.receiveMessages(group, topic, { invisibleMs: 5000, pollMs: 3000 });
  const now = Date.now();
  const back = now - popped;
  assert.equal(again.messages.length, 1);
  assert.notEqual(again.messages[0].system_properties.message_id, 'EXP', 'a retry is a new message');
  assert.equal(again.messages[0].user_properties.ORIGIN_MESSAGE_ID, 'EXP');
  assert.equal(again.messages[0].system_properties.delivery_attempt, 2);
  assert.ok(now - asked >= 780, `came back ${now - asked} ms after the receive was asked`);
  assert.ok(back <= 800 + LOADED_SLACK_MS, `came back after ${back} ms`);
  assert.equal(
    (await client.ack(group, topic, [handle])).status.code,
    Code.INVALID_RECEIPT_HANDLE,
    'the expired handle is dead',
  );
  assert.equal(
    (await client.changeInvisible(group, topic, handle, 1000)).status.code,
    Code.INVALID_RECEIPT_HANDLE,
  );
});

test('changeInvisibleDuration(0) makes a message visible at once; the clock restarts from the call', async () => {
  const { topic, group } = await topicAndGroup();
  await client.send(topic, [{ messageId: 'NACK' }]);
  const first = await client.receiveMessages(group, topic, { invisibleMs: 30_000 });
  await client.changeInvisible(group, topic, first.messages[0].system_properties.receipt_handle, 0);
  const again = await client.receiveMessages(group, topic, { pollMs: 1000 });
  assert.equal(again.messages[0].system_properties.delivery_attempt, 2);
});

test('consumers of one group never hold the same message at once and together get all; every group gets all', async () => {
  const { topic, group } = await topicAndGroup();
  const group2 = unique('G');
  await running.broker.groups.upsert(group2, {});
  const total = 120;
  for (let i = 0; i < total; i += 20) {
    await client.send(
      topic,
      Array.from({ length: 20 }, (_, j) => ({ messageId: `M${i + j}` })),
    );
  }
  const seen = new Map<string, number>();
  const consumer = async () => {
    const c = new RawClient(client.address);
    let idle = 0;
    while (idle < 3) {
      const { messages } = await c.receiveMessages(group, topic, { batch: 7, invisibleMs: 30_000 });
      if (messages.length === 0) {
        idle++;
        continue;
      }
      idle = 0;
      for (const m of messages)
        seen.set(m.system_properties.message_id, (seen.get(m.system_properties.message_id) ?? 0) + 1);
      await c.ack(
        group,
        topic,
        messages.map(
          (m: { system_properties: { receipt_handle: string } }) => m.system_properties.receipt_handle,
        ),
      );
    }
    c.close();
  };
  await Promise.all([consumer(), consumer(), consumer()]);
  assert.equal(seen.size, total);
  for (const [id, n] of seen) assert.equal(n, 1, `${id} delivered ${n} times`);

  let other = 0;
  for (;;) {
    const { messages } = await client.receiveMessages(group2, topic, { batch: 32 });
    if (messages.length === 0) break;
    other += messages.length;
  }
  assert.equal(other, total, 'the second group gets every message too');
});

test('a new group on a topic with history starts from the earliest retained message', async () => {
  const { topic } = await topicAndGroup();
  await client.send(topic, [{ messageId: 'OLD-1' }, { messageId: 'OLD-2' }]);
  const late = unique('G');
  await running.broker.groups.upsert(late, {});
  const { messages } = await client.receiveMessages(late, topic);
  assert.deepEqual(
    messages.map((m: { system_properties: { message_id: string } }) => m.system_properties.message_id).sort(),
    ['OLD-1', 'OLD-2'],
  );
});

test('long polling answers as soon as a message arrives, and MESSAGE_NOT_FOUND at the deadline', async () => {
  const { topic, group } = await topicAndGroup();
  const t0 = Date.now();
  const empty = await client.receiveMessages(group, topic, { pollMs: 400 });
  assert.equal(empty.status.code, Code.MESSAGE_NOT_FOUND);
  assert.ok(Date.now() - t0 >= 380, 'waited for the poll time');
  const t1 = Date.now();
  const waiting = client.receiveMessages(group, topic, { pollMs: 5000 });
  await sleep(200);
  await client.send(topic, [{ messageId: 'LATE' }]);
  const got = await waiting;
  assert.equal(got.messages.length, 1);
  assert.ok(Date.now() - t1 < 1500, 'answered on arrival, not at the deadline');
});

test('tag filters: only matching messages are delivered', async () => {
  const { topic, group } = await topicAndGroup();
  await client.send(topic, [{ tag: 'A' }, { tag: 'B' }, { tag: 'C' }, {}]);
  const { messages } = await client.receiveMessages(group, topic, { tag: 'A||C' });
  assert.deepEqual(
    messages.map((m: { system_properties: { tag: string } }) => m.system_properties.tag).sort(),
    ['A', 'C'],
  );
});

test('a terminating push consumer releases its auto-renewed messages at once', async () => {
  const { topic, group } = await topicAndGroup();
  await client.send(topic, [{ messageId: 'PUSH-1' }]);
  const pusher = new RawClient(client.address);
  const frames = await pusher.receive({
    group: { name: group },
    message_queue: { topic: { name: topic }, id: -1 },
    filter_expression: { type: 1, expression: '*' },
    batch_size: 32,
    auto_renew: true,
    long_polling_timeout: fromMillis(0),
  });
  assert.equal(frames.filter((f) => f.message).length, 1);
  assert.equal(
    (await client.receiveMessages(group, topic)).messages.length,
    0,
    'invisible while the push consumer has it',
  );
  await pusher.unary('NotifyClientTermination', { group: { name: group } });
  pusher.close();
  const again = await client.receiveMessages(group, topic, { pollMs: 1000 });
  assert.equal(again.messages.length, 1);
  assert.equal(again.messages[0].system_properties.delivery_attempt, 2);
});

test('in-flight state survives a restart: handles stay valid, nothing comes back early', async () => {
  const d = tempDir();
  try {
    let b = await startBroker({
      dataDir: d.path,
      grpcPort: 0,
      httpPort: 0,
      remotingPort: 0,
      consume: { minInvisibleMs: 100 },
    });
    await b.broker.topics.upsert('RestartTopic', {});
    await b.broker.groups.upsert('RestartGroup', {});
    let c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    await c.send('RestartTopic', [{ messageId: 'R1' }, { messageId: 'R2' }]);
    const asked = Date.now(); // the deadline starts after this (broker-side, when it hands R1, R2 out)
    const got = await c.receiveMessages('RestartGroup', 'RestartTopic', { invisibleMs: 2500 });
    assert.equal(got.messages.length, 2);
    const byId = new Map(
      got.messages.map((m: { system_properties: { message_id: string; receipt_handle: string } }) => [
        m.system_properties.message_id,
        m.system_properties.receipt_handle,
      ]),
    );
    c.close();
    await b.close();

    b = await startBroker({
      dataDir: d.path,
      grpcPort: 0,
      httpPort: 0,
      remotingPort: 0,
      consume: { minInvisibleMs: 100 },
    });
    c = new RawClient(`127.0.0.1:${b.grpcPort}`);
    assert.equal(
      (await c.ack('RestartGroup', 'RestartTopic', [byId.get('R1')!])).status.code,
      Code.OK,
      'a handle from before the restart',
    );
    const early = await c.receiveMessages('RestartGroup', 'RestartTopic', { pollMs: 0 });
    assert.equal(early.messages.length, 0, 'R2 is still in flight');
    const back = await c.receiveMessages('RestartGroup', 'RestartTopic', { pollMs: 5000 });
    assert.equal(back.messages.length, 1);
    assert.equal(back.messages[0].user_properties.ORIGIN_MESSAGE_ID, 'R2');
    assert.equal(back.messages[0].system_properties.delivery_attempt, 2);
    assert.ok(Date.now() - asked >= 2500, 'not before its deadline');
    c.close();
    await b.close();
  } finally {
    d.cleanup();
  }
});
