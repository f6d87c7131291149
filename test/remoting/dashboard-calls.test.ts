/**
 * What the RocketMQ Dashboard calls, tested: the DefaultMQAdminExt / DefaultMQPullConsumer calls its
 * service classes make for the cluster, topic, consumer, producer, message and DLQ pages
 * (java/src/VelaDashboardCalls.java), against Vela, with a Java push consumer running in one group
 * and a gRPC consumer in another. The Dashboard application itself is not run here (it is not
 * published to Maven Central).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { SimpleConsumer } from '../../src/index.js';
import { uniqueName, use, waitFor } from '../support/harness.js';
import { javaBrokerSuite, runJava, runJavaMain, startJava, type ProgramEvent } from './client-programs.js';

const suite = javaBrokerSuite('vela-dashboard-home-');
const ns = suite.ns;

describe('what the Dashboard calls', () => {
  test('cluster, topic, consumer, producer, message and DLQ pages', async () => {
    const broker = suite.broker.running.broker;
    const topic = uniqueName('T');
    const group = uniqueName('G');
    const grpcGroup = uniqueName('GG');
    await broker.topics.upsert(topic, { readQueueNums: 4, writeQueueNums: 4 });
    await broker.groups.upsert(group, {});
    await broker.groups.upsert(grpcGroup, {});
    const sent = (await runJava(suite.home, ['send', ns(), topic, '4', 'TagS'])).filter(
      (e) => e.event === 'sent',
    );
    assert.equal(sent.length, 4);

    // A gRPC consumer group that has consumed everything.
    const grpc = use(
      new SimpleConsumer({
        endpoints: suite.broker.endpoints,
        group: grpcGroup,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 500,
      }),
    );
    await grpc.start();
    let acked = 0;
    while (acked < 4) {
      for (const m of await grpc.receive(32, 10_000)) {
        await grpc.ack(m);
        acked++;
      }
    }

    // One of the messages is a dead letter of the Remoting group.
    const [original] = await broker.findMessageById(sent[0]!.msgId as string, topic);
    await broker.sendBack.sendBack(
      { message: original!, group, delayLevel: -1 },
      await broker.consume.requireGroup(group),
    );
    const dlqMsgId = original!.messageId;

    const consumer = await startJava(suite.home, ['serve', ns(), topic, group]);
    let calls: ProgramEvent[];
    try {
      const clientId = (await consumer.next((e) => e.event === 'ready')).clientId as string;
      await waitFor(
        () => consumer.events.filter((e) => e.event === 'received' && e.topic === topic).length >= 4,
        60_000,
      );
      // the client commits its offsets every 5 s
      const committed = () =>
        [0, 1, 2, 3].reduce((n, q) => n + (broker.offsets.get(group, topic, q)?.offset ?? 0), 0);
      await waitFor(() => committed() === 4, 30_000);
      const ev = await runJavaMain(
        suite.home,
        'VelaDashboardCalls',
        [ns(), topic, group, grpcGroup, clientId, sent[1]!.msgId as string, 'x-2', dlqMsgId],
        120_000,
      );
      calls = ev.filter((e) => e.event === 'call');
      const failed = calls.filter((c) => c.ok !== true);
      assert.deepEqual(failed, [], 'every call the Dashboard makes succeeds');
      const call = (name: string) => calls.find((c) => c.name === name)!;

      // cluster page
      assert.equal(call('examineBrokerClusterInfo').clusters, 'DefaultCluster');
      assert.equal(call('examineBrokerClusterInfo').addr, ns());
      assert.ok(Number(call('fetchBrokerRuntimeStats').msgPutTotalTodayNow) >= 4, 'messages stored');
      assert.equal(call('getBrokerConfig').brokerName, broker.brokerName);
      // topic page
      assert.deepEqual(
        [
          call('fetchAllTopicList').hasTopic,
          call('fetchAllTopicList').hasRetry,
          call('fetchAllTopicList').hasGrpcRetry,
        ],
        [true, true, true],
      );
      assert.equal(call('fetchAllTopicList').hasDlq, true);
      assert.deepEqual(
        [call('getAllTopicConfig').queues, call('getAllTopicConfig').messageType],
        [4, 'NORMAL'],
      );
      assert.deepEqual([call('examineTopicStats').queues, call('examineTopicStats').messages], [4, 4]);
      assert.deepEqual(
        [call('examineTopicRouteInfo').brokerAddr, call('examineTopicRouteInfo').readQueueNums],
        [ns(), 4],
      );
      assert.equal(call('queryTopicConsumeByWho').groups, [group, grpcGroup].sort().join(','));
      assert.equal(call('examineTopicConfig').topicName, topic);
      assert.deepEqual(
        [
          call('createAndUpdateTopicConfig+deleteTopic').createdType,
          call('createAndUpdateTopicConfig+deleteTopic').deleted,
        ],
        ['FIFO', true],
      );
      // consumer page, both kinds of groups
      assert.deepEqual(
        [call('getAllSubscriptionGroup').hasGroup, call('getAllSubscriptionGroup').hasGrpcGroup],
        [true, true],
      );
      assert.equal(call('examineConsumeStats:remoting').consumerOffsets, 4);
      assert.equal(call('examineConsumeStats:remoting').diffTotal, 0);
      assert.equal(call('examineConsumeStats:grpc').diffTotal, 0);
      assert.equal(call('examineConsumerConnectionInfo:remoting').clients, clientId);
      assert.equal(call('examineConsumerConnectionInfo:remoting').consumeType, 'CONSUME_PASSIVELY');
      const grpcClients = broker.sessions.list({ group: grpcGroup }).map((s) => s.clientId);
      assert.equal(call('examineConsumerConnectionInfo:grpc').clients, grpcClients.sort().join(','));
      assert.ok(Number(call('examineConsumeStats(addr,group,null,3000)').queues) >= 4);
      assert.equal(call('getConsumerRunningInfo').subscriptions, [`%RETRY%${group}`, topic].sort().join(','));
      assert.equal(call('getConsumerRunningInfo').consumeType, 'CONSUME_PASSIVELY');
      assert.equal(call('examineSubscriptionGroupConfig').groupName, group);
      // producer page
      assert.equal(call('examineProducerConnectionInfo').connections, 1);
      // message page
      assert.deepEqual([call('viewMessage').body, call('viewMessage').keys], ['from java 1', 'x-1']);
      assert.deepEqual([call('queryMessage').found, call('queryMessage').msgId], [1, sent[2]!.msgId]);
      assert.equal(call('queryMessageByTopic').messages, 5, 'the four sent, and the one the program sent');
      // DLQ page: the dead letter is listed and resent to the running consumer, which consumes it
      assert.equal(call('dlqRoute').queues, 1);
      assert.equal(call('dlqMessages').messages, 1);
      assert.equal(call('dlqResend').consumeResult, 'CR_SUCCESS');
      await waitFor(
        () => consumer.events.some((e) => e.event === 'received' && e.topic === `%DLQ%${group}`),
        30_000,
      );
      // reset to now: every queue at its end
      assert.deepEqual(
        [call('resetOffsetByTimestamp').queues, call('resetOffsetByTimestamp').offsets],
        [4, 5],
      );
    } finally {
      await consumer.stop();
      await grpc.close();
    }
  });
});
