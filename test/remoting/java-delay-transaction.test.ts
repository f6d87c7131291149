/**
 * Delay and transactional messages from the Java Remoting client (rocketmq-client 5.5.0): delay
 * levels (clamped to 18 above it, as RocketMQ does) and the 5.x timer properties are scheduled on
 * Vela's timer and delivered at their time to Remoting and gRPC consumers alike; a
 * TransactionMQProducer's half messages are committed and rolled back by END_TRANSACTION, and
 * orphaned ones are resolved by its checker through CHECK_TRANSACTION_STATE.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { SimpleConsumer, type MessageView } from '../../src/index.js';
import { uniqueName, use } from '../support/harness.js';
import { javaBrokerSuite, runJava, type ProgramEvent } from './client-programs.js';

const suite = javaBrokerSuite('vela-java-special-home-', {
  transaction: { checkTimeoutMs: 1500, checkIntervalMs: 1000 },
});
const ns = suite.ns;

async function setup() {
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await suite.broker.running.broker.topics.upsert(topic, { readQueueNums: 2, writeQueueNums: 2 });
  await suite.broker.running.broker.groups.upsert(group, {});
  return { topic, group };
}

const of = (events: ProgramEvent[], event: string) => events.filter((e) => e.event === event);

/** How long after the send each kind is due (ms); the level-19 message is clamped to level 18 (2 h). */
const DELAYS: Record<string, number> = {
  'level-1': 1000,
  'level-2': 5000,
  'sec-2': 2000,
  'ms-1500': 1500,
  'deliver-2500': 2500,
  'deliver-past': 0,
};
/** Slack for a loaded machine: a delivery later than due + this fails. */
const LATE_MS = 5000;
/** The JVM's and the broker's clock reads may differ by a few milliseconds. */
const CLOCK_SLACK_MS = 50;

