/**
 * Delay (scheduled) messages through the SDK against a real broker: invisible to every consumer kind
 * until due, delivered within 100 ms after, to every group; past times at once; the maximum delay;
 * recall; retry and dead letters afterwards; the admin view; restarts; an injected clock; memory.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { VelaClientError } from '../../src/index.js';
import {
  ConsumeResult,
  Admin,
  Producer,
  PullConsumer,
  PushConsumer,
  SimpleConsumer,
  type MessageView,
} from '../../src/index.js';
import { storeOf } from '../../src/internal.js';
import { ManualClock } from '../../src/common/clock.js';
import type { Broker } from '../../src/broker/broker.js';
import { TIMER_TOPIC } from '../../src/broker/timer/schedule-records.js';
import {
  startTestBroker,
  uniqueName as unique,
  waitFor,
  use,
  closeAll,
  type TestBroker,
  LOADED_SLACK_MS,
} from '../support/harness.js';
import { sleep, tempDir } from '../helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/**
 * The promise: a delay message is in its topic within this long after its delivery time (measured by
 * `npm run bench:timer`; exact with an injected clock below; loosely bounded in real time).
 */
const PRECISION_MS = 100;
/**
 * What a consumer sees also includes the append's fsync, the consume path and the client, which a
 * loaded test machine (the whole suite, two files at a time, on two shared cores) stretches to
 * hundreds of milliseconds: only a sanity bound there. Early is never allowed.
 */
const CONSUMER_SLACK_MS = 3000;

