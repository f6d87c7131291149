/**
 * Remoting requests and clients in `GET /metrics`: `rocketmq_rpc_latency_milliseconds` by request
 * code, response code and long polling with `protocol_type="remoting"`, and the Remoting producers
 * and consumers in the connection gauges. Unserved codes do not grow the label set.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RequestCode, ResponseCode } from '../../src/remoting/codes.js';
import { encodeProperties } from '../../src/remoting/message-codec.js';
import { startTestBroker, uniqueName, closeAll, use, type TestBroker } from '../support/harness.js';
import { RawRemotingClient } from './raw-client.js';

let b: TestBroker;
before(async () => {
  b = use(await startTestBroker());
});
after(closeAll);

/** The value of the sample with this name whose labels include `labels` (summed over the rest). */
async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${b.adminUrl}/metrics`)).text();
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const l of m[2]!.matchAll(/(\w+)="([^"]*)"/g)) have[l[1]!] = l[2]!;
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) {
      sum += Number(m[3]);
      found = true;
    }
  }
  return found ? sum : NaN;
}

test('Remoting requests are timed by request and response code; Remoting clients are counted', async () => {
  const c = use(await RawRemotingClient.connect(b.running.remotingPort));
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await b.running.broker.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
  await b.running.broker.groups.upsert(group, {});
  const heartbeat = {
    clientID: 'metrics-client',
    producerDataSet: [{ groupName: 'PG_METRICS' }, { groupName: 'CLIENT_INNER_PRODUCER' }],
    consumerDataSet: [
      {
        groupName: group,
        consumeType: 'CONSUME_PASSIVELY',
        messageModel: 'CLUSTERING',
        consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
        subscriptionDataSet: [{ topic, subString: '*', expressionType: 'TAG', subVersion: 1 }],
      },
    ],
  };
  const hb = await c.request(RequestCode.HEART_BEAT, {}, Buffer.from(JSON.stringify(heartbeat)));
  assert.equal(hb.code, ResponseCode.SUCCESS);
  for (let i = 0; i < 3; i++) {
    const r = await c.request(
      RequestCode.SEND_MESSAGE_V2,
      {
        a: 'PG_METRICS',
        b: topic,
        e: 0,
        f: 0,
        g: Date.now(),
        h: 0,
        i: encodeProperties({ UNIQ_KEY: `K${i}` }),
      },
      Buffer.from('x'),
    );
    assert.equal(r.code, ResponseCode.SUCCESS);
  }
  const pull = (queueOffset: number, sysFlag: number) =>
    c.request(RequestCode.PULL_MESSAGE, {
      consumerGroup: group,
      topic,
      queueId: 0,
      queueOffset,
      maxMsgNums: 32,
      sysFlag,
      commitOffset: 0,
      suspendTimeoutMillis: 100,
      subVersion: 1,
    });
  assert.equal((await pull(0, 0)).code, ResponseCode.SUCCESS);
  assert.equal((await pull(3, 0x2)).code, ResponseCode.PULL_NOT_FOUND, 'a long poll that times out');
  assert.equal((await c.request(12345)).code, ResponseCode.REQUEST_CODE_NOT_SUPPORTED);

  const latency = 'rocketmq_rpc_latency_milliseconds_count';
  const remoting = { protocol_type: 'remoting' };
  assert.equal(
    await metric(latency, { ...remoting, request_code: 'send_message_v2', response_code: 'success' }),
    3,
  );
  assert.equal(
    await metric(latency, {
      ...remoting,
      request_code: 'pull_message',
      response_code: 'success',
      is_long_polling: 'false',
    }),
    1,
  );
  assert.equal(
    await metric(latency, {
      ...remoting,
      request_code: 'pull_message',
      response_code: 'pull_not_found',
      is_long_polling: 'true',
    }),
    1,
  );
  assert.equal(await metric(latency, { ...remoting, request_code: 'heart_beat' }), 1);
  assert.ok(Number.isNaN(await metric(latency, { ...remoting, request_code: 'code_12345' })));
  // A long poll's histogram holds its wait: the 100 ms suspend lands above the 10 ms bucket.
  assert.equal(
    await metric('rocketmq_rpc_latency_milliseconds_bucket', {
      ...remoting,
      request_code: 'pull_message',
      is_long_polling: 'true',
      le: '10',
    }),
    0,
  );

  assert.equal(await metric('rocketmq_producer_connections', { ...remoting, language: 'java' }), 1);
  assert.equal(
    await metric('rocketmq_consumer_connections', {
      ...remoting,
      consumer_group: group,
      consume_mode: 'push',
    }),
    1,
  );
  await c.close();
});
