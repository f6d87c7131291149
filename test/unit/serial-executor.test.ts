/** The keyed executor: one task at a time per key, in order; other keys run meanwhile. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyedExecutor, SerialExecutor } from '../../src/common/serial-executor.js';

const tick = () => new Promise((r) => setImmediate(r));

test('tasks under one key run one at a time, in submission order, across awaits', async () => {
  const ex = new KeyedExecutor<string>();
  const log: string[] = [];
  const task = (name: string) => async () => {
    log.push(`${name}:start`);
    await tick();
    await tick();
    log.push(`${name}:end`);
    return name;
  };
  const results = await Promise.all([ex.run('k', task('a')), ex.run('k', task('b')), ex.run('k', task('c'))]);
  assert.deepEqual(results, ['a', 'b', 'c']);
  assert.deepEqual(log, ['a:start', 'a:end', 'b:start', 'b:end', 'c:start', 'c:end']);
});

test('tasks under other keys are not held up', async () => {
  const ex = new KeyedExecutor<string>();
  let release!: () => void;
  const blocker = ex.run('slow', () => new Promise<void>((r) => (release = r)));
  assert.equal(await ex.run('fast', () => 'done'), 'done');
  await tick();
  assert.equal(ex.busyKeys, 1, 'only the slow key is busy');
  release();
  await blocker;
});

test('a failing task rejects its own promise only; the next one still runs', async () => {
  const ex = new KeyedExecutor<number>();
  const failed = ex.run(1, () => {
    throw new Error('boom');
  });
  const next = ex.run(1, () => 42);
  await assert.rejects(failed, /boom/);
  assert.equal(await next, 42);
});

test('an idle key holds no memory; drain waits for everything queued', async () => {
  const ex = new KeyedExecutor<string>();
  const done: string[] = [];
  for (const k of ['a', 'b', 'c']) void ex.run(k, async () => (await tick(), done.push(k)));
  assert.equal(ex.busyKeys, 3);
  await ex.drain();
  assert.deepEqual(done.sort(), ['a', 'b', 'c']);
  await tick();
  assert.equal(ex.busyKeys, 0);
});

test('SerialExecutor is the one-key case', async () => {
  const ex = new SerialExecutor();
  const log: number[] = [];
  await Promise.all(
    [1, 2, 3].map((n) =>
      ex.run(async () => {
        log.push(n);
        await tick();
        log.push(-n);
      }),
    ),
  );
  assert.deepEqual(log, [1, -1, 2, -2, 3, -3]);
});
