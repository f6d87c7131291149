/**
 * The Remoting endpoint driven with raw frames: framing, dispatch, the name-server role, and the
 * tier-1 client codes' behaviour that clients rely on.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RequestCode, ResponseCode } from '../../src/remoting/codes.js';
import {
  decodeOffsetMessageId,
  decodeProperties,
  encodeProperties,
} from '../../src/remoting/message-codec.js';
import { startTestBroker, uniqueName, closeAll, use, waitFor, type TestBroker } from '../support/harness.js';
import { RawRemotingClient } from './raw-client.js';
import { MAX_INFLIGHT_PER_CONNECTION } from '../../src/remoting/remoting-server.js';

let b: TestBroker;
let c: RawRemotingClient;
const port = () => b.running.remotingPort;

before(async () => {
  b = use(await startTestBroker());
  c = use(await RawRemotingClient.connect(port()));
});
after(closeAll);

async function topicAndGroup(queues = 4): Promise<{ topic: string; group: string }> {
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await b.running.broker.topics.upsert(topic, { readQueueNums: queues, writeQueueNums: queues });
  await b.running.broker.groups.upsert(group, {});
  return { topic, group };
}

function send(topic: string, queueId: number, body: string, props: Record<string, string> = {}) {
  return c.request(
    RequestCode.SEND_MESSAGE_V2,
    {
      a: 'P',
      b: topic,
      c: 'TBW102',
      d: 4,
      e: queueId,
      f: 0,
      g: Date.now(),
      h: 0,
      i: encodeProperties(props),
      j: 0,
      k: 'false',
    },
    Buffer.from(body),
  );
}

/** Decode a PULL_MESSAGE body into [queueOffset, body, properties, topic, reconsumeTimes, logPosition]. */
function decodePulled(body: Buffer | undefined) {
  const out: {
    offset: number;
    body: string;
    props: Record<string, string>;
    topic: string;
    reconsumeTimes: number;
    logPosition: number;
  }[] = [];
  let p = 0;
  while (body && p < body.length) {
    const total = body.readInt32BE(p);
    const offset = Number(body.readBigInt64BE(p + 20));
    const logPosition = Number(body.readBigInt64BE(p + 28));
    const reconsumeTimes = body.readInt32BE(p + 72);
    const bodyLen = body.readInt32BE(p + 84);
    const text = body.toString('utf8', p + 88, p + 88 + bodyLen);
    const topicLen = body[p + 88 + bodyLen]!;
    const topic = body.toString('utf8', p + 89 + bodyLen, p + 89 + bodyLen + topicLen);
    const pl = body.readInt16BE(p + 89 + bodyLen + topicLen);
    const props = decodeProperties(
      body.toString('utf8', p + 91 + bodyLen + topicLen, p + 91 + bodyLen + topicLen + pl),
    );
    out.push({ offset, body: text, props, topic, reconsumeTimes, logPosition });
    p += total;
  }
  return out;
}

function pull(
  group: string,
  topic: string,
  queueId: number,
  queueOffset: number,
  opts: { suspendMs?: number; sub?: string; commitOffset?: number; client?: RawRemotingClient } = {},
) {
  let sysFlag = 0x4;
  if (opts.suspendMs) sysFlag |= 0x2;
  if (opts.commitOffset !== undefined) sysFlag |= 0x1;
  return (opts.client ?? c).request(
    RequestCode.PULL_MESSAGE,
    {
      consumerGroup: group,
      topic,
      queueId,
      queueOffset,
      maxMsgNums: 32,
      sysFlag,
      commitOffset: opts.commitOffset ?? 0,
      suspendTimeoutMillis: opts.suspendMs ?? 0,
      subscription: opts.sub ?? '*',
      subVersion: 0,
      expressionType: 'TAG',
    },
    undefined,
    { timeoutMs: 10_000 },
  );
}

