/**
 * SDK PushConsumer against a real broker: acks on SUCCESS, retries (delivery attempt 2) after a thrown
 * error and after a consume timeout, bounded concurrency, FIFO order per message group with groups in
 * parallel, graceful close with work in flight, and a process that exits by itself after close.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConsumeResult, Producer, PushConsumer, type MessageView } from '../../src/index.js';
import { sleep, spawnTs, waitExit } from '../helpers.js';
import { FaultProxy } from './fault-proxy.js';
import { progress, startTestBroker, unique, waitFor, type TestBroker, use, closeAll } from './support.js';

describe('PushConsumer', { concurrency: true }, () => {
  let b: TestBroker;
  let producer: Producer;
  before(async () => {
    b = await startTestBroker();
    producer = use(new Producer({ endpoints: b.endpoints }));
  });
  after(async () => {
    await closeAll();
    await producer.close();
    await b.close();
  });

  async function setup(
    opts: { fifo?: boolean; retry?: number[]; fifoRetryIntervalMs?: number; queues?: number } = {},
  ): Promise<{ topic: string; group: string }> {
    const topic = unique('PushT');
    const group = unique('PushG');
    await b.running.broker.topics.upsert(topic, {
      ...(opts.queues ? { readQueueNums: opts.queues, writeQueueNums: opts.queues } : {}),
      ...(opts.fifo ? { attributes: { 'message.type': 'FIFO' } } : {}),
    });
    await b.running.broker.groups.upsert(group, {
      ...(opts.fifo
        ? { consumeMessageOrderly: true, fifoRetryIntervalMs: opts.fifoRetryIntervalMs ?? 100 }
        : {}),
      retryPolicy: { type: 'CUSTOMIZED', next: opts.retry ?? [200, 400] },
    });
    return { topic, group };
  }

  const sendN = (topic: string, n: number, prefix = 'm') =>
    Promise.all(Array.from({ length: n }, (_, i) => producer.send({ topic, body: `${prefix}${i}` })));

  test('SUCCESS acknowledges every message exactly once', async () => {
    const { topic, group } = await setup();
    await sendN(topic, 40);
    const seen = new Map<string, number>();
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        listener: (m) => {
          seen.set(m.text(), (seen.get(m.text()) ?? 0) + 1);
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await c.start(); // idempotent
    await waitFor(() => seen.size === 40, 5000, '40 messages');
    await waitFor(() => progress(b, group, topic).inflight === 0, 3000, 'acks');
    await sleep(300);
    assert.ok(
      [...seen.values()].every((n) => n === 1),
      'no redelivery',
    );
    assert.equal(progress(b, group, topic).lag, 0);
    await c.close();
    await c.close();
  });

  test('a thrown error is a FAILURE: redelivered with delivery attempt 2 after the group interval', async () => {
    const { topic, group } = await setup({ retry: [200, 400] });
    await sendN(topic, 3, 'fail');
    const attempts = new Map<string, { attempt: number; at: number }[]>();
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        listener: (m) => {
          const list = attempts.get(m.text()) ?? [];
          list.push({ attempt: m.deliveryAttempt, at: Date.now() });
          attempts.set(m.text(), list);
          if (m.deliveryAttempt === 1) throw new Error('boom');
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await waitFor(() => [...attempts.values()].filter((l) => l.length === 2).length === 3, 5000, 'retries');
    for (const [body, list] of attempts) {
      assert.deepEqual(
        list.map((x) => x.attempt),
        [1, 2],
        body,
      );
      assert.ok(list[1]!.at - list[0]!.at >= 180, `waited the group's 200 ms (${list[1]!.at - list[0]!.at})`);
    }
    await waitFor(() => progress(b, group, topic).inflight === 0, 3000, 'settled');
    await c.close();
  });

  test('listeners started together: each runs once, and a throw fails only its own message', async () => {
    const { topic, group } = await setup({ retry: [100, 200] });
    await sendN(topic, 60, 'w');
    const attempts = new Map<string, number[]>();
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        concurrency: 4, // the receive's messages run in several microtasks, four listeners each
        listener: (m) => {
          const list = attempts.get(m.text()) ?? [];
          list.push(m.deliveryAttempt);
          attempts.set(m.text(), list);
          if (Number(m.text().slice(1)) % 3 === 0 && m.deliveryAttempt === 1) throw new Error('boom');
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await waitFor(
      () => attempts.size === 60 && [...attempts.values()].reduce((n, l) => n + l.length, 0) === 80,
      8000,
      '60 messages, 20 of them twice',
    );
    await waitFor(() => progress(b, group, topic).inflight === 0, 3000, 'settled');
    await sleep(300);
    for (const [body, list] of attempts) {
      assert.deepEqual(list, Number(body.slice(1)) % 3 === 0 ? [1, 2] : [1], body);
    }
    assert.equal(progress(b, group, topic).lag, 0);
    await c.close();
  });

  test('a body corrupted on the way fails its CRC32 digest: nacked, never handed to the listener', async () => {
    const { topic, group } = await setup({ retry: [200, 400] });
    await sendN(topic, 1, 'intact');
    const proxy = await FaultProxy.start(b.endpoints);
    try {
      proxy.corruptBodies = true;
      const seen: { body: string; attempt: number }[] = [];
      const c = use(
        new PushConsumer({
          endpoints: proxy.endpoints,
          group,
          subscriptions: { [topic]: '*' },
          listener: (m) => {
            seen.push({ body: m.text(), attempt: m.deliveryAttempt });
            return ConsumeResult.SUCCESS;
          },
        }),
      );
      await c.start();
      await waitFor(() => proxy.digestTypes.length >= 1, 5000, 'the corrupted delivery');
      proxy.corruptBodies = false;
      await waitFor(() => seen.length === 1, 5000, 'the redelivery');
      assert.deepEqual(seen, [{ body: 'intact0', attempt: 2 }]);
      assert.ok(
        proxy.digestTypes.every((t) => t === 1),
        `CRC32 digests (${proxy.digestTypes.join()})`,
      );
      await waitFor(() => progress(b, group, topic).inflight === 0, 3000, 'settled');
      await c.close();
    } finally {
      await proxy.close();
    }
  });

  test('a listener past consumeTimeoutMs is a FAILURE: its signal aborts and the message comes back', async () => {
    const { topic, group } = await setup({ retry: [100] });
    await sendN(topic, 1, 'slow');
    const calls: { attempt: number; aborted: boolean }[] = [];
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        consumeTimeoutMs: 150,
        listener: async (m, { signal }) => {
          const call = { attempt: m.deliveryAttempt, aborted: false };
          calls.push(call);
          if (m.deliveryAttempt === 1) {
            await new Promise((r) => signal.addEventListener('abort', r));
            call.aborted = true;
            return ConsumeResult.SUCCESS; // too late: ignored
          }
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await waitFor(() => calls.length === 2, 5000, 'redelivery');
    assert.deepEqual(calls, [
      { attempt: 1, aborted: true },
      { attempt: 2, aborted: false },
    ]);
    await c.close();
  });

  test('a listener that reads its signal only after its timeout finds it aborted', async () => {
    const { topic, group } = await setup({ retry: [100] });
    await sendN(topic, 1, 'late');
    const seen: { attempt: number; aborted: boolean; reason: unknown }[] = [];
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        consumeTimeoutMs: 100,
        listener: async (m, context) => {
          if (m.deliveryAttempt === 1) await sleep(300);
          seen.push({
            attempt: m.deliveryAttempt,
            aborted: context.signal.aborted,
            reason: context.signal.reason,
          });
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await waitFor(() => seen.length === 2, 5000, 'redelivery after the timeout');
    // The redelivery may run before the first attempt wakes up: look them up by attempt.
    const first = seen.find((x) => x.attempt === 1)!;
    const second = seen.find((x) => x.attempt === 2)!;
    assert.equal(first.aborted, true, 'the first attempt had timed out');
    assert.match(String((first.reason as Error).message), /consumeTimeoutMs/);
    assert.equal(second.aborted, false);
    await waitFor(() => progress(b, group, topic).inflight === 0, 3000, 'settled');
    await c.close();
  });

  test('never more than `concurrency` listeners at once', async () => {
    const { topic, group } = await setup();
    await sendN(topic, 30);
    let running = 0;
    let peak = 0;
    let done = 0;
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        concurrency: 3,
        listener: async () => {
          peak = Math.max(peak, ++running);
          await sleep(20);
          running--;
          done++;
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await waitFor(() => done === 30, 5000, '30 consumed');
    assert.equal(peak, 3);
    await c.close();
  });

  test('receiving pauses while the bodies held reach maxCachedBytes, and resumes as they are consumed', async () => {
    const { topic, group } = await setup();
    const body = Buffer.alloc(10_000, 7);
    await Promise.all(Array.from({ length: 20 }, () => producer.send({ topic, body })));
    // Listeners hold their messages until the test lets them go.
    const held: (() => void)[] = [];
    let received = 0;
    let done = 0;
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        receiveBatchSize: 2,
        receiveConcurrency: 1,
        maxCachedBytes: 30_000,
        listener: async () => {
          received++;
          await new Promise<void>((resolve) => held.push(resolve));
          done++;
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await waitFor(() => received >= 3, 5000, 'the first messages');
    await sleep(300);
    // 30,000 bytes are three bodies; the receive that crosses the line brings at most one batch of 2.
    assert.ok(received >= 3 && received <= 4, `received ${received} of 20 while 30,000 bytes are held`);
    const deadline = Date.now() + 10_000;
    while (done < 20) {
      assert.ok(Date.now() < deadline, `all 20 consumed within 10 s (${done} were)`);
      for (const release of held.splice(0)) release();
      await sleep(10);
      if (received < 20) assert.ok(received - done <= 4, `at most 4 held, got ${received - done}`);
    }
    await waitFor(() => progress(b, group, topic).inflight === 0, 3000, 'acks');
    await c.close();
  });

  test('FIFO: each message group in order, one at a time; groups in parallel; a failure holds its group', async () => {
    const { topic, group } = await setup({ fifo: true, queues: 2, fifoRetryIntervalMs: 100 });
    const groups = ['A', 'B', 'C', 'D'];
    const perGroup = 8;
    // Sends of one group are sequential (that is what orders them); groups go in parallel.
    await Promise.all(
      groups.map(async (g) => {
        for (let i = 0; i < perGroup; i++) await producer.send({ topic, body: `${g}:${i}`, messageGroup: g });
      }),
    );
    const log: { g: string; i: number; attempt: number }[] = [];
    const runningPerGroup = new Map<string, number>();
    let running = 0;
    let peak = 0;
    let overlapInGroup = false;
    let failedOnce = false;
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        concurrency: 4,
        listener: async (m: MessageView) => {
          const [g, i] = m.text().split(':') as [string, string];
          assert.equal(m.messageGroup, g);
          if ((runningPerGroup.get(g) ?? 0) > 0) overlapInGroup = true;
          runningPerGroup.set(g, (runningPerGroup.get(g) ?? 0) + 1);
          peak = Math.max(peak, ++running);
          log.push({ g, i: Number(i), attempt: m.deliveryAttempt });
          await sleep(5);
          running--;
          runningPerGroup.set(g, runningPerGroup.get(g)! - 1);
          if (g === 'A' && i === '2' && !failedOnce) {
            failedOnce = true;
            return ConsumeResult.FAILURE;
          }
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    assert.equal(c.fifo, true);
    await waitFor(() => log.length === groups.length * perGroup + 1, 8000, 'all messages');
    assert.equal(overlapInGroup, false, 'one message of a group at a time');
    assert.ok(peak >= 2, `groups ran in parallel (peak ${peak})`);
    for (const g of groups) {
      const seq = log.filter((x) => x.g === g);
      const expected = Array.from({ length: perGroup }, (_, i) => i);
      if (g === 'A') expected.splice(3, 0, 2);
      assert.deepEqual(
        seq.map((x) => x.i),
        expected,
        `order of ${g}`,
      );
      if (g === 'A')
        assert.deepEqual(
          seq.slice(2, 4).map((x) => x.attempt),
          [1, 2],
        );
    }
    await c.close();
  });

  test('close() waits for a running listener and acknowledges its message', async () => {
    const { topic, group } = await setup();
    await sendN(topic, 1, 'inflight');
    let started = false;
    let finished = false;
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        group,
        subscriptions: { [topic]: '*' },
        listener: async () => {
          started = true;
          await sleep(400);
          finished = true;
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await waitFor(() => started, 5000, 'listener start');
    const t0 = Date.now();
    await c.close();
    assert.equal(finished, true, 'close waited for the listener');
    assert.ok(Date.now() - t0 >= 300);
    const p = progress(b, group, topic);
    assert.deepEqual(p, { inflight: 0, lag: 0 }, 'the message was acknowledged, not released');
  });

  test('after close() the process exits by itself (no leaked timers, streams or channels)', async () => {
    const topic = unique('ExitT');
    const pushGroup = unique('ExitPush');
    const simpleGroup = unique('ExitSimple');
    await b.running.broker.topics.upsert(topic, {});
    await b.running.broker.groups.upsert(pushGroup, {});
    await b.running.broker.groups.upsert(simpleGroup, {});
    let closedAt = 0;
    let line = '';
    const child = spawnTs(
      new URL('./exit-child.ts', import.meta.url).pathname,
      [b.endpoints, topic, pushGroup, simpleGroup],
      (l) => {
        if (l.startsWith('CLOSED')) {
          closedAt = Date.now();
          line = l;
        }
      },
    );
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await waitExit(child);
    clearTimeout(killer);
    assert.equal(child.exitCode, 0, `child exited normally (signal ${child.signalCode})`);
    assert.equal(line, 'CLOSED 10 10');
    assert.ok(Date.now() - closedAt < 3000, `exited ${Date.now() - closedAt} ms after close`);
  });
});
