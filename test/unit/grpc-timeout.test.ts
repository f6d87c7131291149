/** The grpc-timeout header parser behind the long-deadline fix (src/protocol/grpc-timeout.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_TIMER_MS, grpcTimeoutMs } from '../../src/protocol/grpc-timeout.js';

test('grpc-timeout values in every unit', () => {
  assert.equal(grpcTimeoutMs('3H'), 3 * 3_600_000);
  assert.equal(grpcTimeoutMs('20M'), 20 * 60_000);
  assert.equal(grpcTimeoutMs('5S'), 5000);
  assert.equal(grpcTimeoutMs('3000m'), 3000);
  assert.equal(grpcTimeoutMs('2500u'), 2.5);
  assert.equal(grpcTimeoutMs('99999999n'), 99.999999);
});

test('the Java client’s Telemetry deadline is beyond a timer; the usual ones are not', () => {
  // grpc-java sends 60 × 365 days as 31536000 minutes (the largest unit keeping ≤ 8 digits).
  assert.ok(grpcTimeoutMs('31536000M')! > MAX_TIMER_MS);
  assert.ok(grpcTimeoutMs('24H')! < MAX_TIMER_MS);
  assert.ok(grpcTimeoutMs('99999999m')! < MAX_TIMER_MS);
});

test('malformed values are left to grpc-js (it answers INTERNAL)', () => {
  for (const v of ['', '5', '5X', '123456789S', 'S', '-5S']) assert.equal(grpcTimeoutMs(v), undefined, v);
});
