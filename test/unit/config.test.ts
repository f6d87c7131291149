/** The one resolver: defaults under any subset, every value checked, the result frozen. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS, resolveConfig } from '../../src/common/config.js';
import { isVelaError } from '../../src/common/errors.js';

test('defaults fill whatever is not given; the result is deeply frozen', () => {
  const c = resolveConfig({ dataDir: '/d', grpcPort: 0, consume: { maxBatch: 16 } });
  assert.equal(c.dataDir, '/d');
  assert.deepEqual(c.grpcPorts, [0]);
  assert.equal(c.consume.maxBatch, 16);
  assert.equal(c.consume.maxPollMs, DEFAULTS.consume.maxPollMs);
  assert.equal(c.store.segmentSize, 256 * 1024 * 1024);
  assert.ok(Object.isFrozen(c) && Object.isFrozen(c.consume) && Object.isFrozen(c.grpcPorts));
  assert.deepEqual(resolveConfig({}), DEFAULTS);
});

test('bad values and unknown keys are ILLEGAL_CONFIG, naming the key', () => {
  const refuses = (input: object, pattern: RegExp) =>
    assert.throws(
      () => resolveConfig(input as never),
      (err: unknown) => isVelaError(err, 'ILLEGAL_CONFIG') && pattern.test((err as Error).message),
    );
  refuses({ consume: { maxBatch: 0 } }, /"consume\.maxBatch" must be ≥ 1/);
  refuses({ consume: { maxBatch: 1.5 } }, /whole number/);
  refuses({ store: { diskRefuseRatio: 1.5 } }, /"store\.diskRefuseRatio" must be ≤ 1/);
  refuses({ store: { retention: 1 } }, /unknown key "store\.retention"/);
  refuses({ flush: 'sometimes' }, /unknown flush policy "sometimes"/);
  refuses({ grpcPort: [8081, 8081] }, /listed twice/);
  refuses({ grpcPort: 8081, httpPort: 8081 }, /both as a gRPC port and as the HTTP port/);
  refuses({ httpPort: 70000 }, /not a port number/);
  refuses({ consume: { minInvisibleMs: 10, maxInvisibleMs: 5 } }, /must not exceed/);
  refuses({ autoCreateTopic: true }, /unknown key "autoCreateTopic"/);
});