describe('Remoting endpoint: frames and dispatch', () => {
  test('an unknown code is answered REQUEST_CODE_NOT_SUPPORTED with its opaque; a binary header gets a JSON answer', async () => {
    const r = await c.request(9999, {}, undefined, { binary: true });
    assert.equal(r.code, ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
    assert.match(r.remark ?? '', /9999 not supported/);
  });

  test('a one-way request is never answered', async () => {
    const opaque = c.oneway(9999);
    const r = await c.request(9998); // answered after the one-way one was processed
    assert.equal(r.code, ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
    assert.equal(c.waiting(opaque), false);
    assert.ok(!c.pushed.some((p) => p.opaque === opaque));
  });

  test('a frame over 16 MiB closes that connection only', async () => {
    const bad = use(await RawRemotingClient.connect(port()));
    const head = Buffer.alloc(8);
    head.writeUInt32BE(17 * 1024 * 1024, 0);
    bad.writeRaw(head);
    await bad.closed;
    const r = await c.request(9999);
    assert.equal(r.code, ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
  });

  test('a malformed header closes the connection', async () => {
    const bad = use(await RawRemotingClient.connect(port()));
    const f = Buffer.alloc(12);
    f.writeUInt32BE(8, 0);
    f.writeUInt32BE(4, 4);
    f.write('{x:1', 8);
    bad.writeRaw(f);
    await bad.closed;
  });

  test('a connection with too many requests in progress is answered SYSTEM_BUSY, others are not', async () => {
    const { topic, group } = await topicAndGroup(1);
    const busy = use(await RawRemotingClient.connect(port()));
    const poll = {
      consumerGroup: group,
      topic,
      queueId: 0,
      queueOffset: 0,
      maxMsgNums: 32,
      sysFlag: 0x6,
      suspendTimeoutMillis: 20_000,
      subscription: '*',
      expressionType: 'TAG',
    };
    for (let i = 0; i < MAX_INFLIGHT_PER_CONNECTION; i++) busy.fire(RequestCode.PULL_MESSAGE, poll);
    const over = await busy.request(RequestCode.PULL_MESSAGE, poll);
    assert.equal(over.code, ResponseCode.SYSTEM_BUSY);
    assert.match(over.remark ?? '', /OVERLOAD/);
    assert.equal((await c.request(9999)).code, ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
    await busy.close(); // its parked pulls end with it
  });

  test('a missing required header field is a clear error', async () => {
    const r = await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {});
    assert.equal(r.code, ResponseCode.INVALID_PARAMETER);
    assert.match(r.remark ?? '', /"topic" is required/);
  });
});

describe('Remoting endpoint: name server', () => {
  test('routes point at the endpoint itself; unknown topics are TOPIC_NOT_EXIST', async () => {
    const { topic, group } = await topicAndGroup(3);
    const r = await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic });
    assert.equal(r.code, ResponseCode.SUCCESS);
    const route = JSON.parse(r.body!.toString());
    assert.deepEqual(route.brokerDatas[0].brokerAddrs, { '0': `127.0.0.1:${port()}` });
    assert.equal(route.brokerDatas[0].brokerName, 'broker-0');
    assert.deepEqual(
      [route.queueDatas[0].readQueueNums, route.queueDatas[0].writeQueueNums, route.queueDatas[0].perm],
      [3, 3, 6],
    );
    const missing = await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: uniqueName('none') });
    assert.equal(missing.code, ResponseCode.TOPIC_NOT_EXIST);
    assert.equal(
      (await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: 'TBW102' })).code,
      ResponseCode.TOPIC_NOT_EXIST,
    );
    // A group's retry topic exists as soon as the group does: one queue per delay level.
    const retry = await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: `%RETRY%${group}` });
    assert.equal(retry.code, ResponseCode.SUCCESS);
    assert.equal(JSON.parse(retry.body!.toString()).queueDatas[0].readQueueNums, 18);
  });

  test('cluster info names this broker at the endpoint address', async () => {
    const r = await c.request(RequestCode.GET_BROKER_CLUSTER_INFO);
    const info = JSON.parse(r.body!.toString());
    assert.deepEqual(info.clusterAddrTable, { DefaultCluster: ['broker-0'] });
    assert.equal(info.brokerAddrTable['broker-0'].brokerAddrs['0'], `127.0.0.1:${port()}`);
  });
});

