/**
 * The stock mqadmin (org.apache.rocketmq:rocketmq-tools 5.5.0, MQAdminStartup) against Vela, topic and
 * cluster commands: updateTopic (with -a +message.type=FIFO), topicRoute, topicList, topicStatus,
 * clusterList, brokerStatus. Group commands: mqadmin-groups.test.ts.
 */
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/harness.js';
import { javaBrokerSuite, runMqadmin } from './client-programs.js';

const suite = javaBrokerSuite('vela-mqadmin-home-');
const ns = suite.ns;
const mqadmin = (...args: string[]) => runMqadmin(suite.home, [...args, '-n', ns()]);
/** Rows of a table mqadmin printed: whitespace-separated cells of the lines that start with `first`. */
const rows = (out: string, first: string) =>
  out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((cells) => cells[0] === first);

let topic: string;

before(() => {
  topic = uniqueName('T');
});

describe('mqadmin topic commands', { concurrency: false }, () => {
  test('updateTopic, also with -a +message.type=FIFO', async () => {
    const fifo = uniqueName('F');
    const [out, fifoOut] = await Promise.all([
      mqadmin('updateTopic', '-c', 'DefaultCluster', '-t', topic, '-r', '4', '-w', '4'),
      mqadmin('updateTopic', '-c', 'DefaultCluster', '-t', fifo, '-a', '+message.type=FIFO'),
    ]);
    assert.match(out, /create topic to 127\.0\.0\.1:\d+ success/);
    const t = suite.broker.running.broker.topics.get(topic)!;
    assert.deepEqual([t.readQueueNums, t.writeQueueNums, t.messageType], [4, 4, 'NORMAL']);
    assert.match(fifoOut, /success/);
    assert.equal(suite.broker.running.broker.topics.get(fifo)?.messageType, 'FIFO');
    // Four messages for topicStatus, one per queue.
    const results = await suite.broker.running.broker.produce.send(
      [0, 1, 2, 3].map((q) => ({
        topic,
        messageId: `M${q}${Date.now()}`,
        body: Buffer.from('x'),
        queueId: q,
      })),
    );
    assert.equal(results.length, 4);
  });

  test('topicRoute points at the endpoint; topicList lists topics and every group as %RETRY%<group>', async () => {
    const group = uniqueName('G');
    await suite.broker.running.broker.groups.upsert(group, {});
    const [route, list] = await Promise.all([mqadmin('topicRoute', '-t', topic), mqadmin('topicList')]);
    assert.match(route, /"brokerName":"broker-0"/);
    assert.match(route, /"readQueueNums":4/);
    assert.match(route, new RegExp(`"127\\.0\\.0\\.1:${suite.broker.running.remotingPort}"`));
    const names = list.split('\n').map((l) => l.trim());
    assert.ok(names.includes(topic));
    assert.ok(names.includes(`%RETRY%${group}`), 'a group without any consumer yet is listed too');
  });

  test('topicStatus shows min/max offsets per queue', async () => {
    const out = await mqadmin('topicStatus', '-t', topic);
    const r = rows(out, 'broker-0');
    assert.equal(r.length, 4, out);
    assert.deepEqual(
      r.map((cells) => [cells[1], cells[2], cells[3]]),
      [
        ['0', '0', '1'],
        ['1', '0', '1'],
        ['2', '0', '1'],
        ['3', '0', '1'],
      ],
    );
  });

  test('clusterList and brokerStatus', async () => {
    const [cluster, status] = await Promise.all([
      mqadmin('clusterList'),
      mqadmin('brokerStatus', '-b', ns()),
    ]);
    const r = rows(cluster, 'DefaultCluster');
    assert.equal(r.length, 1, cluster);
    assert.equal(r[0]![1], 'broker-0');
    assert.equal(r[0]![3], ns());
    assert.match(status, /brokerVersionDesc\s+: V5_3_1 \(Vela\)/);
    assert.match(status, /msgPutTotalTodayNow\s+: 4/);
  });
});
