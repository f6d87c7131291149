import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_RETRY_POLICY,
  parseRetryPolicy,
  retryDelayMs,
  formatRetryPolicy,
} from '../../src/broker/retry-policy.js';
import { groupDefaults } from '../../src/broker/metadata.js';
import { consumerBackoff } from '../../src/protocol/handlers/client.js';
import { isVelaError } from '../../src/common/errors.js';

const S = 1000;
const M = 60 * S;

test('the default CUSTOMIZED table: 10 s, 30 s, 1 m … 2 h, then 2 h', () => {
  const expected = [
    10 * S,
    30 * S,
    M,
    2 * M,
    3 * M,
    4 * M,
    5 * M,
    6 * M,
    7 * M,
    8 * M,
    9 * M,
    10 * M,
    20 * M,
    30 * M,
    60 * M,
    120 * M,
  ];
  assert.deepEqual(
    expected.map((_, i) => retryDelayMs(DEFAULT_RETRY_POLICY, i + 1)),
    expected,
  );
  assert.equal(retryDelayMs(DEFAULT_RETRY_POLICY, 17), 120 * M, 'beyond the table the last value repeats');
  assert.equal(retryDelayMs(DEFAULT_RETRY_POLICY, 100), 120 * M);
});

test('EXPONENTIAL: initial × multiplier^(n−1), capped at max', () => {
  const p = parseRetryPolicy({
    type: 'EXPONENTIAL',
    exponentialRetryPolicy: { initial: 1000, max: 60_000, multiplier: 2 },
  });
  assert.deepEqual(
    [1, 2, 3, 4, 7, 50].map((n) => retryDelayMs(p, n)),
    [1000, 2000, 4000, 8000, 60_000, 60_000],
  );
});

test("mqadmin's JSON form parses, round-trips and bad forms are refused", () => {
  const c = parseRetryPolicy('{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[300,600]}}');
  assert.deepEqual(c, { type: 'CUSTOMIZED', next: [300, 600] });
  assert.deepEqual(parseRetryPolicy(formatRetryPolicy(c)), c);
  for (const bad of [
    'nope',
    '{"type":"LINEAR"}',
    '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[-1]}}',
    '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":10,"max":5}}',
  ]) {
    assert.throws(
      () => parseRetryPolicy(bad),
      (e) => isVelaError(e, 'ILLEGAL_GROUP_CONFIG'),
      bad,
    );
  }
});

test('Settings carry the policy in a form each client understands', () => {
  const g = {
    ...groupDefaults('G'),
    retryMaxTimes: 4,
    retryPolicy: parseRetryPolicy({
      type: 'CUSTOMIZED',
      customizedRetryPolicy: { next: [1000, 3000, 9000] },
    }),
  };
  const java = consumerBackoff(g, 'JAVA');
  assert.equal(java.max_attempts, 5);
  assert.deepEqual(
    java.customized_backoff!.next.map((d) => d.seconds),
    [1, 3, 9],
  );
  const node = consumerBackoff(g, 'NODE_JS');
  assert.equal(node.customized_backoff, undefined, 'the Node client only understands exponential');
  assert.deepEqual(node.exponential_backoff, {
    initial: { seconds: 1, nanos: 0 },
    max: { seconds: 9, nanos: 0 },
    multiplier: 3,
  });
  const fifo = consumerBackoff({ ...g, consumeMessageOrderly: true, fifoRetryIntervalMs: 2000 }, 'NODE_JS');
  assert.deepEqual(fifo.exponential_backoff, {
    initial: { seconds: 2, nanos: 0 },
    max: { seconds: 2, nanos: 0 },
    multiplier: 1,
  });
  assert.equal(fifo.max_attempts, 5);
});
