/** Client deadlines (grpc-timeout) as the gRPC transport reads them (src/protocol/transport/grpc-wire.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_TIMER_MS, deadlineOf, parseTimeout } from '../../src/protocol/transport/grpc-wire.js';

test('grpc-timeout values in every unit', () => {
  assert.equal(parseTimeout('3H'), 3 * 3_600_000);
  assert.equal(parseTimeout('20M'), 20 * 60_000);
  assert.equal(parseTimeout('5S'), 5000);
  assert.equal(parseTimeout('3000m'), 3000);
  assert.equal(parseTimeout('2500u'), 2.5);
  assert.equal(parseTimeout('99999999n'), 99.999999);
});

test('the Java client’s Telemetry deadline is beyond a timer and means no deadline; the usual ones do not', () => {
  // grpc-java sends 60 × 365 days as 31536000 minutes (the largest unit keeping ≤ 8 digits).
  const java = parseTimeout('31536000M')!;
  assert.ok(java > MAX_TIMER_MS);
  assert.equal(deadlineOf(java, 1000), Infinity);
  assert.equal(deadlineOf(parseTimeout('24H'), 1000), 1000 + 24 * 3_600_000);
  assert.equal(deadlineOf(parseTimeout('99999999m'), 0), 99_999_999);
  assert.equal(deadlineOf(undefined, 5), Infinity);
});

test('malformed values are refused (the call fails with INTERNAL)', () => {
  for (const v of ['', '5', '5X', '123456789S', 'S', '-5S']) assert.throws(() => parseTimeout(v), v);
});
