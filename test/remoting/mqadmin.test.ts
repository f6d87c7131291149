/**
 * The stock mqadmin (org.apache.rocketmq:rocketmq-tools 5.5.0, MQAdminStartup) against Vela, group
 * and message commands: updateSubGroup, consumerProgress, queryMsgById (offset id and UNIQ_KEY),
 * queryMsgByKey, resetOffsetByTime. Topic and cluster commands: mqadmin-topics.test.ts.
 */
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/harness.js';
import { javaBrokerSuite, runJava, runMqadmin, type ProgramEvent } from './client-programs.js';

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
let group: string;
let sent: ProgramEvent[];

before(() => {
  topic = uniqueName('T');
  group = uniqueName('G');
});

describe('mqadmin writes', { concurrency: false }, () => {
  test('updateSubGroup', async () => {
    await suite.broker.running.broker.topics.upsert(topic, { readQueueNums: 4, writeQueueNums: 4 });
    const groupOut = await mqadmin(
      'updateSubGroup',
      '-c',
      'DefaultCluster',
      '-g',
      group,
      '-r',
      '3',
      '-o',
      'true',
    );
    assert.match(groupOut, /create subscription group to 127\.0\.0\.1:\d+ success/);
    const g = suite.broker.running.broker.groups.get(group)!;
    assert.deepEqual([g.retryMaxTimes, g.consumeMessageOrderly], [3, true]);
  });

  test('a producer and a consumer make progress to show', async () => {
    sent = (await runJava(suite.home, ['send', ns(), topic, '4', 'TagQ'])).filter((e) => e.event === 'sent');
    assert.equal(sent.length, 4);
    await runJava(suite.home, ['consume', ns(), topic, group, '4']);
    assert.equal(
      suite.broker.running.broker.offsets.list(group, topic).reduce((n, o) => n + o.offset, 0),
      4,
      'the consumer committed its offsets',
    );
  });
});

describe('mqadmin reads', { concurrency: 2 }, () => {
  test('consumerProgress shows broker and consumer offsets (diff 0 after consuming)', async () => {
    const out = await mqadmin('consumerProgress', '-g', group);
    const r = rows(out, topic);
    assert.equal(r.length, 4, out);
    assert.equal(
      r.reduce((n, cells) => n + Number(cells[3]), 0),
      4,
    );
    assert.equal(
      r.reduce((n, cells) => n + Number(cells[4]), 0),
      4,
    );
    assert.match(out, /Consume Diff Total: 0/);
  });

  test('queryMsgById by offset id and by UNIQ_KEY; queryMsgByKey', async () => {
    const first = sent[0]!;
    const [byOffset, byUniq, byKey] = await Promise.all([
      mqadmin('queryMsgById', '-t', topic, '-i', first.offsetMsgId as string),
      mqadmin('queryMsgById', '-t', topic, '-i', first.msgId as string),
      mqadmin('queryMsgByKey', '-t', topic, '-k', 'x-1'),
    ]);
    assert.match(byOffset, new RegExp(`OffsetID:\\s+${first.offsetMsgId}`));
    assert.match(byOffset, /Tags:\s+\[TagQ\]/);
    assert.match(byOffset, new RegExp(`UNIQ_KEY=${first.msgId}`));
    assert.match(byOffset, /color=blue/);
    assert.match(byUniq, new RegExp(`OffsetID:\\s+${first.offsetMsgId}`));
    assert.match(byKey, new RegExp(sent[1]!.msgId as string));
    assert.equal(rows(byKey, sent[1]!.msgId as string).length, 1);
  });
});

describe('mqadmin reset', () => {
  test('resetOffsetByTime moves the group back to the start', async () => {
    const out = await mqadmin('resetOffsetByTime', '-g', group, '-t', topic, '-s', '0');
    const r = rows(out, 'broker-0');
    assert.equal(r.length, 4, out);
    assert.ok(r.every((cells) => cells[2] === '0'));
    assert.deepEqual(
      suite.broker.running.broker.offsets.list(group, topic).map((o) => o.offset),
      [0, 0, 0, 0],
    );
    const progress = await mqadmin('consumerProgress', '-g', group);
    assert.match(progress, /Consume Diff Total: 4/);
  });
});
