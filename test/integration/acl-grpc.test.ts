/**
 * Access control on the gRPC wire, spoken raw: what every RPC answers without a valid signature
 * (UNAUTHORIZED in the response's status, gRPC OK, as the RocketMQ proxy answers), outside the
 * user's rights (FORBIDDEN), the forms of signature each official client sends, the clock window with
 * the local-time stamps of the Java, Go and Python clients, and access control off by default.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { fromMillis } from '../../src/protocol/codec.js';
import { RawClient, startTestBroker } from './raw-client.js';
import type { RunningBroker } from '../../src/server.js';
import { uniqueName } from '../support/harness.js';

const UNAUTHORIZED = 40100;
const FORBIDDEN = 40300;
const OK = 20000;
const USER = { ak: 'grpc-user', sk: 'grpc-user-secret' };

/** `yyyyMMddTHHmmssZ` of the wall clock shifted by `offsetMs`, read in UTC (a client in another zone). */
function stamp(offsetMs = 0): string {
  return new Date(Date.now() + offsetMs)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
}

/** Sign the client's headers; `form` picks a client's spelling. */
function sign(
  c: RawClient,
  opts: { ak?: string; sk?: string; offsetMs?: number; form?: 'java' | 'go' } = {},
): void {
  const dateTime = stamp(opts.offsetMs);
  const hex = createHmac('sha1', opts.sk ?? USER.sk)
    .update(dateTime)
    .digest('hex');
  const credential = opts.form === 'go' ? `${opts.ak ?? USER.ak}//Rocketmq` : (opts.ak ?? USER.ak);
  const signature = opts.form === 'go' ? hex : hex.toUpperCase();
  c.metadata.set('x-mq-date-time', dateTime);
  c.metadata.set(
    'authorization',
    `MQv2-HMAC-SHA1 Credential=${credential}, SignedHeaders=x-mq-date-time, Signature=${signature}`,
  );
}

