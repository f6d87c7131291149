/**
 * Transactional messages through the SDK (and raw gRPC for the status codes): half messages are
 * invisible until commit, commit delivers once, rollback discards, both idempotent; orphaned
 * transactions are checked with a live producer, again at the interval, rolled back after the
 * maximum; open transactions survive a restart.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConsumeResult,
  Admin,
  Producer,
  PullConsumer,
  PushConsumer,
  SimpleConsumer,
  type MessageView,
  type VelaClientError,
} from '../../src/index.js';
import { Code } from '../../src/common/codes.js';
import {
  startTestBroker,
  uniqueName as unique,
  waitFor,
  use,
  closeAll,
  type TestBroker,
} from '../support/harness.js';
import { captureLogger, sleep, tempDir } from '../helpers.js';
import { RawClient } from './raw-client.js';

async function txTopic(b: TestBroker, prefix: string): Promise<string> {
  const t = unique(prefix);
  await b.running.broker.topics.upsert(t, {
    readQueueNums: 1,
    writeQueueNums: 1,
    attributes: { 'message.type': 'TRANSACTION' },
  });
  return t;
}

async function group(b: TestBroker, prefix: string): Promise<string> {
  const g = unique(prefix);
  await b.running.broker.groups.upsert(g, {});
  return g;
}

/** Receive what arrives at a simple consumer within `ms`, acking it. */
async function drain(c: SimpleConsumer, ms: number): Promise<MessageView[]> {
  const out: MessageView[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    for (const m of await c.receive(16, 10_000, { awaitDurationMs: Math.max(50, until - Date.now()) })) {
      out.push(m);
      await c.ack(m);
    }
  }
  return out;
}

describe('transactional messages', () => {
  let b: TestBroker;
  let producer: Producer;
  let raw: RawClient;
  before(async () => {
    b = await startTestBroker();
    producer = use(new Producer({ endpoints: b.endpoints }));
    raw = new RawClient(b.endpoints);
  });
  after(async () => {
    await closeAll();
    raw.close();
    await b.close();
  });

  test('a half message is invisible to every consumer kind until commit, then delivered once', async () => {
    const topic = await txTopic(b, 'TxCommit');
    const [gs, gp, gl] = await Promise.all([group(b, 'GS'), group(b, 'GP'), group(b, 'GL')]);
    const pushed: string[] = [];
    const simple = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group: gs,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 300,
      }),
    );
    const push = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group: gp,
        subscriptions: { [topic]: '*' },
        listener: (m) => {
          pushed.push(m.text());
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    const pull = use(
      new PullConsumer({
        endpoints: b.endpoints,
        group: gl,
        subscriptions: { [topic]: '*' },
        longPollingTimeoutMs: 300,
      }),
    );
    await Promise.all([simple.start(), push.start(), pull.start()]);
    const pulled: string[] = [];
    const ac = new AbortController();
    const pulling = (async () => {
      try {
        for await (const m of pull.messages({ signal: ac.signal })) pulled.push(m.text());
      } catch {
        // aborted
      }
    })();
    try {
      const tx = producer.beginTransaction();
      const receipt = await tx.send({ topic, body: 'paid', properties: { order: '42' } });
      assert.match(receipt.transactionId!, /^[0-9A-F]{32}$/);
      assert.equal((await drain(simple, 400)).length, 0, 'simple: nothing before commit');
      assert.deepEqual(pushed, []);
      assert.deepEqual(pulled, []);
      assert.equal(b.running.broker.transactions.openCount, 1);
      await tx.commit();
      await tx.commit(); // idempotent
      const got = await drain(simple, 600);
      assert.deepEqual(
        got.map((m) => [m.text(), m.messageId, m.messageType, m.properties]),
        [['paid', receipt.messageId, 'TRANSACTION', { order: '42' }]],
      );
      await waitFor(() => pushed.length === 1 && pulled.length === 1, 5000, 'push and pull');
      await sleep(200);
      assert.deepEqual(pushed, ['paid']);
      assert.deepEqual(pulled, ['paid']);
      // Committing again on the wire is fine too; rolling back now is refused.
      const end = (resolution: number) =>
        raw.unary('EndTransaction', {
          topic: { name: topic },
          message_id: receipt.messageId,
          transaction_id: receipt.transactionId,
          resolution,
          source: 1,
        });
      assert.equal((await end(1)).status.code, Code.OK);
      const refused = await end(2);
      assert.equal(refused.status.code, Code.PRECONDITION_FAILED);
      assert.match(refused.status.message, /already committed/);
      assert.equal(b.running.broker.transactions.openCount, 0);
      assert.equal(
        (await b.running.broker.findMessageById(receipt.messageId, topic)).length,
        1,
        'stored once',
      );
    } finally {
      ac.abort();
      await pulling;
    }
  });

  test('rollback discards the message; twice is fine; a commit afterwards is refused', async () => {
    const topic = await txTopic(b, 'TxRollback');
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group: await group(b, 'GR'),
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 300,
      }),
    );
    const tx = producer.beginTransaction();
    const r = await tx.send({ topic, body: 'cancelled' });
    await tx.rollback();
    await tx.rollback();
    await assert.rejects(tx.commit(), (e: VelaClientError) => e.codeName === 'PRECONDITION_FAILED');
    await assert.rejects(
      tx.send({ topic, body: 'late' }),
      (e: VelaClientError) => e.codeName === 'PRECONDITION_FAILED',
    );
    const commit = await raw.unary('EndTransaction', {
      topic: { name: topic },
      message_id: r.messageId,
      transaction_id: r.transactionId,
      resolution: 1,
      source: 1,
    });
    assert.equal(commit.status.code, Code.PRECONDITION_FAILED);
    assert.match(commit.status.message, /already rolled back/);
    assert.equal((await drain(c, 500)).length, 0);
  });

  test('an unknown, malformed or mismatched transaction gets INVALID_TRANSACTION_ID', async () => {
    const topic = await txTopic(b, 'TxUnknown');
    const tx = producer.beginTransaction();
    const r = await tx.send({ topic, body: 'x' });
    const end = (over: Record<string, unknown>) =>
      raw.unary('EndTransaction', {
        topic: { name: topic },
        message_id: r.messageId,
        transaction_id: r.transactionId,
        resolution: 1,
        source: 1,
        ...over,
      });
    for (const [what, over] of [
      ['blank', { transaction_id: '' }],
      ['malformed', { transaction_id: 'not-a-transaction' }],
      ['unknown', { transaction_id: '7FFFFFFFFFFF00000000000000000042' }],
      ['another message', { message_id: 'SOMETHING-ELSE' }],
      ['another topic', { topic: { name: await txTopic(b, 'TxElse') } }],
    ] as const) {
      const res = await end(over);
      assert.equal(res.status.code, Code.INVALID_TRANSACTION_ID, what);
    }
    assert.equal((await end({ resolution: 0 })).status.code, Code.BAD_REQUEST);
    await tx.rollback();
  });

  test('types must match: a TRANSACTION topic takes only transactional messages, and only it takes them', async () => {
    const topic = await txTopic(b, 'TxType');
    const normal = unique('TxNormal');
    await b.running.broker.topics.upsert(normal, {});
    await assert.rejects(
      producer.send({ topic, body: 'x' }),
      (e: VelaClientError) => e.codeName === 'MESSAGE_PROPERTY_CONFLICT_WITH_TYPE',
    );
    await assert.rejects(
      producer.beginTransaction().send({ topic: normal, body: 'x' }),
      (e: VelaClientError) => e.codeName === 'MESSAGE_PROPERTY_CONFLICT_WITH_TYPE',
    );
  });
});