describe('Remoting endpoint: send and pull', () => {
  test('a send keeps the chosen queue, the UNIQ_KEY, tag, keys and properties; its msgId is an offset id of this endpoint', async () => {
    const { topic, group } = await topicAndGroup();
    const r = await send(topic, 2, 'hello', {
      UNIQ_KEY: 'AB12',
      TAGS: 'TagA',
      KEYS: 'k1 k2',
      WAIT: 'true',
      color: 'red',
    });
    assert.equal(r.code, ResponseCode.SUCCESS, r.remark);
    assert.equal(r.extFields.queueId, '2');
    assert.equal(r.extFields.queueOffset, '0');
    const id = decodeOffsetMessageId(r.extFields.msgId!);
    assert.equal(id?.address, `127.0.0.1:${port()}`);
    const p = await pull(group, topic, 2, 0);
    assert.equal(p.code, ResponseCode.SUCCESS);
    assert.equal(p.extFields.nextBeginOffset, '1');
    const [m] = decodePulled(p.body);
    assert.equal(m!.body, 'hello');
    assert.equal(m!.logPosition, id!.logPosition);
    assert.deepEqual(m!.props, { color: 'red', TAGS: 'TagA', KEYS: 'k1 k2', UNIQ_KEY: 'AB12' });
    // The UNIQ_KEY is the message id the broker knows the message by (queryMsgById, gRPC).
    const found = await b.running.broker.findMessageById('AB12');
    assert.equal(found[0]?.body.toString(), 'hello');
  });

  test('a send to an unknown topic is TOPIC_NOT_EXIST; reserved properties are refused; delays wait', async () => {
    const { topic } = await topicAndGroup();
    assert.equal(
      (await send(uniqueName('none'), 0, 'x', { UNIQ_KEY: 'A' })).code,
      ResponseCode.TOPIC_NOT_EXIST,
    );
    const reserved = await send(topic, 0, 'x', { UNIQ_KEY: 'A', REAL_TOPIC: 'x' });
    assert.equal(reserved.code, ResponseCode.MESSAGE_ILLEGAL);
    const delayed = await send(topic, 0, 'x', { UNIQ_KEY: 'A', DELAY: '3' });
    assert.equal(delayed.code, ResponseCode.SUCCESS);
    assert.equal(b.running.broker.queueState(topic, 0).maxOffset, 0, 'level 3 waits 10 s on the timer');
    assert.equal((await b.running.broker.timer.status(topic)).scheduled, 1);
    const badQueue = await send(topic, 9, 'x', { UNIQ_KEY: 'A' });
    assert.equal(badQueue.code, ResponseCode.INVALID_PARAMETER);
  });

  test('tag filters apply; nothing matched answers PULL_RETRY_IMMEDIATELY with the offset moved on', async () => {
    const { topic, group } = await topicAndGroup(1);
    await send(topic, 0, 'a', { UNIQ_KEY: 'A1', TAGS: 'A' });
    await send(topic, 0, 'b', { UNIQ_KEY: 'B1', TAGS: 'B' });
    const p = await pull(group, topic, 0, 0, { sub: 'B' });
    assert.deepEqual(
      decodePulled(p.body).map((m) => m.body),
      ['b'],
    );
    const none = await pull(group, topic, 0, 0, { sub: 'C' });
    assert.equal(none.code, ResponseCode.PULL_RETRY_IMMEDIATELY);
    assert.equal(none.extFields.nextBeginOffset, '2');
  });

  test('a suspended pull waits for the next message and answers at once when it arrives', async () => {
    const { topic, group } = await topicAndGroup(1);
    const t0 = Date.now();
    const waiting = pull(group, topic, 0, 0, { suspendMs: 8000 });
    await new Promise((r) => setTimeout(r, 200));
    await send(topic, 0, 'late', { UNIQ_KEY: 'L1' });
    const p = await waiting;
    assert.equal(p.code, ResponseCode.SUCCESS);
    assert.ok(Date.now() - t0 < 4000, 'answered on arrival, not at the end of the poll');
    const empty = await pull(group, topic, 0, 1, { suspendMs: 300 });
    assert.equal(empty.code, ResponseCode.PULL_NOT_FOUND);
    assert.equal(empty.extFields.nextBeginOffset, '1');
  });

  test('a push consumer without a heartbeat subscription gets SUBSCRIPTION_NOT_EXIST; an unknown group is created on first use (autoCreateGroups), or SUBSCRIPTION_GROUP_NOT_EXIST without it', async () => {
    const { topic, group } = await topicAndGroup(1);
    const r = await c.request(RequestCode.PULL_MESSAGE, {
      consumerGroup: group,
      topic,
      queueId: 0,
      queueOffset: 0,
      maxMsgNums: 32,
      sysFlag: 0,
    });
    assert.equal(r.code, ResponseCode.SUBSCRIPTION_NOT_EXIST);
    const newGroup = uniqueName('newgroup');
    const g = await pull(newGroup, topic, 0, 0);
    assert.notEqual(g.code, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST);
    assert.ok(b.running.broker.groups.get(newGroup), 'created on first use, as RocketMQ does by default');
    const strict = use(await startTestBroker({ autoCreateGroups: false }));
    const sc = use(await RawRemotingClient.connect(strict.running.remotingPort));
    await strict.running.broker.topics.upsert(topic, {});
    const r2 = await pull(uniqueName('nogroup'), topic, 0, 0, { client: sc });
    assert.equal(r2.code, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST);
  });

  test('offsets: commit, query, QUERY_NOT_FOUND, min/max, search by time; a reset answers PULL_OFFSET_MOVED', async () => {
    const { topic, group } = await topicAndGroup(1);
    const q = (g: string) =>
      c.request(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: g, topic, queueId: 0 });
    assert.equal((await q(group)).code, ResponseCode.QUERY_NOT_FOUND, 'empty queue, no offset');
    for (let i = 0; i < 3; i++) await send(topic, 0, `m${i}`, { UNIQ_KEY: `O${i}` });
    assert.equal(
      (await q(group)).extFields.offset,
      '0',
      'RocketMQ: a new group starts at 0 while message 0 is there',
    );
    const u = await c.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
      consumerGroup: group,
      topic,
      queueId: 0,
      commitOffset: 2,
    });
    assert.equal(u.code, ResponseCode.SUCCESS);
    assert.equal((await q(group)).extFields.offset, '2');
    c.oneway(RequestCode.UPDATE_CONSUMER_OFFSET, {
      consumerGroup: group,
      topic,
      queueId: 0,
      commitOffset: 3,
    });
    await waitFor(async () => (await q(group)).extFields.offset === '3', 2000, 'the one-way commit');
    assert.equal((await c.request(RequestCode.GET_MAX_OFFSET, { topic, queueId: 0 })).extFields.offset, '3');
    assert.equal((await c.request(RequestCode.GET_MIN_OFFSET, { topic, queueId: 0 })).extFields.offset, '0');
    const search = await c.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {
      topic,
      queueId: 0,
      timestamp: Date.now() + 60_000,
    });
    assert.equal(search.extFields.offset, '3');
    const pulled = await pull(group, topic, 0, 3, { commitOffset: 3 });
    assert.equal(pulled.code, ResponseCode.PULL_NOT_FOUND);

    await b.running.broker.resetOffset(group, topic, { offset: 1 });
    const moved = await pull(group, topic, 0, 3);
    assert.equal(moved.code, ResponseCode.PULL_OFFSET_MOVED);
    assert.equal(moved.extFields.nextBeginOffset, '1');
    assert.equal((await q(group)).extFields.offset, '1');
    const again = await pull(group, topic, 0, 1);
    assert.deepEqual(
      decodePulled(again.body).map((m) => m.body),
      ['m1', 'm2'],
    );
    const past = await pull(group, topic, 0, 99);
    assert.equal(past.code, ResponseCode.PULL_OFFSET_MOVED);
    assert.equal(past.extFields.nextBeginOffset, '3');
  });
});

