/**
 * The interop matrix for one official 5.x client: a broker in-process, topics and groups created
 * through the admin API, the client's program (build.ts) run once with every scenario, and node:test
 * assertions on its JSON results and on what the broker stored. The same scenarios, bodies and
 * result fields are implemented by every program (test/interop/{java,go,python}).
 */
import { after, before, describe, test, type TestContext } from 'node:test';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import {
  Admin,
  type AdminCredentials,
  type GroupInput,
  type TopicMessageType,
} from '../../../src/client/index.js';
import type { StartBrokerOptions } from '../../../src/server.js';
import { startTestBroker, uniqueName, type TestBroker } from '../../support/harness.js';
import { MIN_INVISIBLE_MS, progressOf, simpleConsumer } from '../support.js';
import { CACHE_DIR, clientProgram, type Language } from './build.js';
import {
  runProgram,
  type Connection,
  type ProgramRun,
  type ScenarioResult,
  type ScenarioRun,
} from './run.js';

const INVALID_RECEIPT_HANDLE = 40013;
const PRECONDITION_FAILED = 42800;
/** The push consumers' long poll (their shutdown waits for the one in flight). */
const MAX_POLL_MS = 2000;
/** Slack for timings on a shared 2-core machine. */
const SLACK_MS = 1500;
const PUSH_RETRY_POLICY_MS = [1000, 2000];
const FIFO_RETRY_INTERVAL_MS = 500;
/** Orphaned transactions are checked this long after they were stored, then at this interval. */
const TX_CHECK_TIMEOUT_MS = 2000;
const TX_CHECK_INTERVAL_MS = 500;
/**
 * How late a delay message may be stored in its topic and received after its time, or an orphan
 * checked after its check is due. Vela's timer appends a delay message within 100 ms
 * (docs/broker.md); the bound is generous for a loaded machine.
 */
const DELAY_LATE_MS = 3000;

interface Sent {
  messageId: string;
  body: string;
  tag?: string;
  keys?: string[];
  messageGroup?: string;
  properties?: Record<string, string>;
}

interface View {
  messageId: string;
  topic: string;
  body: string;
  tag: string | null;
  keys: string[];
  messageGroup: string | null;
  properties: Record<string, string>;
  deliveryAttempt: number;
  bornTimestamp: number;
}

interface Call extends View {
  atMs: number;
  result: 'SUCCESS' | 'FAILURE' | 'INTERRUPTED';
}

interface Outcome {
  ok: boolean;
  code?: number | null;
  error?: string;
}

/**
 * Behaviours of the official clients that differ from one another (docs/compatibility.md lists
 * them with their cause); the assertions hold each client to its own documented behaviour.
 */
interface ClientQuirks {
  /** SimpleConsumer ack reports success even when the broker refuses it (the status is not checked). */
  ackRefusalReportedAsSuccess: boolean;
  /** A FIFO push consumer's local retry shows the same delivery attempt as the failed call. */
  fifoLocalRetryKeepsAttempt: boolean;
  /** Longest push consumer close (shutdown) expected against the test broker. */
  pushCloseMs: number;
}

const QUIRKS: Record<Language, ClientQuirks> = {
  java: { ackRefusalReportedAsSuccess: false, fifoLocalRetryKeepsAttempt: false, pushCloseMs: 5000 },
  // GracefulStop waits request timeout (3 s) + long poll (2 s here) whenever a poll came back empty
  // (its in-flight counter misses MESSAGE_NOT_FOUND), then sleeps 1 s.
  go: {
    ackRefusalReportedAsSuccess: true,
    fifoLocalRetryKeepsAttempt: false,
    pushCloseMs: 3000 + MAX_POLL_MS + 1000 + 2500,
  },
  python: { ackRefusalReportedAsSuccess: false, fifoLocalRetryKeepsAttempt: true, pushCloseMs: 5000 },
};

interface Setup {
  topicType?: TopicMessageType;
  group?: GroupInput;
}

