/**
 * A bounded, seeded fuzz of the gRPC edge (every RPC, random and mutated protobuf) and of the admin
 * HTTP API: every request is answered with a status the broker chose, none with an internal error,
 * and the broker keeps serving with its data intact. `npm run fuzz` runs the same for longer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFuzz } from '../fuzz/run-fuzz.js';
import { startTestBroker } from '../support/harness.js';

test('a repeated query parameter is answered (found by the fuzz: it was a 500)', async () => {
  const b = await startTestBroker();
  try {
    const res = await fetch(`${b.adminUrl}/api/messages?key=a&key=b&topic=T&topic=U`);
    assert.ok(res.status < 500, `HTTP ${res.status}: ${await res.text()}`);
  } finally {
    await b.close();
  }
});

for (const seed of [1, 2]) {
  test(`fuzz, seed ${seed}: every request answered with a status; the broker keeps serving`, async () => {
    const run = await runFuzz({ seed, grpc: 400, admin: 200 });
    assert.deepEqual(run.problems, [], `seed ${seed}`);
  });
}
