/**
 * The SDK's PullConsumer against a real broker: rebalancing, offsets across restarts, broadcast.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { PullConsumer, type QueueRef } from '../../src/client/pull-consumer.js';
import { tempDir, sleep } from '../helpers.js';
import { RawClient } from './raw-client.js';

async function broker(dataDir: string, grpcPort = 0): Promise<RunningBroker> {
  return startBroker({ dataDir, grpcPort, httpPort: 0, remotingPort: 0 });
}

async function fill(b: RunningBroker, topic: string, n: number, prefix = 'm'): Promise<void> {
  const c = new RawClient(`127.0.0.1:${b.grpcPort}`);
  for (let i = 0; i < n; i += 50) {
    await c.send(
      topic,
      Array.from({ length: Math.min(50, n - i) }, (_, j) => ({ body: Buffer.from(`${prefix}${i + j}`) })),
    );
  }
  c.close();
}

function consumer(
  b: RunningBroker,
  group: string,
  topic: string,
  extra: Partial<ConstructorParameters<typeof PullConsumer>[0]> = {},
): PullConsumer {
  return new PullConsumer({
    endpoints: `127.0.0.1:${b.grpcPort}`,
    group,
    subscriptions: { [topic]: '*' },
    assignmentIntervalMs: 100,
    longPollingTimeoutMs: 200,
    ...extra,
  });
}

/** Consume in the background, recording bodies, until `stop` aborts; `workMs` per message, like an application. */
function run(c: PullConsumer, seen: string[], stop: AbortSignal, workMs = 0): Promise<void> {
  return (async () => {
    for await (const m of c.messages({ signal: stop })) {
      seen.push(m.body.toString());
      if (workMs > 0) await sleep(workMs);
    }
  })();
}

const sorted = (qs: QueueRef[]) => qs.map((q) => q.queueId).sort((a, b) => a - b);

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(20);
  }
}

test(
  '8 queues, 1 → 3 → 2 consumers: each queue one owner after every rebalance, every message consumed',
  { timeout: 60_000 },
  async () => {
    const d = tempDir();
    const b = await broker(d.path);
    const stop = new AbortController();
    const opened: PullConsumer[] = [];
    const open = () => {
      // After a rebalance the new owner re-reads what the old one consumed since its last commit, and
      // both read the queue until the old owner next asks for its assignment: short commit and
      // assignment intervals keep that small however fast the client pulls.
      const c = consumer(b, 'PCG', 'PC', {
        autoCommitIntervalMs: 20,
        assignmentIntervalMs: 20,
        batchSize: 10,
      });
      opened.push(c);
      return c;
    };
    try {
      await b.broker.topics.upsert('PC', {});
      await b.broker.groups.upsert('PCG', {});
      await fill(b, 'PC', 400);
      const seen: string[] = [];
      const c1 = open();
      await c1.start();
      assert.deepEqual(sorted(c1.assignment()), [0, 1, 2, 3, 4, 5, 6, 7]);
      const r1 = run(c1, seen, stop.signal, 1);
      await until(() => seen.length >= 50);

      const c2 = open();
      const c3 = open();
      await Promise.all([c2.start(), c3.start()]);
      const r2 = run(c2, seen, stop.signal, 1);
      const r3 = run(c3, seen, stop.signal, 1);
      await until(() => {
        const all = [c1, c2, c3].flatMap((c) => sorted(c.assignment()));
        return all.length === 8 && new Set(all).size === 8;
      });
      assert.deepEqual([c1, c2, c3].map((c) => c.assignment().length).sort(), [2, 3, 3]);

      await c2.close(); // commits and leaves: its queues move at once
      await until(() => {
        const all = [c1, c3].flatMap((c) => sorted(c.assignment()));
        return all.length === 8 && new Set(all).size === 8;
      });
      // The last rebalance has settled: from here on each queue has one reader, reading forward.
      const settledAt = seen.length;
      await until(() => new Set(seen).size === 400, 15_000);
      stop.abort();
      await Promise.all([r1, r2, r3]);
      // Duplicates only around rebalances: a new owner re-reads what the old one handed out since its
      // last commit (how many depends on how long commits take: a stalling disk makes it more), but
      // nothing first handed out after the last rebalance comes twice, and with two hand-overs nothing
      // comes more than three times.
      const first = new Map<string, number>();
      const times = new Map<string, number>();
      seen.forEach((body, i) => {
        if (!first.has(body)) first.set(body, i);
        times.set(body, (times.get(body) ?? 0) + 1);
      });
      const repeated = [...times].filter(([, n]) => n > 1).map(([body]) => body);
      const late = repeated.filter((body) => first.get(body)! >= settledAt);
      assert.deepEqual(late, [], `repeated after the last rebalance (${repeated.length} repeated in all)`);
      assert.ok(Math.max(...times.values()) <= 3, 'no message handed out more than three times');
    } finally {
      // Even when an assertion failed: stop every consumer, or the test process would never exit.
      stop.abort();
      await Promise.allSettled(opened.map((c) => c.close()));
      await b.close();
      d.cleanup();
    }
  },
);