function heartbeat(
  client: RawRemotingClient,
  clientID: string,
  group: string,
  topic: string,
  model = 'CLUSTERING',
) {
  return client.request(
    RequestCode.HEART_BEAT,
    {},
    Buffer.from(
      JSON.stringify({
        clientID,
        producerDataSet: [],
        consumerDataSet: [
          {
            groupName: group,
            consumeType: 'CONSUME_PASSIVELY',
            messageModel: model,
            consumeFromWhere: 'CONSUME_FROM_LAST_OFFSET',
            subscriptionDataSet: [
              {
                topic,
                subString: 'TagA',
                expressionType: 'TAG',
                subVersion: 1,
                tagsSet: ['TagA'],
                codeSet: [],
              },
            ],
            unitMode: false,
          },
        ],
      }),
    ),
  );
}

describe('Remoting endpoint: consumer groups', () => {
  test('heartbeats register consumers; members are told when the group changes', async () => {
    const { topic, group } = await topicAndGroup(1);
    const c1 = use(await RawRemotingClient.connect(port()));
    const c2 = use(await RawRemotingClient.connect(port()));
    assert.equal((await heartbeat(c1, 'client-b', group, topic)).code, ResponseCode.SUCCESS);
    const list = () => c1.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: group });
    assert.deepEqual(JSON.parse((await list()).body!.toString()), { consumerIdList: ['client-b'] });

    await heartbeat(c2, 'client-a', group, topic);
    await waitFor(
      () => c1.pushed.some((p) => p.code === RequestCode.NOTIFY_CONSUMER_IDS_CHANGED),
      2000,
      'a notification',
    );
    const note = c1.pushed.find((p) => p.code === RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)!;
    assert.equal(note.extFields.consumerGroup, group);
    assert.equal(note.flag & 2, 2, 'one-way');
    assert.deepEqual(JSON.parse((await list()).body!.toString()).consumerIdList, ['client-a', 'client-b']);

    // The heartbeat's subscription is the one a pull without its own applies (TagA only).
    await send(topic, 0, 'x', { UNIQ_KEY: 'X1', TAGS: 'TagB' });
    const noSub = await c1.request(RequestCode.PULL_MESSAGE, {
      consumerGroup: group,
      topic,
      queueId: 0,
      queueOffset: 0,
      maxMsgNums: 32,
      sysFlag: 0,
    });
    assert.equal(noSub.code, ResponseCode.PULL_RETRY_IMMEDIATELY);

    const before = c1.pushed.length;
    await c2.close();
    await waitFor(() => c1.pushed.length > before, 2000, 'a notification after the channel closed');
    assert.deepEqual(JSON.parse((await list()).body!.toString()).consumerIdList, ['client-b']);
    await c1.request(RequestCode.UNREGISTER_CLIENT, { clientID: 'client-b', consumerGroup: group });
    assert.equal((await list()).code, ResponseCode.SYSTEM_ERROR, 'no consumer left');
  });

  test('queue locks: one holder per queue, renewable, released by unlock', async () => {
    const { topic, group } = await topicAndGroup(2);
    const lock = (clientId: string, code: number = RequestCode.LOCK_BATCH_MQ) =>
      c.request(
        code,
        {},
        Buffer.from(
          JSON.stringify({
            consumerGroup: group,
            clientId,
            onlyThisBroker: true,
            mqSet: [
              { topic, brokerName: 'broker-0', queueId: 0 },
              { topic, brokerName: 'broker-0', queueId: 1 },
            ],
          }),
        ),
      );
    const first = JSON.parse((await lock('A')).body!.toString());
    assert.equal(first.lockOKMQSet.length, 2);
    assert.equal(JSON.parse((await lock('B')).body!.toString()).lockOKMQSet.length, 0);
    assert.equal(JSON.parse((await lock('A')).body!.toString()).lockOKMQSet.length, 2, 'renewed');
    await lock('A', RequestCode.UNLOCK_BATCH_MQ);
    assert.equal(JSON.parse((await lock('B')).body!.toString()).lockOKMQSet.length, 2);
  });

  test('SQL92 subscriptions are refused with SUBSCRIPTION_PARSE_FAILED', async () => {
    const { topic, group } = await topicAndGroup(1);
    const r = await c.request(
      RequestCode.HEART_BEAT,
      {},
      Buffer.from(
        JSON.stringify({
          clientID: 'sql',
          consumerDataSet: [
            {
              groupName: group,
              subscriptionDataSet: [{ topic, subString: 'a > 1', expressionType: 'SQL92' }],
            },
          ],
        }),
      ),
    );
    assert.equal(r.code, ResponseCode.SUBSCRIPTION_PARSE_FAILED);
  });
});

