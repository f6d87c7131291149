/**
 * Requests the broker forwards to a consumer: the stock mqadmin's `consumerStatus`
 * (GET_CONSUMER_RUNNING_INFO) and `queryMsgById -g -d` (CONSUME_MESSAGE_DIRECTLY) against a running
 * Java push consumer; and, with raw frames, the relayed answer, the time-out and a client that is
 * gone or speaks gRPC.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { SimpleConsumer } from '../../src/index.js';
import { RemotingEndpoint } from '../../src/remoting/remoting-server.js';
import { RequestCode, ResponseCode } from '../../src/remoting/codes.js';
import { Flag } from '../../src/remoting/frame.js';
import { silentLogger } from '../../src/common/logger.js';
import { uniqueName, use, waitFor } from '../support/harness.js';
import { javaBrokerSuite, runJava, runMqadmin, startJava } from './client-programs.js';
import { RawRemotingClient } from './raw-client.js';

const suite = javaBrokerSuite('vela-mqadmin-consumer-home-');
const ns = suite.ns;
const mqadmin = (...args: string[]) => runMqadmin(suite.home, [...args, '-n', ns()]);

function heartbeat(clientId: string, group: string, topic: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      clientID: clientId,
      consumerDataSet: [
        {
          groupName: group,
          consumeType: 'CONSUME_PASSIVELY',
          messageModel: 'CLUSTERING',
          consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
          subscriptionDataSet: [
            { topic, subString: '*', tagsSet: [], codeSet: [], subVersion: 1, expressionType: 'TAG' },
          ],
          unitMode: false,
        },
      ],
      producerDataSet: [],
    }),
  );
}

describe('the broker calling a consumer', { concurrency: false }, () => {
  test('mqadmin consumerStatus and queryMsgById -g -d against a running Java push consumer', async () => {
    const topic = uniqueName('T');
    const group = uniqueName('G');
    await suite.broker.running.broker.topics.upsert(topic, { readQueueNums: 2, writeQueueNums: 2 });
    await suite.broker.running.broker.groups.upsert(group, {});
    const sent = (await runJava(suite.home, ['send', ns(), topic, '2', 'TagS'])).filter(
      (e) => e.event === 'sent',
    );
    const consumer = await startJava(suite.home, ['serve', ns(), topic, group]);
    try {
      const clientId = (await consumer.next((e) => e.event === 'ready')).clientId as string;
      await waitFor(() => consumer.events.filter((e) => e.event === 'received').length === 2, 60_000);

      const status = await mqadmin('consumerStatus', '-g', group);
      assert.match(status, new RegExp(`1\\s+${clientId.replace(/[.]/g, '\\.')}\\s+V5_`));
      assert.match(status, /Same subscription in the same group of consumer/);
      assert.match(status, /Rebalance OK/);

      const connection = await mqadmin('consumerConnection', '-g', group);
      assert.match(
        connection,
        new RegExp(`${clientId.replace(/[.]/g, '\\.')}\\s+127\\.0\\.0\\.1:\\d+\\s+JAVA`),
      );

      const detail = await mqadmin('consumerStatus', '-g', group, '-i', clientId);
      assert.match(detail, /#Consumer Subscription#/);
      assert.match(detail, new RegExp(`Topic:\\s*${topic}`));
      assert.match(detail, /#Consumer MQ Detail#/);
      assert.match(detail, /PROP_CONSUME_TYPE\s*:\s*CONSUME_PASSIVELY/);

      // The admin tool finds the message, the broker hands it to this consumer, which runs its
      // listener on it once more and says how it went.
      const first = sent[0]!;
      const direct = await mqadmin(
        'queryMsgById',
        '-t',
        topic,
        '-i',
        first.offsetMsgId as string,
        '-g',
        group,
        '-d',
        clientId,
      );
      assert.match(direct, /CR_SUCCESS/);
      await waitFor(
        () => consumer.events.filter((e) => e.event === 'received' && e.msgId === first.msgId).length === 2,
        30_000,
      );
    } finally {
      await consumer.stop();
    }
    // Gone: the broker says so, at once.
    const gone = await mqadmin('consumerStatus', '-g', group);
    assert.match(gone, /not online|CODE: 206/);
  });

  test('a consumer that answers, one that does not (CONSUME_MSG_TIMEOUT), one that leaves mid-call', async () => {
    const topic = uniqueName('T');
    const group = uniqueName('G');
    await suite.broker.running.broker.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
    await suite.broker.running.broker.groups.upsert(group, {});
    const endpoint = await RemotingEndpoint.start(suite.broker.running.broker, {
      host: '127.0.0.1',
      port: 0,
      autoCreateTopics: false,
      logger: silentLogger(),
      callClientTimeoutMs: 300,
    });
    const consumer = await RawRemotingClient.connect(endpoint.ports[0]!);
    const admin = await RawRemotingClient.connect(endpoint.ports[0]!);
    try {
      const hb = await consumer.request(RequestCode.HEART_BEAT, {}, heartbeat('raw@1', group, topic));
      assert.equal(hb.code, ResponseCode.SUCCESS);
      const ask = () =>
        admin.request(
          RequestCode.GET_CONSUMER_RUNNING_INFO,
          { consumerGroup: group, clientId: 'raw@1', jstackEnable: 'false' },
          undefined,
          { timeoutMs: 10_000 },
        );

      // Nobody answers: time-out.
      const late = await ask();
      assert.equal(late.code, ResponseCode.CONSUME_MSG_TIMEOUT);
      assert.match(late.remark ?? '', /Timeout/);
      const forwarded = consumer.pushed.find((c) => c.code === RequestCode.GET_CONSUMER_RUNNING_INFO)!;
      assert.equal(forwarded.extFields.clientId, 'raw@1');
      assert.equal(forwarded.flag & Flag.ONEWAY, 0, 'a request that wants its answer');

      // The consumer answers: relayed as it is.
      const pending = ask();
      await waitFor(
        () => consumer.pushed.filter((c) => c.code === RequestCode.GET_CONSUMER_RUNNING_INFO).length === 2,
      );
      const second = consumer.pushed.filter((c) => c.code === RequestCode.GET_CONSUMER_RUNNING_INFO)[1]!;
      consumer.respond(
        second.opaque,
        ResponseCode.SUCCESS,
        Buffer.from('{"properties":{"x":"1"}}'),
        'from the client',
      );
      const relayed = await pending;
      assert.equal(relayed.code, ResponseCode.SUCCESS);
      assert.equal(relayed.remark, 'from the client');
      assert.equal(relayed.body?.toString(), '{"properties":{"x":"1"}}');

      // The consumer leaves while the broker waits for it.
      const leaving = ask();
      await waitFor(
        () => consumer.pushed.filter((c) => c.code === RequestCode.GET_CONSUMER_RUNNING_INFO).length === 3,
      );
      await consumer.close();
      const left = await leaving;
      assert.equal(left.code, ResponseCode.SYSTEM_ERROR);
      assert.match(left.remark ?? '', /not online/);

      // Unknown client; a gRPC client of the group.
      const unknown = await admin.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {
        consumerGroup: group,
        clientId: 'nobody',
      });
      assert.equal(unknown.code, ResponseCode.SYSTEM_ERROR);
      assert.match(unknown.remark ?? '', /not online/);
      const grpc = use(
        new SimpleConsumer({
          endpoints: suite.broker.endpoints,
          group,
          subscriptions: { [topic]: '*' },
          awaitDurationMs: 500,
        }),
      );
      await grpc.start();
      const grpcId = suite.broker.running.broker.sessions.list({ group })[0]!.clientId;
      const refused = await admin.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, {
        consumerGroup: group,
        clientId: grpcId,
        msgId: 'nope',
      });
      assert.equal(refused.code, ResponseCode.QUERY_NOT_FOUND, 'the message is looked up first');
      const refusedInfo = await admin.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {
        consumerGroup: group,
        clientId: grpcId,
      });
      assert.equal(refusedInfo.code, ResponseCode.SYSTEM_ERROR);
      assert.match(refusedInfo.remark ?? '', /gRPC client/);
      await grpc.close();
    } finally {
      await consumer.close();
      await admin.close();
      await endpoint.close();
    }
  });
});
