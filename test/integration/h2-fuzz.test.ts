/**
 * A short seeded run of the HTTP/2 frame-level fuzz (test/fuzz/h2-fuzz.ts) against a broker's gRPC
 * port: valid sessions, frames a correct client may send, and mutated, truncated, oversized and
 * garbage traffic over a few hundred raw connections. No exception may go uncaught, every connection
 * that must close closes, the broker's connection count returns to its baseline, its heap stays
 * bounded, and it still sends, delivers and acks a message and reads back what it stored before.
 * One fixed seed, and one from the clock (in the test's name: a failure replays with
 * `npm run fuzz -- --rounds 1 --grpc 0 --admin 0 --h2 <connections> --seed <seed>`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFuzz } from '../fuzz/run-fuzz.js';

const CONNECTIONS = 240;

for (const seed of [7, Date.now() % 100_000]) {
  test(`HTTP/2 fuzz, seed ${seed}, ${CONNECTIONS} connections: no hang, no crash, no leak; the broker keeps serving`, async () => {
    const run = await runFuzz({ seed, grpc: 0, admin: 0, h2: CONNECTIONS });
    assert.equal(run.h2.connections, CONNECTIONS);
    assert.ok(run.h2.framesReceived > 0, 'the server answered');
    assert.deepEqual(
      run.problems,
      [],
      `seed ${seed}: npm run fuzz -- --rounds 1 --grpc 0 --admin 0 --h2 ${CONNECTIONS} --seed ${seed}`,
    );
  });
}