describe('delay and transactional messages over Remoting (Java client)', { concurrency: 2 }, () => {
  test('delay levels and TIMER_* properties: delivered at their time to Remoting and gRPC consumers', async () => {
    const { topic, group } = await setup();
    const grpcGroup = uniqueName('G');
    await suite.broker.running.broker.groups.upsert(grpcGroup, {});
    const grpc = use(
      new SimpleConsumer({
        endpoints: suite.broker.endpoints,
        group: grpcGroup,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 1000,
      }),
    );
    await grpc.start();
    const grpcGot: { m: MessageView; at: number }[] = [];
    let receiving = true;
    const grpcLoop = (async () => {
      while (receiving) {
        const batch = await grpc.receive(32, 10_000);
        const at = Date.now();
        for (const m of batch) {
          grpcGot.push({ m, at });
          await grpc.ack(m);
        }
      }
    })();

    let ev: ProgramEvent[];
    try {
      ev = await runJava(suite.home, ['delay', ns(), topic, group]);
      const until = Date.now() + 15_000;
      while (grpcGot.length < 6 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    } finally {
      receiving = false;
      await grpcLoop.catch(() => {});
      await grpc.close();
    }

    const sent = new Map(of(ev, 'sent').map((s) => [s.kind as string, s]));
    assert.equal(sent.size, 7);
    for (const s of sent.values()) assert.equal(s.status, 'SEND_OK');
    const received = of(ev, 'received');
    assert.deepEqual(
      received.map((m) => m.body).sort(),
      Object.keys(DELAYS).sort(),
      'everything but the 2 h message, once',
    );
    for (const m of received) {
      const s = sent.get(m.body as string)!;
      const waited = (m.at as number) - (s.before as number);
      const delay = DELAYS[m.body as string]!;
      assert.ok(
        waited >= delay - CLOCK_SLACK_MS,
        `${m.body as string}: delivered after ${waited} ms, due after ${delay} ms`,
      );
      assert.ok(waited < delay + LATE_MS, `${m.body as string}: delivered ${waited - delay} ms late`);
      assert.equal(m.msgId, s.msgId, 'the consumer sees the producer msgId');
      assert.equal(m.topic, topic);
      assert.equal(m.tags, 'TagD');
      const props = m.properties as Record<string, string>;
      assert.equal(props.origin, 'java');
      assert.ok(
        !('TIMER_DELIVER_MS' in props) && !('DELAY' in props),
        'the send controls are not user properties',
      );
    }

    // gRPC consumers of another group get the same messages at the same times.
    assert.deepEqual(grpcGot.map((g) => g.m.body.toString()).sort(), Object.keys(DELAYS).sort());
    for (const { m, at } of grpcGot) {
      const kind = m.body.toString();
      const s = sent.get(kind)!;
      assert.equal(m.messageId, s.msgId);
      assert.ok(at - (s.before as number) >= DELAYS[kind]! - CLOCK_SLACK_MS, `gRPC ${kind} delivered early`);
      if (DELAYS[kind]! > 0)
        assert.ok(m.deliveryTimestamp !== undefined, 'gRPC consumers see the delivery time');
    }

    // Level 19 is above the highest level: clamped to 18 (2 h), so it still waits on the timer.
    const status = await suite.broker.running.broker.timer.status(topic);
    assert.equal(status.scheduled, 1);
    const due = status.nextDueAt! - (sent.get('level-19')!.before as number);
    assert.ok(
      due >= 2 * 3600_000 - CLOCK_SLACK_MS && due < 2 * 3600_000 + 60_000,
      `level 19 is due after ${due} ms`,
    );
  });

  test('TransactionMQProducer: commit, rollback, and unknown states resolved by the checker', async () => {
    const { topic, group } = await setup();
    const ev = await runJava(suite.home, ['transaction', ns(), topic, group]);
    const sent = new Map(of(ev, 'sent').map((s) => [s.kind as string, s]));
    assert.equal(sent.get('commit')?.localState, 'COMMIT_MESSAGE');
    assert.equal(sent.get('rollback')?.localState, 'ROLLBACK_MESSAGE');
    assert.equal(sent.get('unknown-commit')?.localState, 'UNKNOW');
    for (const s of sent.values()) {
      assert.equal(s.status, 'SEND_OK');
      assert.ok(s.transactionId, 'the send result carries a transaction id');
    }

    // Only the committed messages become visible: the one ended by the client and the one the checker committed.
    const received = of(ev, 'received');
    assert.deepEqual(received.map((m) => m.body).sort(), ['commit', 'unknown-commit']);
    for (const m of received) {
      assert.equal(m.msgId, sent.get(m.body as string)!.msgId, 'the committed message keeps its msgId');
      assert.equal(m.topic, topic);
      assert.equal((m.properties as Record<string, string>).origin, 'java');
    }

    // Checks reached the producer for the two unknown transactions only: unknown-commit twice (UNKNOW,
    // then COMMIT), unknown-rollback once; each with the message as it was sent.
    const checked = of(ev, 'checked');
    assert.deepEqual(checked.map((c) => `${c.body as string}#${c.times as number}`).sort(), [
      'unknown-commit#1',
      'unknown-commit#2',
      'unknown-rollback#1',
    ]);
    for (const c of checked) {
      assert.equal(c.topic, topic);
      assert.equal(c.tags, 'TagT');
      assert.equal(c.keys, `tx-${c.body as string}`);
      assert.equal((c.properties as Record<string, string>).origin, 'java');
      assert.equal(c.transactionId, sent.get(c.body as string)!.msgId, 'the client knows it by its UNIQ_KEY');
      assert.ok(
        (c.at as number) - (sent.get(c.body as string)!.at as number) >= 500,
        'checked only once orphaned (checkTimeoutMs)',
      );
    }

    // Nothing is left open; the topic holds exactly the two committed messages.
    assert.equal(suite.broker.running.broker.transactions.status(topic).length, 0);
    const stored = [0, 1].reduce((n, q) => n + suite.broker.running.broker.queueState(topic, q).maxOffset, 0);
    assert.equal(stored, 2);
  });
});