/** Every message stored in a topic's queues, in no particular order. */
async function storedIn(broker: Broker, topic: string, queues = 8) {
  const store = storeOf(broker);
  const out = [];
  for (let q = 0; q < queues; q++) {
    let offset = 0;
    for (;;) {
      const r = await store.read(topic, q, offset, { maxCount: 1000, maxBytes: 64 << 20 });
      out.push(...r.messages);
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
  }
  return out;
}

async function delayTopic(b: TestBroker, prefix: string): Promise<string> {
  const t = unique(prefix);
  await b.running.broker.topics.upsert(t, { attributes: { 'message.type': 'DELAY' } });
  return t;
}

async function group(b: TestBroker, prefix: string, retry?: number[]): Promise<string> {
  const g = unique(prefix);
  await b.running.broker.groups.upsert(g, retry ? { retryPolicy: { type: 'CUSTOMIZED', next: retry } } : {});
  return g;
}

// One test at a time: the precision test measures milliseconds, which busy neighbours would blur.
describe('delay messages', () => {
  let b: TestBroker;
  let producer: Producer;
  const now = () => b.running.broker.clock.now();
  before(async () => {
    b = await startTestBroker({ timer: { maxDelayMs: 3_600_000 } });
    producer = use(new Producer({ endpoints: b.endpoints }));
  });
  after(async () => {
    await closeAll();
    await b.close();
  });

  test('invisible to simple, push and pull consumers until due, then in its topic within 100 ms, for every group', async () => {
    // One queue: the pull consumer polls its queues in turn, and this measures the broker, not that.
    const topic = unique('DelayAll');
    await b.running.broker.topics.upsert(topic, {
      readQueueNums: 1,
      writeQueueNums: 1,
      attributes: { 'message.type': 'DELAY' },
    });
    const [gs, gp, gl] = await Promise.all([group(b, 'GS'), group(b, 'GP'), group(b, 'GL')]);
    const seen = new Map<string, Map<string, number>>([
      ['simple', new Map()],
      ['push', new Map()],
      ['pull', new Map()],
    ]);
    const record = (kind: string, m: MessageView) => {
      const at = now();
      assert.ok(!seen.get(kind)!.has(m.messageId), `${kind} received ${m.messageId} twice`);
      seen.get(kind)!.set(m.messageId, at);
    };
    const simple = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group: gs,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 3000,
      }),
    );
    const push = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group: gp,
        subscriptions: { [topic]: '*' },
        listener: (m) => {
          record('push', m);
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    const pull = use(
      new PullConsumer({
        endpoints: b.endpoints,
        group: gl,
        subscriptions: { [topic]: '*' },
        longPollingTimeoutMs: 3000,
      }),
    );
    await Promise.all([simple.start(), push.start(), pull.start()]);
    const ac = new AbortController();
    const loops = [
      (async () => {
        while (!ac.signal.aborted) {
          const ms = await simple.receive(16, 10_000, { signal: ac.signal }).catch(() => []);
          for (const m of ms) {
            record('simple', m);
            await simple.ack(m);
          }
        }
      })(),
      (async () => {
        try {
          for await (const m of pull.messages({ signal: ac.signal })) record('pull', m);
        } catch {
          // aborted
        }
      })(),
    ];
    try {
      // A producer whose route and session are ready, so that the sends take no start-up time.
      const warm = use(new Producer({ endpoints: b.endpoints, topics: [topic] }));
      await warm.start();
      const base = now();
      const due = new Map<string, number>();
      const receipts = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          warm.send({
            topic,
            body: `d${i}`,
            deliveryTimestamp: base + 1000 + i * 150,
            properties: { n: String(i) },
          }),
        ),
      );
      receipts.forEach((r, i) => {
        assert.ok(r.recallHandle, 'a delay message gets a recall handle');
        due.set(r.messageId, base + 1000 + i * 150);
      });
      // Just before the first is due, nothing is visible (each receipt is also checked against its own time).
      await sleep(Math.max(0, base + 950 - now()));
      if (now() < base + 1000) {
        for (const [kind, s] of seen) assert.equal(s.size, 0, `${kind}: nothing visible before its time`);
      }
      await waitFor(() => [...seen.values()].every((s) => s.size === 5), {
        timeoutMs: 8000,
        what: 'every group',
      });
      for (const [kind, s] of seen) {
        for (const [id, at] of s) {
          const late = at - due.get(id)!;
          assert.ok(late >= 0, `${kind}: ${id} delivered ${-late} ms early`);
          assert.ok(late <= PRECISION_MS + CONSUMER_SLACK_MS, `${kind}: ${id} delivered ${late} ms late`);
        }
      }
      // Stored once in the real topic, as sent, with its delivery time.
      const copies = await storedIn(b.running.broker, topic, 1);
      assert.equal(copies.length, 5);
      for (const c of copies) {
        assert.equal(c.deliveryTimestamp, due.get(c.messageId));
        assert.ok(c.storeTimestamp >= c.deliveryTimestamp, 'never stored before its time');
        const late = c.storeTimestamp - c.deliveryTimestamp;
        assert.ok(late <= PRECISION_MS + LOADED_SLACK_MS, `${c.messageId} stored ${late} ms after its time`);
      }
    } finally {
      ac.abort();
      await Promise.all(loops);
    }
    // What consumers see: the message as sent, its delivery time, no broker-internal property.
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group: await group(b, 'GLate'),
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 1000,
      }),
    );
    const ms = await c.receive(16, 10_000);
    assert.ok(ms.length > 0);
    for (const m of ms) {
      assert.equal(m.messageType, 'DELAY');
      assert.ok(m.deliveryTimestamp! > 0);
      assert.deepEqual(Object.keys(m.properties), ['n']);
    }
  });

  test('a delivery time in the past is delivered at once; one past the maximum delay is refused', async () => {
    const topic = await delayTopic(b, 'DelayPast');
    const r = await producer.send({ topic, body: 'past', deliveryTimestamp: now() - 60_000 });
    assert.equal(r.recallHandle, undefined, 'nothing left to recall');
    const [stored] = await b.running.broker.findMessageById(r.messageId, topic);
    assert.ok(stored, 'stored in its topic at once');
    await assert.rejects(
      producer.send({ topic, body: 'far', deliveryTimestamp: now() + 3_600_000 + 60_000 }),
      (e: VelaClientError) => {
        assert.equal(e.codeName, 'ILLEGAL_DELIVERY_TIME');
        assert.match(e.message, /longest delay is 1 h \(timer\.maxDelayMs\)/);
        return true;
      },
    );
    // RocketMQ's default maximum is 3 days.
    const d = await startTestBroker();
    try {
      const t = await delayTopic(d, 'DelayDefault');
      const p = use(new Producer({ endpoints: d.endpoints }));
      const ok = await p.send({
        topic: t,
        body: 'x',
        deliveryTimestamp: Date.now() + 3 * 86_400_000 - 60_000,
      });
      assert.ok(ok.recallHandle);
      await assert.rejects(
        p.send({ topic: t, body: 'x', deliveryTimestamp: Date.now() + 3 * 86_400_000 + 60_000 }),
        /3 d/,
      );
      await p.close();
    } finally {
      await d.close();
    }
  });

  test('types must match: a DELAY topic takes only messages with a delivery time, and only it takes them', async () => {
    const topic = await delayTopic(b, 'DelayType');
    const normal = unique('NormalT');
    await b.running.broker.topics.upsert(normal, {});
    await assert.rejects(
      producer.send({ topic, body: 'x' }),
      (e: VelaClientError) => e.codeName === 'MESSAGE_PROPERTY_CONFLICT_WITH_TYPE',
    );
    await assert.rejects(
      producer.send({ topic: normal, body: 'x', deliveryTimestamp: now() + 1000 }),
      (e: VelaClientError) => e.codeName === 'MESSAGE_PROPERTY_CONFLICT_WITH_TYPE',
    );
  });

  test('recall: a recalled message is never delivered; twice is fine; after delivery it is refused', async () => {
    const topic = await delayTopic(b, 'DelayRecall');
    const g = await group(b, 'GRecall');
    const near = await producer.send({ topic, body: 'near', deliveryTimestamp: now() + 1500 });
    const far = await producer.send({ topic, body: 'far', deliveryTimestamp: now() + 30 * 60_000 });
    const kept = await producer.send({ topic, body: 'kept', deliveryTimestamp: now() + 1500 });
    assert.deepEqual(await producer.recallMessage(topic, near.recallHandle!), { messageId: near.messageId });
    assert.deepEqual(await producer.recallMessage(topic, near.recallHandle!), { messageId: near.messageId });
    assert.deepEqual(await producer.recallMessage(topic, far.recallHandle!), { messageId: far.messageId });
    assert.equal((await b.running.broker.timer.status(topic)).scheduled, 1);
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        group: g,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 2000,
      }),
    );
    const got: string[] = [];
    await waitFor(async () => {
      for (const m of await c.receive(16, 10_000)) {
        got.push(m.text());
        await c.ack(m);
      }
      return got.length >= 1;
    }, 5000);
    await sleep(300);
    assert.deepEqual(got, ['kept']);
    await assert.rejects(producer.recallMessage(topic, kept.recallHandle!), (e: VelaClientError) => {
      assert.equal(e.codeName, 'PRECONDITION_FAILED');
      assert.match(e.message, /already delivered/);
      return true;
    });
    await assert.rejects(
      producer.recallMessage(topic, 'garbage'),
      (e: VelaClientError) => e.codeName === 'BAD_REQUEST',
    );
    const other = await delayTopic(b, 'DelayOther');
    const x = await producer.send({ topic, body: 'x', deliveryTimestamp: now() + 60_000 });
    await assert.rejects(
      producer.recallMessage(other, x.recallHandle!),
      (e: VelaClientError) => e.codeName === 'BAD_REQUEST',
    );
    await producer.recallMessage(topic, x.recallHandle!);
    const forged = Buffer.from(`v1 ${now() + 9999} 12 ${x.messageId}`).toString('base64url');
    await assert.rejects(
      producer.recallMessage(topic, forged),
      (e: VelaClientError) => e.codeName === 'NOT_FOUND',
    );
  });

  test('after delivery, the normal rules: a failed message is retried per the group policy, then dead-lettered', async () => {
    const topic = await delayTopic(b, 'DelayRetry');
    const g = unique('GRetry');
    await b.running.broker.groups.upsert(g, {
      retryMaxTimes: 1,
      retryPolicy: { type: 'CUSTOMIZED', next: [200] },
    });
    const attempts: { attempt: number; at: number }[] = [];
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group: g,
        subscriptions: { [topic]: '*' },
        listener: (m) => {
          attempts.push({ attempt: m.deliveryAttempt, at: now() });
          return ConsumeResult.FAILURE;
        },
      }),
    );
    await c.start();
    const due = now() + 300;
    const r = await producer.send({ topic, body: 'fails', deliveryTimestamp: due });
    await waitFor(() => attempts.length >= 2, 5000, 'two attempts');
    assert.deepEqual(
      attempts.map((a) => a.attempt),
      [1, 2],
    );
    assert.ok(attempts[0]!.at >= due);
    assert.ok(attempts[1]!.at - attempts[0]!.at >= 190, 'the retry waited the group interval');
    await waitFor(
      async () => (await b.running.broker.deadLetters(g)).messages.length === 1,
      5000,
      'dead letter',
    );
    const [dead] = (await b.running.broker.deadLetters(g)).messages;
    assert.equal(dead!.messageId, r.messageId);
    await c.close();
  });

  test('admin: scheduled messages per topic and the next due time, over HTTP, the SDK and the CLI', async () => {
    const topic = await delayTopic(b, 'DelayAdmin');
    const first = now() + 20 * 60_000;
    for (const at of [first + 60_000, first, first + 120_000])
      await producer.send({ topic, body: 'a', deliveryTimestamp: at });
    const res = await fetch(`${b.adminUrl}/api/timer?topic=${topic}`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      scheduled: 3,
      nextDueAt: first,
      topics: [{ topic, scheduled: 3, nextDueAt: first }],
    });
    const all = await new Admin({ url: b.adminUrl }).timerStatus();
    assert.ok(all.topics.some((t) => t.topic === topic && t.scheduled === 3 && t.nextDueAt === first));
    assert.ok(all.scheduled >= 3);
    const missing = await fetch(`${b.adminUrl}/api/timer?topic=NoSuchTopic`);
    assert.equal(missing.status, 404);
    const cli = await runCli(['admin', 'timerStatus', '-t', topic, '-n', b.adminUrl.replace('http://', '')]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, new RegExp(`${topic}\\s+3\\s+\\d{4}-\\d\\d-\\d\\d`));
    assert.match(cli.stdout, /Total scheduled: 3/);
  });

  test('memory holds only the slabs about to fall due, however many are scheduled', async () => {
    const topic = await delayTopic(b, 'DelayMany');
    const base = now() + 5 * 60_000;
    const n = 3000;
    for (let i = 0; i < n; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          producer.send({ topic, body: 'm', deliveryTimestamp: base + (i + j) * 1000 }),
        ),
      );
    }
    assert.equal((await b.running.broker.timer.status(topic)).scheduled, n);
    assert.ok(
      b.running.broker.timer.loadedEntries() < 100,
      `${b.running.broker.timer.loadedEntries()} entries in memory`,
    );
  });
});