/** Every scenario, with the topic type and group configuration it needs. */
const SCENARIOS: Record<string, Setup> = {
  'producer-normal': {},
  'producer-fifo': { topicType: 'FIFO' },
  'producer-keys': {},
  'producer-tags': {},
  'producer-properties': {},
  'producer-delay': { topicType: 'DELAY' },
  'producer-transaction': { topicType: 'TRANSACTION' },
  'simple-receive': {},
  'simple-ack': {},
  'simple-change-invisible': {},
  'simple-redelivery': {},
  'simple-dlq': { group: { retryMaxTimes: 2 } },
  'push-success': {},
  'push-retry': {
    group: {
      retryMaxTimes: 3,
      groupRetryPolicy: { type: 'CUSTOMIZED', customizedRetryPolicy: { next: PUSH_RETRY_POLICY_MS } },
    },
  },
  'push-fifo': {
    topicType: 'FIFO',
    group: { consumeMessageOrderly: true, fifoRetryIntervalMs: FIFO_RETRY_INTERVAL_MS, retryMaxTimes: 3 },
  },
  'push-shutdown': {},
  // Access control only: the topic is one the user has no right to.
  'acl-refused': {},
};

/** Scenarios that only make sense in some modes. */
const MODE_SCENARIOS = new Set(['acl-refused']);

/**
 * How the matrix runs: the broker's settings, the program's connection (TLS, credentials) and
 * environment, what is set up before it runs, and the scenarios it runs (each mode adds only the
 * rows that add coverage, to keep `npm test` short).
 */
export interface MatrixMode {
  name: string;
  connection(endpoint: string): Connection;
  /** Broker settings of this mode. */
  broker?: Partial<StartBrokerOptions>;
  /** The scenarios run. @defaultValue every scenario not specific to a mode */
  scenarios?: readonly string[];
  /** Environment of the client program (it may depend on the broker, e.g. its certificate). */
  env?: Record<string, string> | ((broker: TestBroker) => Record<string, string>);
  /** Credentials the admin API needs in this mode. */
  admin?: AdminCredentials;
  /** Runs once topics and groups exist, before the program (e.g. users and ACLs). */
  prepare?(ctx: { admin: Admin; broker: TestBroker; runs: ReadonlyMap<string, ScenarioRun> }): Promise<void>;
  /** Mode-specific assertions, after the scenarios' own. */
  checks?(ctx: ModeChecks): void;
}

/** What a mode's checks get: the run, and how to define a test of it. */
export interface ModeChecks {
  language: Language;
  broker: () => TestBroker;
  admin: () => Admin;
  run: (scenario: string) => ScenarioRun;
  result: (scenario: string) => ScenarioResult;
  test: (name: string, fn: () => void | Promise<void>) => void;
}

export const PLAINTEXT: MatrixMode = { name: 'plaintext', connection: (endpoint) => ({ endpoint }) };