describe('ACL on the gRPC wire', () => {
  let running: RunningBroker;
  let close: () => Promise<void>;
  let endpoint: string;
  let topic: string;
  let group: string;
  let otherTopic: string;
  let otherGroup: string;
  const clients: RawClient[] = [];
  const client = () => {
    const c = new RawClient(endpoint);
    clients.push(c);
    return c;
  };

  before(async () => {
    ({ running, close } = await startTestBroker({ aclEnabled: true }));
    endpoint = `127.0.0.1:${running.grpcPort}`;
    const b = running.broker;
    topic = uniqueName('AclT');
    group = uniqueName('AclG');
    otherTopic = uniqueName('OtherT');
    otherGroup = uniqueName('OtherG');
    for (const t of [topic, otherTopic]) await b.topics.upsert(t, {});
    for (const g of [group, otherGroup]) await b.groups.upsert(g, {});
    await b.acl.registry.createUser(USER.ak, USER.sk);
    await b.acl.registry.upsertAcl({
      subject: `User:${USER.ak}`,
      resources: [`Topic:${topic}`, `Group:${group}`],
      actions: ['Pub', 'Sub'],
      decision: 'Allow',
    });
  });
  after(async () => {
    for (const c of clients) c.close();
    await close();
  });

  const message = (t: string) => ({
    topic: { name: t },
    body: Buffer.from('x'),
    system_properties: {
      message_id: `ID${Math.random().toString(16).slice(2)}`,
      message_type: 1,
      body_encoding: 1,
    },
  });
  const UNARY: [string, (t: string, g: string) => object][] = [
    ['QueryRoute', (t) => ({ topic: { name: t } })],
    ['SendMessage', (t) => ({ messages: [message(t)] })],
    ['QueryAssignment', (t, g) => ({ topic: { name: t }, group: { name: g } })],
    ['Heartbeat', (_t, g) => ({ group: { name: g }, client_type: 3 })],
    [
      'AckMessage',
      (t, g) => ({ topic: { name: t }, group: { name: g }, entries: [{ receipt_handle: 'x' }] }),
    ],
    [
      'ChangeInvisibleDuration',
      (t, g) => ({
        topic: { name: t },
        group: { name: g },
        receipt_handle: 'x',
        invisible_duration: fromMillis(1000),
      }),
    ],
    [
      'ForwardMessageToDeadLetterQueue',
      (t, g) => ({ topic: { name: t }, group: { name: g }, receipt_handle: 'x' }),
    ],
    ['NotifyClientTermination', (_t, g) => ({ group: { name: g } })],
    [
      'UpdateOffset',
      (t, g) => ({ group: { name: g }, message_queue: { topic: { name: t }, id: 0 }, offset: 0 }),
    ],
    ['GetOffset', (t, g) => ({ group: { name: g }, message_queue: { topic: { name: t }, id: 0 } })],
    ['QueryOffset', (t) => ({ message_queue: { topic: { name: t }, id: 0 } })],
    ['EndTransaction', (t) => ({ topic: { name: t }, message_id: 'x', transaction_id: 'x' })],
    ['RecallMessage', (t) => ({ topic: { name: t }, recall_handle: 'x' })],
  ];
  const receiveRequest = (t: string, g: string) => ({
    group: { name: g },
    message_queue: { topic: { name: t }, id: 0 },
    filter_expression: { type: 1, expression: '*' },
    batch_size: 1,
    invisible_duration: fromMillis(10_000),
    long_polling_timeout: fromMillis(100),
  });

  test('every RPC without a signature: UNAUTHORIZED in its status (gRPC OK)', async () => {
    const c = client();
    for (const [method, req] of UNARY) {
      const res = await c.unary(method, req(topic, group));
      assert.equal(res.status?.code, UNAUTHORIZED, `${method}: ${JSON.stringify(res.status)}`);
      assert.match(res.status.message, /not signed/);
    }
    const frames = await c.receive(receiveRequest(topic, group));
    assert.equal(frames[0].status.code, UNAUTHORIZED, 'ReceiveMessage: one status frame');
    assert.equal((await c.pull(group, topic, 0, 0)).status.code, UNAUTHORIZED, 'PullMessage');
    const { reply, end } = await c.telemetry({ client_type: 1, publishing: { topics: [{ name: topic }] } });
    end();
    assert.equal(reply.status.code, UNAUTHORIZED, 'Telemetry: a status reply, then the stream ends');
  });

  test('a wrong secret, an unknown user, a disabled user, a malformed header: UNAUTHORIZED', async () => {
    const c = client();
    const route = () => c.unary('QueryRoute', { topic: { name: topic } });
    sign(c, { sk: 'wrong' });
    assert.equal((await route()).status.code, UNAUTHORIZED);
    sign(c, { ak: 'nobody' });
    assert.equal((await route()).status.code, UNAUTHORIZED);
    await running.broker.acl.registry.updateUser(USER.ak, { userStatus: 'disable' });
    sign(c);
    try {
      assert.match((await route()).status.message, /is disabled/);
    } finally {
      await running.broker.acl.registry.updateUser(USER.ak, { userStatus: 'enable' });
    }
    assert.equal((await route()).status.code, OK);
    c.metadata.set('authorization', 'MQv2-HMAC-SHA1 Credential=, SignedHeaders=x-mq-date-time, Signature=00');
    assert.match((await route()).status.message, /no access key/, 'Go and Python without credentials');
    c.metadata.set('authorization', 'Basic Z3JwYzpzZWNyZXQ=');
    assert.equal((await route()).status.code, UNAUTHORIZED);
    sign(c);
    c.metadata.remove('x-mq-date-time');
    assert.match((await route()).status.message, /x-mq-date-time header is missing/);
  });

  test('every official client’s form of signature is accepted', async () => {
    const c = client();
    for (const form of ['java', 'go'] as const) {
      sign(c, { form });
      assert.equal((await c.unary('QueryRoute', { topic: { name: topic } })).status.code, OK, form);
    }
  });

  test('outside the user’s rights: FORBIDDEN, per RPC; within them the RPC runs', async () => {
    const c = client();
    sign(c);
    for (const [method, req] of UNARY) {
      // Heartbeat and termination of a producer name no group: nothing to refuse.
      const res = await c.unary(method, req(otherTopic, otherGroup));
      assert.equal(
        res.status?.code,
        FORBIDDEN,
        `${method} on another topic/group: ${JSON.stringify(res.status)}`,
      );
    }
    const frames = await c.receive(receiveRequest(otherTopic, group));
    assert.equal(frames[0].status.code, FORBIDDEN, 'ReceiveMessage of another topic');
    const own = await c.receive(receiveRequest(topic, group));
    assert.notEqual(own[0].status.code, FORBIDDEN, 'ReceiveMessage within the rights');
    const sent = await c.unary('SendMessage', { messages: [message(topic)] });
    assert.equal(sent.status.code, OK);
    const mixed = await c.unary('SendMessage', { messages: [message(topic), message(otherTopic)] });
    assert.equal(mixed.status.code, FORBIDDEN, 'every topic of a batch is checked');
  });

  test('Telemetry: the stream is authenticated once; each Settings is authorized', async () => {
    const c = client();
    sign(c);
    const refused = await c.telemetry({
      client_type: 3,
      subscription: { group: { name: group }, subscriptions: [{ topic: { name: otherTopic } }] },
    });
    refused.end();
    assert.equal(refused.reply.status.code, FORBIDDEN, 'Sub on every subscribed topic');
    const allowed = await c.telemetry({
      client_type: 3,
      subscription: { group: { name: group }, subscriptions: [{ topic: { name: topic } }] },
    });
    allowed.end();
    assert.ok(allowed.reply.settings, 'Settings reply within the rights');
  });

  test('clock: a stale date-time is refused; local time off by a time-zone offset is accepted', async () => {
    const c = client();
    const route = () => c.unary('QueryRoute', { topic: { name: topic } });
    sign(c, { offsetMs: -15 * 3600_000 }); // west of every time zone
    const stale = await route();
    assert.equal(stale.status.code, UNAUTHORIZED);
    assert.match(stale.status.message, /900 min behind the broker's clock/);
    sign(c, { offsetMs: 5.5 * 3600_000 + 20_000 }); // a Java client in India
    assert.equal((await route()).status.code, OK);
    sign(c, { offsetMs: -7 * 3600_000 }); // a Go client in California (summer)
    assert.equal((await route()).status.code, OK);
    sign(c, { offsetMs: 3 * 24 * 3600_000 });
    assert.equal((await route()).status.code, UNAUTHORIZED, 'days off');
  });
});

describe('ACL settings', () => {
  test('off by default: unsigned requests and any authorization header are served', async () => {
    const { running, close } = await startTestBroker();
    const c = new RawClient(`127.0.0.1:${running.grpcPort}`);
    try {
      const topic = uniqueName('OpenT');
      await running.broker.topics.upsert(topic, {});
      assert.equal((await c.unary('QueryRoute', { topic: { name: topic } })).status.code, OK);
      c.metadata.set(
        'authorization',
        'MQv2-HMAC-SHA1 Credential=yourAccessKey, SignedHeaders=x-mq-date-time, Signature=00',
      );
      assert.equal((await c.unary('QueryRoute', { topic: { name: topic } })).status.code, OK);
    } finally {
      c.close();
      await close();
    }
  });

  test('timeZoneOffsets off: only the skew is allowed', async () => {
    const { running, close } = await startTestBroker({
      aclEnabled: true,
      aclInitUser: `${USER.ak}:${USER.sk}`,
      acl: { timeZoneOffsets: false, clockSkewMs: 60_000 },
    });
    const c = new RawClient(`127.0.0.1:${running.grpcPort}`);
    try {
      const topic = uniqueName('StrictT');
      await running.broker.topics.upsert(topic, {});
      sign(c, { offsetMs: 30_000 });
      assert.equal((await c.unary('QueryRoute', { topic: { name: topic } })).status.code, OK);
      sign(c, { offsetMs: 8 * 3600_000 });
      assert.equal((await c.unary('QueryRoute', { topic: { name: topic } })).status.code, UNAUTHORIZED);
      sign(c, { offsetMs: -80 * 60_000 });
      const stale = await c.unary('QueryRoute', { topic: { name: topic } });
      assert.equal(stale.status.code, UNAUTHORIZED);
      assert.match(stale.status.message, /80 min behind the broker's clock \(allowed: 60 s\)/);
    } finally {
      c.close();
      await close();
    }
  });
});