describe('orphaned transactions', () => {
  let b: TestBroker;
  const log = captureLogger();
  before(async () => {
    b = await startTestBroker({
      transaction: { checkTimeoutMs: 300, checkIntervalMs: 200, checkMax: 3 },
      logger: log.logger,
    });
  });
  after(async () => {
    await closeAll();
    await b.close();
  });

  test("the producer's checker is asked after the time-out, with the message; COMMIT makes it visible", async () => {
    const topic = await txTopic(b, 'OrphanCommit');
    const asked: { body: string; topic: string; props: Record<string, string>; at: number }[] = [];
    const p = use(
      new Producer({
        endpoints: b.endpoints,
        checker: (m) => {
          asked.push({ body: m.text(), topic: m.topic, props: { ...m.properties }, at: Date.now() });
          return 'COMMIT';
        },
      }),
    );
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group: await group(b, 'GOC'),
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 300,
      }),
    );
    const sentAt = Date.now();
    const r = await p.beginTransaction().send({ topic, body: 'left open', properties: { k: 'v' } });
    await waitFor(() => asked.length === 1, 5000, 'a check');
    assert.deepEqual(asked[0]!.body, 'left open');
    assert.equal(asked[0]!.topic, topic);
    assert.deepEqual(asked[0]!.props, { k: 'v' });
    assert.ok(asked[0]!.at - sentAt >= 290, 'not before the check time-out');
    const got = await drain(c, 800);
    assert.deepEqual(
      got.map((m) => m.messageId),
      [r.messageId],
    );
    assert.equal(b.running.broker.transactions.status(topic).length, 0);
  });

  test('ROLLBACK discards it; UNKNOWN leaves it open and it is asked again at the interval', async () => {
    const topic = await txTopic(b, 'OrphanAgain');
    const answers = new Map<string, ('UNKNOWN' | 'ROLLBACK')[]>([
      ['undecided', ['UNKNOWN', 'UNKNOWN', 'ROLLBACK']],
      ['no', ['ROLLBACK']],
    ]);
    const asks: { body: string; at: number }[] = [];
    const p = use(
      new Producer({
        endpoints: b.endpoints,
        checker: (m) => {
          asks.push({ body: m.text(), at: Date.now() });
          return answers.get(m.text())!.shift();
        },
      }),
    );
    await p.beginTransaction().send({ topic, body: 'undecided' });
    await p.beginTransaction().send({ topic, body: 'no' });
    await waitFor(() => b.running.broker.transactions.status(topic).length === 0, 5000, 'both resolved');
    const undecided = asks.filter((a) => a.body === 'undecided');
    assert.equal(undecided.length, 3);
    assert.equal(asks.filter((a) => a.body === 'no').length, 1);
    // The broker asks at the 200 ms interval; the producer sees each ask late by a varying delay (a
    // loaded machine), so one gap may look short, but two intervals cannot shrink below one.
    assert.ok(
      undecided[2]!.at - undecided[0]!.at >= 200,
      `asked again at the interval (${undecided.map((a) => a.at - undecided[0]!.at).join(', ')} ms)`,
    );
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group: await group(b, 'GOA'),
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 300,
      }),
    );
    assert.equal((await drain(c, 500)).length, 0, 'both rolled back');
  });

  test('after the maximum number of checks the transaction is rolled back and logged', async () => {
    const topic = await txTopic(b, 'OrphanMax');
    const p = new Producer({ endpoints: b.endpoints }); // no checker: checks go unanswered
    const r = await p.beginTransaction().send({ topic, body: 'forgotten' });
    await waitFor(() => b.running.broker.transactions.status(topic).length === 0, 5000, 'rolled back');
    const line = log.lines.find(
      (l) => l.messageId === r.messageId && /rolled back after 3 unanswered checks/.test(l.msg),
    );
    assert.ok(line, 'the roll-back is logged');
    assert.equal(line.topic, topic);
    await p.close();
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group: await group(b, 'GOM'),
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 300,
      }),
    );
    assert.equal((await drain(c, 400)).length, 0);
  });

  test('when its producer is gone, another live producer of the topic is asked', async () => {
    const topic = await txTopic(b, 'OrphanOther');
    const dying = new Producer({ endpoints: b.endpoints });
    const r = await dying.beginTransaction().send({ topic, body: 'orphan' });
    await dying.close();
    const asked: string[] = [];
    const heir = use(
      new Producer({
        endpoints: b.endpoints,
        topics: [topic],
        checker: (m) => {
          asked.push(m.messageId);
          return 'COMMIT';
        },
      }),
    );
    await heir.start();
    await waitFor(() => asked.length > 0, 5000, 'the heir is asked');
    assert.deepEqual(asked, [r.messageId]);
    await waitFor(
      async () => (await b.running.broker.findMessageById(r.messageId, topic)).length === 1,
      3000,
    );
    const status = await new Admin({ url: b.adminUrl }).transactionStatus(topic);
    assert.deepEqual(status, { open: 0, topics: [] });
  });
});