export function officialClientMatrix(language: Language, mode: MatrixMode = PLAINTEXT): void {
  const quirks = QUIRKS[language];
  const selected = new Set(mode.scenarios ?? Object.keys(SCENARIOS).filter((s) => !MODE_SCENARIOS.has(s)));
  describe(`interop: official ${language} client (${mode.name})`, () => {
    /** A test of one scenario's result, defined only when the mode runs that scenario. */
    const scenarioTest = (scenario: string, name: string, fn: (t: TestContext) => void | Promise<void>) => {
      if (selected.has(scenario)) test(name, fn);
    };
    /** The client's log files: kept after the run (gitignored), replaced by the next run. */
    const logDir = join(CACHE_DIR, 'logs', `${language}-${mode.name}`);
    let b: TestBroker;
    let admin: Admin;
    let runs: Map<string, ScenarioRun>;
    let program: ProgramRun;

    before(async () => {
      // Build (or reuse) the program first: a build failure is the clearest message.
      const client = await clientProgram(language);
      rmSync(logDir, { recursive: true, force: true });
      mkdirSync(logDir, { recursive: true });
      b = await startTestBroker({
        ...mode.broker,
        consume: { minInvisibleMs: MIN_INVISIBLE_MS, maxPollMs: MAX_POLL_MS },
        transaction: { checkTimeoutMs: TX_CHECK_TIMEOUT_MS, checkIntervalMs: TX_CHECK_INTERVAL_MS },
      });
      admin = new Admin({ url: b.adminUrl, ...(mode.admin ? { credentials: mode.admin } : {}) });
      runs = new Map();
      for (const [scenario, setup] of Object.entries(SCENARIOS)) {
        if (!selected.has(scenario)) continue;
        const tag = scenario.replace(/-/g, '_');
        const topic = uniqueName(`${language}_${tag}`);
        const group = uniqueName(`G_${language}_${tag}`);
        await admin.createTopic(topic, { messageType: setup.topicType ?? 'NORMAL' });
        await admin.createGroup(group, setup.group ?? {});
        runs.set(scenario, { scenario, topic, group });
      }
      await mode.prepare?.({ admin, broker: b, runs });
      program = await runProgram(client, mode.connection(b.endpoints), [...runs.values()], {
        logDir,
        timeoutMs: 90_000,
        ...(mode.env ? { env: typeof mode.env === 'function' ? mode.env(b) : mode.env } : {}),
      });
    });

    after(async () => {
      await b?.close();
    });

    /** The scenario's result, or a failure that shows why and what the program printed. */
    function result(scenario: string): ScenarioResult {
      const r = program.results.get(scenario);
      const context = () =>
        `\n--- ${language} program (exit ${program.exitCode} ${program.signal ?? ''}), client logs in ${logDir}:\n` +
        program.output.slice(-6000);
      assert.ok(r, `no result for ${scenario}${context()}`);
      assert.equal(r.ok, true, `${scenario} failed: ${r.error}${context()}`);
      return r;
    }
    const run = (scenario: string) => runs.get(scenario)!;

    async function stored(id: string, topic: string) {
      const found = await admin.queryMessageById(id, topic);
      assert.equal(found.length, 1, `message ${id} stored once in ${topic}`);
      const m = found[0]!;
      return { ...m, bodyText: Buffer.from(m.body, 'base64').toString('utf8') };
    }

    test('the program exits cleanly', () => {
      assert.equal(
        program.exitCode,
        0,
        `exit ${program.exitCode} ${program.signal ?? ''}\n${program.output.slice(-4000)}`,
      );
    });

    // ---- producer ----------------------------------------------------------------------------

    scenarioTest(
      'producer-normal',
      'producer: normal messages are stored under the client’s message ids',
      async () => {
        const { topic } = run('producer-normal');
        const sent = result('producer-normal').sent as Sent[];
        assert.equal(sent.length, 5);
        assert.equal(new Set(sent.map((s) => s.messageId)).size, 5, 'distinct ids');
        for (const s of sent) {
          const m = await stored(s.messageId, topic);
          assert.equal(m.bodyText, s.body);
          assert.equal(m.messageType, 'NORMAL');
          assert.ok(m.bornHost.length > 0, 'born host');
          assert.ok(Math.abs(m.bornTimestamp - Date.now()) < 120_000, 'born timestamp');
        }
      },
    );

    scenarioTest(
      'producer-fifo',
      'producer: FIFO messages keep their message group, one queue per group, in order',
      async () => {
        const { topic } = run('producer-fifo');
        const sent = result('producer-fifo').sent as Sent[];
        assert.equal(sent.length, 12);
        const byGroup = new Map<string, { queueId: number; queueOffset: number; seq: number }[]>();
        for (const s of sent) {
          const m = await stored(s.messageId, topic);
          assert.equal(m.bodyText, s.body);
          assert.equal(m.messageType, 'FIFO');
          assert.equal(m.messageGroup, s.messageGroup);
          const seq = Number(s.body.split('#')[1]);
          byGroup.set(m.messageGroup!, [...(byGroup.get(m.messageGroup!) ?? []), { ...m, seq }]);
        }
        assert.equal(byGroup.size, 3);
        for (const [g, msgs] of byGroup) {
          assert.equal(new Set(msgs.map((m) => m.queueId)).size, 1, `group ${g} in one queue`);
          const bySeq = [...msgs].sort((x, y) => x.seq - y.seq).map((m) => m.queueOffset);
          assert.deepEqual(
            bySeq,
            [...bySeq].sort((x, y) => x - y),
            `group ${g} stored in send order`,
          );
        }
      },
    );

    scenarioTest('producer-keys', 'producer: keys are stored and indexed', async () => {
      const { topic } = run('producer-keys');
      const sent = result('producer-keys').sent as Sent[];
      assert.equal(sent.length, 3);
      for (const s of sent) {
        const m = await stored(s.messageId, topic);
        assert.deepEqual([...m.keys].sort(), [...s.keys!].sort());
        for (const key of s.keys!) {
          const found = await admin.queryMessageByKey(key, { topic });
          assert.deepEqual(
            found.map((f) => f.messageId),
            [s.messageId],
            `lookup by key ${key}`,
          );
        }
      }
    });

    scenarioTest('producer-tags', 'producer: tags are stored', async () => {
      const { topic } = run('producer-tags');
      const sent = result('producer-tags').sent as Sent[];
      assert.equal(sent.length, 4);
      for (const s of sent) assert.equal((await stored(s.messageId, topic)).tag, s.tag);
    });

    scenarioTest('producer-properties', 'producer: user properties are stored as sent', async () => {
      const { topic } = run('producer-properties');
      const sent = result('producer-properties').sent as Sent[];
      assert.equal(sent.length, 1);
      const s = sent[0]!;
      const m = await stored(s.messageId, topic);
      for (const [k, v] of Object.entries(s.properties!)) assert.equal(m.properties[k], v, `property ${k}`);
    });

    scenarioTest(
      'producer-delay',
      'producer: a delay message is stored in its topic and received at its delivery time, not before; recall cancels one before its time',
      async (t) => {
        const { topic, group } = run('producer-delay');
        const r = result('producer-delay');
        const due = r.deliveryTimestamp as number;
        const kept = r.kept as Sent & { recallHandle: string };
        const gone = r.gone as Sent & { recallHandle: string };
        assert.ok(kept.recallHandle && gone.recallHandle, 'a recall handle in each receipt');
        const recall = r.recall as { messageId?: string; atMs?: number; error?: string };
        assert.equal(
          recall.messageId,
          gone.messageId,
          `the recall answers the message id ${recall.error ?? ''}`,
        );
        assert.ok(recall.atMs! < due, 'recalled before its time');
        assert.ok((r.firstPollMs as number) < due, 'the consumer was receiving before the delivery time');

        const received = r.received as (View & { deliveryTimestamp: number | null; receivedAtMs: number })[];
        assert.deepEqual(
          received.map((m) => m.messageId),
          [kept.messageId],
          'the kept message, once; never the recalled one',
        );
        const m = received[0]!;
        assert.equal(m.body, 'delay-kept');
        assert.equal(m.topic, topic);
        assert.equal(m.deliveryAttempt, 1);
        assert.equal(m.deliveryTimestamp, due, 'the delivery time the client set');

        // The broker's side: appended to its topic (visible to consumers) at its time, not before.
        const s = await stored(kept.messageId, topic);
        assert.equal(s.bodyText, 'delay-kept');
        t.diagnostic(
          `due ${due}: stored in its topic +${s.storeTimestamp - due} ms, received +${m.receivedAtMs - due} ms ` +
            `(${String(r.emptyPolls)} empty polls before)`,
        );
        assert.ok(
          s.storeTimestamp >= due,
          `stored in its topic ${due - s.storeTimestamp} ms before its time`,
        );
        assert.ok(
          s.storeTimestamp <= due + DELAY_LATE_MS,
          `stored ${s.storeTimestamp - due} ms after its time`,
        );
        assert.ok(m.receivedAtMs >= due, `received ${due - m.receivedAtMs} ms before its time`);
        assert.ok(
          m.receivedAtMs <= due + DELAY_LATE_MS,
          `received ${m.receivedAtMs - due} ms after its time`,
        );
        assert.deepEqual(
          await admin.queryMessageById(gone.messageId, topic),
          [],
          'the recalled one is not in its topic',
        );
        assert.deepEqual((await admin.timerStatus(topic)).scheduled, 0, 'nothing left waiting');

        const late = r.recallAfterDelivery as Outcome;
        assert.equal(late.ok, false, 'recalling a delivered message is refused');
        assert.equal(late.code, PRECONDITION_FAILED, late.error);
        assert.deepEqual(progressOf(b, group, topic), { lag: 0, inflight: 0, ready: 0, brokerOffsets: 1 });
      },
    );

    scenarioTest(
      'producer-transaction',
      'producer: a committed transaction is delivered once, a rolled-back one never; the checker resolves orphans',
      async (t) => {
        const { topic, group } = run('producer-transaction');
        const r = result('producer-transaction');
        const sent = r.sent as (Sent & { sendStartMs: number })[];
        const sentOf = (body: string) => sent.find((s) => s.body === body)!;
        assert.deepEqual(r.beforeEnd, [], 'half messages are invisible');

        const received = r.received as View[];
        assert.deepEqual(
          received.map((m) => m.body).sort(),
          ['tx-commit', 'tx-orphan-commit'],
          'the committed messages, each once',
        );
        for (const m of received) {
          assert.equal(m.messageId, sentOf(m.body).messageId);
          assert.equal(m.topic, topic);
          assert.equal(m.deliveryAttempt, 1);
        }

        // The broker checked the orphans (and only them) after their check timeout; the checker's
        // answer ended them. An answer slower than the check interval (a loaded machine) is met by
        // another check, as in RocketMQ: the checker answers the same again.
        const checks = r.checks as { messageId: string; topic: string; body: string; atMs: number }[];
        t.diagnostic(
          `checks: ${checks.map((c) => `${c.body} +${c.atMs - sentOf(c.body).sendStartMs} ms`).join(', ')}`,
        );
        assert.deepEqual(
          [...new Set(checks.map((c) => c.body))].sort(),
          ['tx-orphan-commit', 'tx-orphan-rollback'],
          'only the transactions left open are checked',
        );
        for (const c of checks) {
          const s = sentOf(c.body);
          assert.equal(c.messageId, s.messageId);
          assert.equal(c.topic, topic);
          assert.ok(
            c.atMs - s.sendStartMs >= TX_CHECK_TIMEOUT_MS,
            `${c.body} checked before its check timeout`,
          );
        }
        for (const body of ['tx-orphan-commit', 'tx-orphan-rollback']) {
          const first = Math.min(...checks.filter((c) => c.body === body).map((c) => c.atMs));
          assert.ok(
            first - sentOf(body).sendStartMs <= TX_CHECK_TIMEOUT_MS + TX_CHECK_INTERVAL_MS + DELAY_LATE_MS,
            `${body} checked late`,
          );
        }

        for (const body of ['tx-commit', 'tx-orphan-commit']) {
          const s = await stored(sentOf(body).messageId, topic);
          assert.equal(s.bodyText, body);
        }
        for (const body of ['tx-rollback', 'tx-orphan-rollback']) {
          assert.deepEqual(
            await admin.queryMessageById(sentOf(body).messageId, topic),
            [],
            `${body} not in its topic`,
          );
        }
        assert.equal((await admin.transactionStatus(topic)).open, 0, 'no transaction left open');
        assert.deepEqual(progressOf(b, group, topic), { lag: 0, inflight: 0, ready: 0, brokerOffsets: 2 });
      },
    );

    // ---- simple consumer ---------------------------------------------------------------------

    scenarioTest(
      'simple-receive',
      'simple consumer: receive with a tag filter gets the matching messages and their fields',
      () => {
        const { topic, group } = run('simple-receive');
        const r = result('simple-receive');
        const sent = r.sent as Sent[];
        const received = r.received as View[];
        const wanted = sent.filter((s) => s.tag === 'TagA');
        assert.deepEqual(
          received.map((m) => m.messageId).sort(),
          wanted.map((s) => s.messageId).sort(),
          'exactly the TagA messages',
        );
        for (const m of received) {
          const i = Number(m.body.split('-')[1]);
          assert.equal(m.body, `receive-${i}`);
          assert.equal(m.topic, topic);
          assert.equal(m.tag, 'TagA');
          assert.deepEqual(m.keys, [`rk-${i}`]);
          assert.equal(m.properties.seq, String(i));
          assert.equal(m.deliveryAttempt, 1);
          assert.ok(!m.messageGroup, 'no message group on a normal message');
          assert.ok(Math.abs(m.bornTimestamp - Date.now()) < 120_000, 'born timestamp');
        }
        assert.equal(r.afterwards, 0, 'the TagB message is filtered out');
        assert.equal(progressOf(b, group, topic).inflight, 0, 'all acked');
      },
    );

    scenarioTest(
      'simple-ack',
      'simple consumer: ack settles the message; a second ack is refused with INVALID_RECEIPT_HANDLE',
      () => {
        const { topic, group } = run('simple-ack');
        const r = result('simple-ack');
        assert.equal((r.received as View[])[0]!.messageId, (r.sent as Sent[])[0]!.messageId);
        assert.deepEqual(r.ack, { ok: true });
        const second = r.secondAck as Outcome;
        if (quirks.ackRefusalReportedAsSuccess) {
          // The broker refuses it (the other clients show the code); this client does not look.
          assert.equal(second.ok, true, 'this client reports every ack as a success');
        } else {
          assert.equal(second.ok, false, 'second ack refused');
          assert.equal(second.code, INVALID_RECEIPT_HANDLE, second.error);
        }
        assert.equal(r.afterwards, 0, 'nothing comes back after the ack');
        assert.deepEqual(progressOf(b, group, topic), { lag: 0, inflight: 0, ready: 0, brokerOffsets: 1 });
      },
    );

    scenarioTest(
      'simple-change-invisible',
      'simple consumer: changeInvisibleDuration — the new handle acks; a shorter time brings it back',
      () => {
        const { topic, group } = run('simple-change-invisible');
        const r = result('simple-change-invisible');
        assert.deepEqual(r.ackAfterChange, { ok: true }, 'ack after a change uses the returned handle');
        const m = r.redelivered as View & { sinceChangeStartMs: number; sinceChangeEndMs: number };
        assert.equal(m.body, 'change-back');
        assert.equal(m.deliveryAttempt, 2);
        assert.ok(
          m.sinceChangeStartMs >= 1000,
          `back ${m.sinceChangeStartMs} ms after the change (1000 asked)`,
        );
        assert.ok(
          m.sinceChangeEndMs <= 1000 + SLACK_MS,
          `back ${m.sinceChangeEndMs} ms after the change returned`,
        );
        assert.equal(r.afterwards, 0);
        assert.equal(progressOf(b, group, topic).inflight, 0);
      },
    );

    scenarioTest(
      'simple-redelivery',
      'simple consumer: an unacked message is redelivered after its invisible time, attempt 2',
      () => {
        const r = result('simple-redelivery');
        const sent = (r.sent as Sent[])[0]!;
        const first = r.first as View;
        const second = r.second as View & { sinceReceiveStartMs: number; sinceReceiveEndMs: number };
        assert.equal(first.messageId, sent.messageId);
        assert.equal(first.deliveryAttempt, 1);
        assert.equal(second.body, sent.body);
        assert.equal(second.deliveryAttempt, 2);
        // A retry is a new message that names the original (docs/broker.md, retries).
        assert.equal(second.properties.ORIGIN_MESSAGE_ID, sent.messageId);
        assert.ok(second.sinceReceiveStartMs >= 1000, `redelivered after ${second.sinceReceiveStartMs} ms`);
        assert.ok(
          second.sinceReceiveEndMs <= 1000 + SLACK_MS,
          `redelivered ${second.sinceReceiveEndMs} ms late`,
        );
        const stale = r.staleAck as Outcome;
        if (quirks.ackRefusalReportedAsSuccess) {
          assert.equal(stale.ok, true, 'this client reports every ack as a success');
        } else {
          assert.equal(stale.ok, false, 'the expired delivery’s handle no longer acks');
          assert.equal(stale.code, INVALID_RECEIPT_HANDLE, stale.error);
        }
      },
    );

    scenarioTest(
      'simple-dlq',
      'simple consumer: after max attempts the message is in the DLQ, readable by the same client',
      async () => {
        const { group } = run('simple-dlq');
        const r = result('simple-dlq');
        const sent = (r.sent as Sent[])[0]!;
        const deliveries = r.deliveries as View[];
        assert.deepEqual(
          deliveries.map((d) => d.deliveryAttempt),
          [1, 2, 3],
          'retryMaxTimes 2: three deliveries, then none',
        );
        assert.ok(deliveries.every((d) => d.body === sent.body));
        const dlq = r.dlq as View[];
        assert.equal(dlq.length, 1, 'the dead letter is consumable');
        assert.equal(dlq[0]!.body, sent.body);
        assert.equal(dlq[0]!.messageId, sent.messageId, 'a dead letter keeps its original id');
        const page = await admin.deadLetters(group);
        assert.deepEqual(
          page.messages.map((m) => m.originMessageId),
          [sent.messageId],
        );
      },
    );

    // ---- push consumer -----------------------------------------------------------------------

    async function assertNoConsumers(group: string): Promise<void> {
      const left = (await admin.consumerConnection(group)).filter((c) => c.clientType === 'PUSH_CONSUMER');
      assert.deepEqual(left, [], 'the push consumer ended its session');
    }

    scenarioTest(
      'push-success',
      'push consumer: SUCCESS acks every message once; close() returns promptly',
      async (t) => {
        const { topic, group } = run('push-success');
        const r = result('push-success');
        const sent = r.sent as Sent[];
        const calls = r.calls as Call[];
        assert.equal(calls.length, 10, 'each message consumed once');
        assert.deepEqual(calls.map((c) => c.messageId).sort(), sent.map((s) => s.messageId).sort());
        for (const c of calls) {
          assert.equal(c.deliveryAttempt, 1);
          assert.equal(c.tag, 'T');
          assert.equal(c.body, sent.find((s) => s.messageId === c.messageId)!.body);
        }
        t.diagnostic(`close took ${String(r.closeMs)} ms`);
        assert.ok(Number(r.closeMs) < quirks.pushCloseMs, `close took ${String(r.closeMs)} ms`);
        assert.deepEqual(progressOf(b, group, topic), { lag: 0, inflight: 0, ready: 0, brokerOffsets: 10 });
        await assertNoConsumers(group);
      },
    );

    scenarioTest(
      'push-retry',
      'push consumer: FAILURE is retried on the group’s retry policy until SUCCESS',
      () => {
        const { topic, group } = run('push-retry');
        const calls = result('push-retry').calls as Call[];
        for (const body of ['retry-0', 'retry-1']) {
          const mine = calls.filter((c) => c.body === body);
          assert.deepEqual(
            mine.map((c) => [c.deliveryAttempt, c.result]),
            [
              [1, 'FAILURE'],
              [2, 'FAILURE'],
              [3, 'SUCCESS'],
            ],
            `deliveries of ${body}`,
          );
          for (let i = 1; i < mine.length; i++) {
            const gap = mine[i]!.atMs - mine[i - 1]!.atMs;
            const policy = PUSH_RETRY_POLICY_MS[i - 1]!;
            assert.ok(
              gap >= policy - 100,
              `${body}: attempt ${i + 1} came ${gap} ms after attempt ${i} (policy ${policy} ms)`,
            );
            assert.ok(
              gap <= policy + MAX_POLL_MS + SLACK_MS,
              `${body}: attempt ${i + 1} came ${gap} ms late`,
            );
          }
        }
        assert.deepEqual(progressOf(b, group, topic), { lag: 0, inflight: 0, ready: 0, brokerOffsets: 2 });
      },
    );

    scenarioTest(
      'push-fifo',
      'push consumer: FIFO group consumes each message group in order, retrying in place',
      () => {
        const { topic, group } = run('push-fifo');
        const calls = result('push-fifo').calls as Call[];
        for (const g of ['Order-001', 'Order-002', 'Account-Alice']) {
          const mine = calls.filter((c) => c.messageGroup === g);
          assert.deepEqual(
            mine.map((c) => [c.body, c.deliveryAttempt, c.result]),
            [
              [`${g}#0`, 1, 'SUCCESS'],
              [`${g}#1`, 1, 'FAILURE'],
              [`${g}#1`, quirks.fifoLocalRetryKeepsAttempt ? 1 : 2, 'SUCCESS'],
              [`${g}#2`, 1, 'SUCCESS'],
              [`${g}#3`, 1, 'SUCCESS'],
            ],
            `consumption of ${g}`,
          );
          const gap = mine[2]!.atMs - mine[1]!.atMs;
          assert.ok(gap >= FIFO_RETRY_INTERVAL_MS - 100, `${g}: retried ${gap} ms after the failure`);
        }
        assert.equal(progressOf(b, group, topic).lag, 0);
        assert.equal(progressOf(b, group, topic).inflight, 0);
      },
    );

    scenarioTest(
      'push-shutdown',
      'push consumer: graceful shutdown acks what it consumed and releases the rest',
      async (t) => {
        const { topic, group } = run('push-shutdown');
        const r = result('push-shutdown');
        const sent = r.sent as Sent[];
        const calls = r.calls as Call[];
        const done = new Set(calls.filter((c) => c.result === 'SUCCESS').map((c) => c.body));
        assert.ok(done.size >= 2, `consumed ${done.size} before close`);
        t.diagnostic(`close took ${String(r.closeMs)} ms`);
        assert.ok(Number(r.closeMs) < quirks.pushCloseMs, `close took ${String(r.closeMs)} ms`);
        await assertNoConsumers(group);
        // Everything not consumed is available to the group again; nothing consumed comes back.
        const c = await simpleConsumer(b, group, topic, { awaitDuration: 1000 });
        const rest: string[] = [];
        try {
          const until = Date.now() + 15_000;
          while (done.size + rest.length < sent.length && Date.now() < until) {
            for (const m of await c.receive(32, 30_000)) {
              rest.push(m.body.toString());
              await c.ack(m);
            }
          }
          assert.deepEqual(await c.receive(32, 30_000), [], 'nothing else');
        } finally {
          await c.shutdown();
        }
        assert.deepEqual(
          rest.filter((body) => done.has(body)),
          [],
          'a message consumed before close is not delivered again',
        );
        assert.deepEqual([...done, ...rest].sort(), sent.map((s) => s.body).sort(), 'no message lost');
      },
    );

    mode.checks?.({
      language,
      broker: () => b,
      admin: () => admin,
      run,
      result,
      test: (name, fn) => test(name, fn),
    });
  });
}