describe('Remoting endpoint: send back, retry topic, DLQ', () => {
  test('a failed message waits in %RETRY%<group> until due, then goes to %DLQ%<group> after maxReconsumeTimes', async () => {
    const { topic, group } = await topicAndGroup(1);
    await b.running.broker.groups.upsert(group, { retryPolicy: { type: 'CUSTOMIZED', next: [300] } });
    await send(topic, 0, 'fail me', { UNIQ_KEY: 'F1', TAGS: 'TagA' });
    const [m] = decodePulled((await pull(group, topic, 0, 0)).body);
    const back = (offset: number, delayLevel = 0, maxReconsumeTimes = 2) =>
      c.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
        offset,
        group,
        delayLevel,
        originMsgId: 'F1',
        originTopic: topic,
        unitMode: 'false',
        maxReconsumeTimes,
      });
    const t0 = Date.now();
    assert.equal((await back(m!.logPosition)).code, ResponseCode.SUCCESS);
    // The group's policy (300 ms) rounds up to delay level 1 (1 s): queue 0 of the retry topic.
    const retryTopic = `%RETRY%${group}`;
    const early = await pull(group, retryTopic, 0, 0);
    assert.equal(early.code, ResponseCode.PULL_NOT_FOUND, 'not handed out before it is due');
    const due = await pull(group, retryTopic, 0, 0, { suspendMs: 5000 });
    assert.equal(due.code, ResponseCode.SUCCESS);
    assert.ok(Date.now() - t0 >= 950, `due after about 1 s (${Date.now() - t0} ms)`);
    const [r1] = decodePulled(due.body);
    assert.equal(r1!.body, 'fail me');
    assert.equal(r1!.reconsumeTimes, 1);
    assert.equal(r1!.topic, retryTopic);
    assert.equal(r1!.props.UNIQ_KEY, 'F1', 'the message id is kept');
    assert.equal(r1!.props.RETRY_TOPIC, topic);
    assert.equal(r1!.props.ORIGIN_MESSAGE_ID, 'F1');

    // An explicit delay level is kept (level 3 = 10 s → queue 2); the retry waits on the broker's
    // timer, like every delay message, and reaches the retry topic only at its time.
    const t1 = Date.now();
    assert.equal((await back(r1!.logPosition, 3)).code, ResponseCode.SUCCESS);
    assert.equal(b.running.broker.queueState(retryTopic, 2).maxOffset, 0, 'not in the retry topic yet');
    const waiting = await b.running.broker.timer.status(retryTopic);
    assert.equal(waiting.scheduled, 1);
    assert.ok(Math.abs(waiting.nextDueAt! - (t1 + 10_000)) < 1000, 'due after level 3 (10 s)');
    const stored = await b.running.broker.findMessageById('F1');
    const second = stored.find((s) => s.topic === 'rmq_sys_wheel_timer')!;
    assert.equal(second.properties.REAL_TOPIC, retryTopic);
    assert.equal(second.properties.REAL_QID, '2');
    assert.equal(second.reconsumeTimes, 2);
    // reconsumeTimes 1 ≥ maxReconsumeTimes 1: the next failure is a dead letter.
    assert.equal((await back(r1!.logPosition, 0, 1)).code, ResponseCode.SUCCESS);
    const dlq = await pull(group, `%DLQ%${group}`, 0, 0);
    const [dead] = decodePulled(dlq.body);
    assert.equal(dead!.body, 'fail me');
    assert.equal(dead!.props.UNIQ_KEY, 'F1');
    assert.equal(dead!.props.DLQ_ORIGIN_TOPIC, topic);
    // A negative level sends straight to the DLQ.
    await send(topic, 0, 'straight', { UNIQ_KEY: 'F2' });
    const [m2] = decodePulled((await pull(group, topic, 0, 1)).body);
    assert.equal((await back(m2!.logPosition, -1)).code, ResponseCode.SUCCESS);
    assert.equal(b.running.broker.queueState(`%DLQ%${group}`, 0).maxOffset, 2);
    assert.equal((await back(123_456_789)).code, ResponseCode.SYSTEM_ERROR, 'no message at that offset');
  });
});