test('the schedule index is synced and checkpointed every second, also after idle seconds', async () => {
  const b = await startTestBroker();
  try {
    const topic = await delayTopic(b, 'DelayCkpt');
    await sleep(1200); // a checkpoint with nothing to do comes first
    const p = use(new Producer({ endpoints: b.endpoints }));
    for (let i = 0; i < 3; i++) await p.send({ topic, body: 'x', deliveryTimestamp: Date.now() + 60_000 });
    const timer = b.running.broker.timer;
    await waitFor(() => timer.indexProgress.checkpointed === timer.indexProgress.indexed, {
      timeoutMs: 5000,
      what: `the checkpoint (${JSON.stringify(timer.indexProgress)})`,
    });
    assert.equal(timer.indexProgress.indexed, 3);
    await p.close();
  } finally {
    await b.close();
  }
});

test('the schedule survives a restart: nothing lost, nothing early, nothing twice', async () => {
  const dir = tempDir();
  try {
    let b = await startTestBroker({ dataDir: dir.path, keepDataDir: true });
    const topic = await delayTopic(b, 'DelayRestart');
    const p = new Producer({ endpoints: b.endpoints, topics: [topic] });
    await p.start();
    const recalled = await p.send({ topic, body: 'recalled', deliveryTimestamp: Date.now() + 60_000 });
    await p.recallMessage(topic, recalled.recallHandle!);
    const due = new Map<string, number>();
    const base = b.running.broker.clock.now();
    const ats = Array.from({ length: 40 }, (_, i) => base + 300 + i * 40); // 300 ms … 1.9 s
    const receipts = await Promise.all(
      ats.map((at, i) => p.send({ topic, body: `r${i}`, deliveryTimestamp: at })),
    );
    receipts.forEach((r, i) => due.set(r.messageId, ats[i]!));
    await p.close();
    await sleep(Math.max(0, base + 900 - b.running.broker.clock.now()));
    await b.close(); // some delivered, some not
    const delivered = (await storedInDir(dir.path, topic)).length;
    assert.ok(delivered > 0 && delivered < 40, `${delivered} delivered before the restart`);
    b = await startTestBroker({ dataDir: dir.path, keepDataDir: true });
    try {
      assert.equal((await b.running.broker.timer.status(topic)).scheduled, 40 - delivered);
      await waitFor(() => b.running.broker.timer.size === 0, 5000, 'every message delivered');
      await sleep(100);
      const copies = await storedIn(b.running.broker, topic);
      assert.equal(copies.length, 40);
      assert.deepEqual(new Set(copies.map((c) => c.messageId)), new Set(due.keys()));
      for (const c of copies) assert.ok(c.storeTimestamp >= due.get(c.messageId)!, 'never early');
    } finally {
      await b.close();
    }
  } finally {
    dir.cleanup();
  }
});