test(
  'offsets survive a consumer restart and a broker restart; manual commit',
  { timeout: 60_000 },
  async () => {
    const d = tempDir();
    let b = await broker(d.path);
    try {
      await b.broker.topics.upsert('PO', { readQueueNums: 1, writeQueueNums: 1 });
      await b.broker.groups.upsert('POG', {});
      await fill(b, 'PO', 30);
      let c = consumer(b, 'POG', 'PO', { autoCommitIntervalMs: 0, batchSize: 5 });
      const got: string[] = [];
      for await (const m of c.messages()) {
        got.push(m.body.toString());
        if (got.length === 12) break;
      }
      await c.commit(); // 12 consumed… the loop stopped after the 12th, which counts once we ask for more
      await c.close();
      const port = b.grpcPort;
      await b.close();

      b = await broker(d.path, port);
      c = consumer(b, 'POG', 'PO', { autoCommitIntervalMs: 0 });
      const rest: string[] = [];
      for await (const m of c.messages()) {
        rest.push(m.body.toString());
        if (rest.length + 11 >= 30) break;
      }
      assert.equal(rest[0], 'm11', 'resumes at the committed offset (the 12th was not yet consumed)');
      assert.equal(rest.at(-1), 'm29');
      await c.close();
    } finally {
      await b.close();
      d.cleanup();
    }
  },
);

test('broadcast: three consumers of one group each get every message', { timeout: 60_000 }, async () => {
  const d = tempDir();
  const b = await broker(d.path);
  try {
    await b.broker.topics.upsert('PB', { readQueueNums: 4, writeQueueNums: 4 });
    await b.broker.groups.upsert('PBG', {});
    await fill(b, 'PB', 60);
    const consumers = ['a', 'b', 'c'].map((name) =>
      consumer(b, 'PBG', 'PB', { broadcast: true, consumerName: name }),
    );
    const stop = new AbortController();
    const seen = consumers.map(() => [] as string[]);
    const runs = consumers.map((c, i) => run(c, seen[i]!, stop.signal));
    await until(() => seen.every((s) => new Set(s).size === 60), 15_000);
    stop.abort();
    await Promise.all(runs);
    for (const c of consumers) assert.deepEqual(sorted(c.assignment()), [0, 1, 2, 3]);
    await Promise.all(consumers.map((c) => c.close()));
  } finally {
    await b.close();
    d.cleanup();
  }
});

test('an admin reset by time reaches a running pull consumer', { timeout: 60_000 }, async () => {
  const d = tempDir();
  const b = await broker(d.path);
  try {
    await b.broker.topics.upsert('PR', { readQueueNums: 1, writeQueueNums: 1 });
    await b.broker.groups.upsert('PRG', {});
    await fill(b, 'PR', 5, 'old');
    await sleep(20);
    const since = Date.now();
    await sleep(20);
    await fill(b, 'PR', 5, 'new');
    const c = consumer(b, 'PRG', 'PR', { autoCommitIntervalMs: 50 });
    const stop = new AbortController();
    const seen: string[] = [];
    const r = run(c, seen, stop.signal);
    await until(() => seen.length === 10);
    await sleep(100);
    await b.broker.resetOffset('PRG', 'PR', { timestamp: since });
    await until(() => seen.length === 15);
    stop.abort();
    await r;
    assert.deepEqual(seen.slice(10), ['new0', 'new1', 'new2', 'new3', 'new4']);
    await c.close();
  } finally {
    await b.close();
    d.cleanup();
  }
});

test(
  'a loop left in the middle of a pull skips nothing: the next loop starts at the first message not consumed',
  { timeout: 60_000 },
  async () => {
    const d = tempDir();
    const b = await broker(d.path);
    const c = consumer(b, 'PEG', 'PE', { batchSize: 32, autoCommitIntervalMs: 0 });
    try {
      await b.broker.topics.upsert('PE', {});
      await b.broker.groups.upsert('PEG', {});
      await fill(b, 'PE', 400);
      const seen: string[] = [];
      const unique = new Set<string>();
      // Each loop stops after a few messages, in the middle of a 32-message pull, while the next pull
      // (sent by the loop ahead of time) may already be answered. A loop that gets nothing within a
      // second ends the test: every message left should have come by then.
      let rounds = 0;
      for (; unique.size < 400; rounds++) {
        let n = 0;
        for await (const m of c.messages({ signal: AbortSignal.timeout(1000) })) {
          seen.push(m.body.toString());
          unique.add(m.body.toString());
          if (++n === 5 || unique.size === 400) break;
        }
        if (n === 0) break;
      }
      assert.equal(unique.size, 400, `${400 - unique.size} messages never came after ${rounds} loops`);
      // The message a loop stopped at was not consumed: the next loop hands it out again, nothing more.
      assert.ok(seen.length - 400 <= rounds, `${seen.length - 400} repeats in ${rounds} loops`);
    } finally {
      await c.close();
      await b.close();
      d.cleanup();
    }
  },
);

test(
  'seek while pulls are on their way: what comes next is read from the new position',
  { timeout: 60_000 },
  async () => {
    const d = tempDir();
    const b = await broker(d.path);
    const c = consumer(b, 'PSG', 'PS', { batchSize: 16 });
    const stop = new AbortController();
    try {
      await b.broker.topics.upsert('PS', {});
      await b.broker.groups.upsert('PSG', {});
      await fill(b, 'PS', 160);
      const seen: { queueId: number; offset: number }[] = [];
      const loop = (async () => {
        for await (const m of c.messages({ signal: stop.signal })) {
          seen.push({ queueId: m.queueId, offset: m.queueOffset });
        }
      })();
      await until(() => seen.length >= 160);
      const queue = c.assignment()[0]!;
      const before = seen.length;
      await c.seek(queue, 3);
      // Every queue was read to its end: what arrives now is the sought queue from offset 3 on, in order.
      await until(() => seen.slice(before).filter((s) => s.queueId === queue.queueId).length >= 17);
      const again = seen
        .slice(before)
        .filter((s) => s.queueId === queue.queueId)
        .map((s) => s.offset);
      assert.deepEqual(
        again.slice(0, 17),
        Array.from({ length: 17 }, (_, i) => i + 3),
      );
      stop.abort();
      await loop;
    } finally {
      stop.abort();
      await c.close();
      await b.close();
      d.cleanup();
    }
  },
);