describe('Remoting endpoint: auto-creation and Dashboard codes', () => {
  test('with auto-creation, producers get the TBW102 route and a send naming it creates the topic', async () => {
    const auto = use(await startTestBroker({ autoCreateTopics: true }));
    const client = use(await RawRemotingClient.connect(auto.running.remotingPort));
    const tbw = await client.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: 'TBW102' });
    assert.equal(tbw.code, ResponseCode.SUCCESS);
    assert.equal(JSON.parse(tbw.body!.toString()).queueDatas[0].perm, 7);
    const topic = uniqueName('Auto');
    const r = await client.request(
      RequestCode.SEND_MESSAGE_V2,
      {
        a: 'P',
        b: topic,
        c: 'TBW102',
        d: 4,
        e: 1,
        f: 0,
        g: Date.now(),
        h: 0,
        i: encodeProperties({ UNIQ_KEY: 'AUTO1' }),
        j: 0,
      },
      Buffer.from('x'),
    );
    assert.equal(r.code, ResponseCode.SUCCESS, r.remark);
    const t = auto.running.broker.topics.get(topic)!;
    assert.deepEqual([t.readQueueNums, t.writeQueueNums], [4, 4]);
    await client.close();
    await auto.close();
  });

  test('topic and group deletion; broker stats answer zeros; topic and group listings', async () => {
    const { topic, group } = await topicAndGroup(1);
    const topics = JSON.parse((await c.request(RequestCode.GET_ALL_TOPIC_CONFIG)).body!.toString());
    assert.equal(topics.topicConfigTable[topic].readQueueNums, 1);
    const groups = JSON.parse(
      (await c.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body!.toString(),
    );
    assert.equal(groups.subscriptionGroupTable[group].retryMaxTimes, 16);
    const stats = await c.request(RequestCode.VIEW_BROKER_STATS_DATA, {
      statsName: 'TOPIC_PUT_NUMS',
      statsKey: topic,
    });
    assert.deepEqual(JSON.parse(stats.body!.toString()).statsMinute, { avgpt: 0, sum: 0, tps: 0 });
    assert.equal((await c.request(RequestCode.DELETE_TOPIC_IN_BROKER, { topic })).code, ResponseCode.SUCCESS);
    assert.equal(
      (await c.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, { topic })).code,
      ResponseCode.SUCCESS,
    );
    assert.equal(b.running.broker.topics.get(topic), undefined);
    assert.equal(
      (await c.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, { groupName: group })).code,
      ResponseCode.SUCCESS,
    );
    assert.equal(b.running.broker.groups.get(group), undefined);
  });
});