/** Messages of a topic in a closed broker's data directory. */
async function storedInDir(dataDir: string, topic: string) {
  const { MessageStore } = await import('../../src/store/index.js');
  const store = await MessageStore.open({ dataDir: `${dataDir}/store` });
  try {
    const out = [];
    for (let q = 0; q < 8; q++) {
      const r = await store.read(topic, q, 0, { maxCount: 1000 });
      out.push(...r.messages);
    }
    return out;
  } finally {
    await store.close();
  }
}

test('with an injected clock nothing waits: delivered when the clock passes the due time, not before', async () => {
  const clock = new ManualClock(Date.now());
  const b = await startTestBroker({ clock });
  try {
    const broker = b.running.broker;
    const topic = await delayTopic(b, 'DelayClock');
    const [r] = await broker.produce.send([
      { topic, messageId: 'CLOCK-1', body: Buffer.from('x'), deliveryTimestamp: clock.now() + 3_600_000 },
    ]);
    assert.ok(r && !(r instanceof Error) && r.recallHandle);
    assert.equal(broker.timer.size, 1);
    clock.advance(3_600_000 - 1);
    broker.timer.wake();
    await sleep(50);
    assert.equal((await storedIn(broker, topic)).length, 0, 'not a millisecond early');
    assert.equal((await storedIn(broker, TIMER_TOPIC, 1)).length, 1);
    clock.advance(1);
    broker.timer.wake();
    await waitFor(async () => (await storedIn(broker, topic)).length === 1, 2000, 'delivery');
    assert.equal(broker.timer.size, 0);
  } finally {
    await b.close();
  }
});

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}
