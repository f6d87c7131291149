/**
 * Delay and transaction sends driven with raw Remoting frames: the refusals a client can meet, the
 * checks END_TRANSACTION makes before it commits or rolls back, and the CHECK_TRANSACTION_STATE
 * request a producer connection receives for an orphaned transaction.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RequestCode, ResponseCode } from '../../src/remoting/codes.js';
import { decodeOffsetMessageId, encodeProperties } from '../../src/remoting/message-codec.js';
import { startTestBroker, uniqueName, closeAll, use, waitFor, type TestBroker } from '../support/harness.js';
import { RawRemotingClient } from './raw-client.js';

let b: TestBroker;
let c: RawRemotingClient;

before(async () => {
  b = use(await startTestBroker({ transaction: { checkTimeoutMs: 300, checkIntervalMs: 60_000 } }));
  c = use(await RawRemotingClient.connect(b.running.remotingPort));
});
after(closeAll);

async function topic(): Promise<string> {
  const t = uniqueName('T');
  await b.running.broker.topics.upsert(t, { readQueueNums: 1, writeQueueNums: 1 });
  return t;
}

function send(
  client: RawRemotingClient,
  t: string,
  props: Record<string, string>,
  sysFlag = 0,
  group = 'PG',
) {
  return client.request(
    RequestCode.SEND_MESSAGE_V2,
    {
      a: group,
      b: t,
      c: 'TBW102',
      d: 4,
      e: 0,
      f: sysFlag,
      g: Date.now(),
      h: 0,
      i: encodeProperties({ UNIQ_KEY: uniqueName('ID').toUpperCase(), ...props }),
      j: 0,
      k: 'false',
    },
    Buffer.from('body'),
  );
}

const stored = (t: string) => b.running.broker.queueState(t, 0).maxOffset;

describe('delay and transactions with raw Remoting frames', () => {
  test('a delivery time beyond timer.maxDelayMs, or a timer property that is not a number: MESSAGE_ILLEGAL', async () => {
    const t = await topic();
    const far = await send(c, t, { TIMER_DELIVER_MS: String(Date.now() + 4 * 24 * 3600_000) });
    assert.equal(far.code, ResponseCode.MESSAGE_ILLEGAL);
    assert.match(far.remark ?? '', /longest delay is 3 d/);
    const bad = await send(c, t, { TIMER_DELAY_SEC: 'soon' });
    assert.equal(bad.code, ResponseCode.MESSAGE_ILLEGAL);
    assert.match(bad.remark ?? '', /TIMER_DELAY_SEC property is not an integer/);
    const both = await send(c, t, { TRAN_MSG: 'true', DELAY: '2' }, 0x4);
    assert.equal(both.code, ResponseCode.MESSAGE_ILLEGAL);
    assert.equal(stored(t), 0);
  });

  test('END_TRANSACTION: checks the half message, commits once, refuses the contrary end', async () => {
    const t = await topic();
    const r = await send(c, t, { TRAN_MSG: 'true', PGROUP: 'PG' }, 0x4);
    assert.equal(r.code, ResponseCode.SUCCESS);
    assert.ok(r.extFields.transactionId);
    const commitLogOffset = decodeOffsetMessageId(r.extFields.msgId!)!.logPosition;
    const tranStateTableOffset = Number(r.extFields.queueOffset);
    assert.equal(b.running.broker.transactions.status(t)[0]?.open, 1);
    assert.equal(stored(t), 0, 'a half message is invisible');
    const end = (fields: Record<string, string | number>) =>
      c.request(RequestCode.END_TRANSACTION, {
        producerGroup: 'PG',
        tranStateTableOffset,
        commitLogOffset,
        commitOrRollback: 8,
        fromTransactionCheck: 'false',
        ...fields,
      });
    assert.equal((await end({ commitLogOffset: commitLogOffset + 1 })).code, ResponseCode.SYSTEM_ERROR);
    assert.match((await end({ tranStateTableOffset: 999 })).remark ?? '', /state table offset is wrong/);
    assert.match((await end({ producerGroup: 'OTHER' })).remark ?? '', /producer group OTHER is wrong/);
    assert.equal((await end({ commitOrRollback: 0 })).code, ResponseCode.SUCCESS, 'unknown: nothing happens');
    assert.equal(stored(t), 0);
    assert.equal((await end({})).code, ResponseCode.SUCCESS);
    assert.equal(stored(t), 1);
    assert.equal((await end({})).code, ResponseCode.SUCCESS, 'a second commit is answered the same');
    assert.equal(stored(t), 1, 'and stores nothing');
    const contrary = await end({ commitOrRollback: 12 });
    assert.equal(contrary.code, ResponseCode.SYSTEM_ERROR);
    assert.match(contrary.remark ?? '', /already committed/);
    assert.equal(b.running.broker.transactions.status(t).length, 0);
  });

  test('the connection that sent a half message is asked even before its first heartbeat', async () => {
    const t = await topic();
    const group = uniqueName('PG');
    const silent = use(await RawRemotingClient.connect(b.running.remotingPort));
    const r = await send(silent, t, { TRAN_MSG: 'true', PGROUP: group }, 0x4, group);
    assert.equal(r.code, ResponseCode.SUCCESS);
    await waitFor(() => silent.pushed.some((p) => p.code === RequestCode.CHECK_TRANSACTION_STATE), {
      timeoutMs: 10_000,
      what: 'the check',
    });
    const check = silent.pushed.find((p) => p.code === RequestCode.CHECK_TRANSACTION_STATE)!;
    assert.equal(check.extFields.transactionId, r.extFields.transactionId);
    const commit = await silent.request(RequestCode.END_TRANSACTION, {
      producerGroup: group,
      tranStateTableOffset: check.extFields.tranStateTableOffset!,
      commitLogOffset: check.extFields.commitLogOffset!,
      commitOrRollback: 8,
      fromTransactionCheck: 'true',
    });
    assert.equal(commit.code, ResponseCode.SUCCESS);
    assert.equal(stored(t), 1);
  });

  test('an orphaned transaction: CHECK_TRANSACTION_STATE on a connection of its producer group', async () => {
    const t = await topic();
    const group = uniqueName('PG');
    const producer = use(await RawRemotingClient.connect(b.running.remotingPort));
    const other = use(await RawRemotingClient.connect(b.running.remotingPort));
    const hb = (client: RawRemotingClient, g: string, id: string) =>
      client.request(
        RequestCode.HEART_BEAT,
        {},
        Buffer.from(
          JSON.stringify({ clientID: id, producerDataSet: [{ groupName: g }], consumerDataSet: [] }),
        ),
      );
    const unrelated = use(await RawRemotingClient.connect(b.running.remotingPort));
    assert.equal((await hb(producer, group, 'client-a')).code, ResponseCode.SUCCESS);
    assert.equal((await hb(unrelated, uniqueName('PG'), 'client-c')).code, ResponseCode.SUCCESS);
    // Sent on a connection that then goes away: any live producer of the group is asked, as in RocketMQ.
    const r = await send(other, t, { TRAN_MSG: 'true', PGROUP: group, origin: 'raw' }, 0x4, group);
    assert.equal(r.code, ResponseCode.SUCCESS);
    await other.close();
    await waitFor(() => producer.pushed.some((p) => p.code === RequestCode.CHECK_TRANSACTION_STATE), {
      timeoutMs: 10_000,
      what: 'the check',
    });
    assert.equal(unrelated.pushed.filter((p) => p.code === RequestCode.CHECK_TRANSACTION_STATE).length, 0);
    const check = producer.pushed.find((p) => p.code === RequestCode.CHECK_TRANSACTION_STATE)!;
    const position = decodeOffsetMessageId(r.extFields.msgId!)!.logPosition;
    assert.equal(check.flag & 2, 2, 'one-way');
    assert.equal(check.extFields.topic, t);
    assert.equal(Number(check.extFields.commitLogOffset), position);
    assert.equal(check.extFields.tranStateTableOffset, r.extFields.queueOffset);
    assert.equal(check.extFields.transactionId, r.extFields.transactionId);
    const body = check.body!.toString('latin1');
    assert.ok(
      body.includes(`PGROUP\u0001${group}`),
      'the message names its producer group (the client needs it)',
    );
    assert.ok(body.includes('origin\u0001raw') && body.includes(t));
    // The producer answers: rolled back.
    producer.oneway(RequestCode.END_TRANSACTION, {
      producerGroup: group,
      tranStateTableOffset: check.extFields.tranStateTableOffset!,
      commitLogOffset: check.extFields.commitLogOffset!,
      commitOrRollback: 12,
      fromTransactionCheck: 'true',
    });
    await waitFor(() => b.running.broker.transactions.status(t).length === 0, {
      timeoutMs: 5000,
      what: 'the rollback',
    });
    assert.equal(stored(t), 0);
  });
});
