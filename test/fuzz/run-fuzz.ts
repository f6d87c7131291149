/**
 * The edge fuzzer against a broker of its own, then a check that the broker still serves and that
 * what it stored reads back intact. Used by test/integration/fuzz.test.ts (a few seconds) and by
 * `npm run fuzz` (`node --import tsx test/fuzz/run-fuzz.ts [--seed N] [--grpc N] [--admin N]`).
 */
import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { fuzzAdmin, fuzzGrpc, outcomes, type Problem } from './edge-fuzz.js';
import { RawClient } from '../integration/raw-client.js';
import { startTestBroker } from '../support/harness.js';
import { storeOf } from '../../src/broker/broker.js';
import { Code } from '../../src/common/codes.js';

export interface FuzzRun {
  seed: number;
  grpcCalls: number;
  adminCalls: number;
  problems: Problem[];
}

export async function runFuzz(opts: { seed: number; grpc: number; admin: number }): Promise<FuzzRun> {
  const b = await startTestBroker({ consume: { minInvisibleMs: 0, maxPollMs: 500 } });
  const targets = { topic: 'FuzzT', group: 'FuzzG' };
  const raw = new RawClient(b.endpoints);
  try {
    const broker = b.running.broker;
    await broker.topics.upsert(targets.topic, { readQueueNums: 2, writeQueueNums: 2 });
    await broker.groups.upsert(targets.group, {});
    await raw.send(targets.topic, [{ body: Buffer.from('before the fuzz') }]);
    const problems = [
      ...(await fuzzGrpc({ address: b.endpoints, seed: opts.seed, iterations: opts.grpc, targets })),
      ...(await fuzzAdmin({ baseUrl: b.adminUrl, seed: opts.seed, iterations: opts.admin, targets })),
    ];

    // Still serving: a fresh topic takes a message, hands it out and takes its ack.
    const topic = `AfterFuzz${opts.seed}`;
    await broker.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
    const sent = await raw.send(topic, [{ body: Buffer.from('after the fuzz') }]);
    assert.equal(sent.status.code, Code.OK, 'a send after the fuzz');
    const got = await raw.receiveMessages('AfterFuzzG', topic);
    assert.equal(got.messages.length, 1, 'a receive after the fuzz');
    assert.equal(Buffer.from(got.messages[0].body).toString(), 'after the fuzz');
    const acked = await raw.ack('AfterFuzzG', topic, [got.messages[0].system_properties.receipt_handle]);
    assert.equal(acked.status.code, Code.OK, 'an ack after the fuzz');
    const health = await fetch(`${b.adminUrl}/api/topics`);
    assert.equal(health.status, 200, 'the admin API after the fuzz');

    // What the fuzz managed to store reads back (every record passes its checksum).
    const store = storeOf(broker);
    for (const q of store.listQueues()) {
      const st = store.queueState(q.topic, q.queueId);
      for (let at = st.minOffset; at < st.maxOffset;) {
        const r = await store.read(q.topic, q.queueId, at, { maxCount: 256 });
        if (r.messages.length === 0) break;
        at = r.nextOffset;
      }
    }
    return { seed: opts.seed, grpcCalls: opts.grpc, adminCalls: opts.admin, problems };
  } finally {
    raw.close();
    await b.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string, def: number) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? Number(process.argv[i + 1]) : def;
  };
  const rounds = arg('rounds', 5);
  const first = arg('seed', Date.now() % 100_000);
  let failed = 0;
  for (let k = 0; k < rounds; k++) {
    const run = await runFuzz({ seed: first + k, grpc: arg('grpc', 3000), admin: arg('admin', 1000) });
    failed += run.problems.length;
    process.stdout.write(
      `seed ${run.seed}: ${run.grpcCalls} gRPC calls, ${run.adminCalls} admin calls, ${run.problems.length} problems\n`,
    );
    for (const p of run.problems.slice(0, 20)) process.stdout.write(`  ${p.what}: ${p.detail}\n`);
  }
  if (process.argv.includes('--outcomes'))
    for (const [k, n] of [...outcomes].sort()) process.stdout.write(`${String(n).padStart(6)}  ${k}\n`);
  process.exitCode = failed > 0 ? 1 : 0;
}