test('open transactions, with their check counts, survive a restart; a commit after it delivers once', async () => {
  const dir = tempDir();
  try {
    let b = await startTestBroker({
      dataDir: dir.path,
      keepDataDir: true,
      transaction: { checkTimeoutMs: 100, checkIntervalMs: 60_000 },
    });
    const topic = await txTopic(b, 'TxRestart');
    const p = new Producer({ endpoints: b.endpoints });
    const open = await p.beginTransaction().send({ topic, body: 'survives' });
    const committed = p.beginTransaction();
    const c = await committed.send({ topic, body: 'committed before' });
    await committed.commit();
    await waitFor(() => b.running.broker.transactions.status(topic)[0]?.open === 1, 2000);
    await waitFor(
      () => b.running.broker.transactions.find(open.transactionId!)?.checks === 1,
      3000,
      'a check',
    );
    await p.close();
    await b.close();
    b = await startTestBroker({
      dataDir: dir.path,
      keepDataDir: true,
      transaction: { checkIntervalMs: 60_000 },
    });
    try {
      const broker = b.running.broker;
      const status = (await fetch(`${b.adminUrl}/api/transactions?topic=${topic}`).then((r) => r.json())) as {
        open: number;
        topics: { topic: string; oldestAt: number }[];
      };
      assert.equal(status.open, 1);
      assert.equal(status.topics[0]?.topic, topic);
      assert.deepEqual(broker.transactions.find(open.transactionId!), {
        topic,
        messageId: open.messageId,
        storedAt: status.topics[0]?.oldestAt,
        checks: 1,
      });
      await broker.transactions.end({
        topic,
        messageId: open.messageId,
        transactionId: open.transactionId!,
        resolution: 'COMMIT',
      });
      const ids = [];
      for (const id of [open.messageId, c.messageId]) ids.push(...(await broker.findMessageById(id, topic)));
      assert.equal(ids.length, 2, 'each stored once');
      // The committed one stays committed: ending it again the same way is fine.
      await broker.transactions.end({
        topic,
        messageId: c.messageId,
        transactionId: c.transactionId!,
        resolution: 'COMMIT',
      });
    } finally {
      await b.close();
    }
  } finally {
    dir.cleanup();
  }
});
