/**
 * The edge fuzzers against a broker of its own, then a check that the broker still serves and that
 * what it stored reads back intact. Used by test/integration/fuzz.test.ts and h2-fuzz.test.ts (a few
 * seconds) and by `npm run fuzz`
 * (`node --import tsx test/fuzz/run-fuzz.ts [--rounds N] [--seed N] [--grpc N] [--admin N] [--h2 N]`).
 *
 * The HTTP/2 fuzz (h2-fuzz.ts) runs first, in batches; after each batch the broker's gRPC connection
 * count must return to what it was before, and through the whole run no exception or rejection may
 * go uncaught, the broker may log no error, and its heap (after a forced collection) may not grow
 * past a generous bound.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { fuzzAdmin, fuzzGrpc, outcomes, type Problem } from './edge-fuzz.js';
import { fuzzH2 } from './h2-fuzz.js';
import { RawClient } from '../integration/raw-client.js';
import { startTestBroker, waitFor } from '../support/harness.js';
import { storeOf } from '../../src/broker/broker.js';
import { Code } from '../../src/common/codes.js';
import { createLogger } from '../../src/common/logger.js';

export interface FuzzRun {
  seed: number;
  grpcCalls: number;
  adminCalls: number;
  h2: { connections: number; framesSent: number; framesReceived: number; bytesSent: number; ms: number };
  problems: Problem[];
}

export interface FuzzOptions {
  seed: number;
  grpc: number;
  admin: number;
  /** HTTP/2 fuzz connections. @defaultValue 0 */
  h2?: number;
  /** HTTP/2 fuzz connections at once. @defaultValue 24 */
  h2Parallel?: number;
  /** Replay only these HTTP/2 connections (indexes a problem named), printing their frames. */
  h2Only?: number[];
}

/** How much the heap may grow over an HTTP/2 fuzz (after a forced collection): generous on purpose. */
const HEAP_GROWTH_BOUND = 96 * 1024 * 1024;

/** How often each HTTP/2 scenario, mutation and server reaction was seen (all runs). */
export const h2Outcomes = new Map<string, number>();

export async function runFuzz(opts: FuzzOptions): Promise<FuzzRun> {
  // Errors the broker logs during the HTTP/2 fuzz: a handler that threw, an internal HTTP/2 error.
  const logged: string[] = [];
  let watchLog = false;
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      const line = chunk.toString();
      if (opts.h2Only) process.stderr.write(`broker: ${line}`);
      if (watchLog && (/"level":(50|60)/.test(line) || line.includes('internal error'))) logged.push(line);
      done();
    },
  });
  const b = await startTestBroker({
    consume: { minInvisibleMs: 0, maxPollMs: 500 },
    logger: createLogger({ level: 'debug', destination }),
  });
  const targets = { topic: 'FuzzT', group: 'FuzzG' };
  const raw = new RawClient(b.endpoints);
  const uncaught: Problem[] = [];
  const onException = (err: Error) =>
    uncaught.push({ what: 'uncaught exception', detail: err.stack ?? String(err) });
  const onRejection = (reason: unknown) =>
    uncaught.push({ what: 'unhandled rejection', detail: (reason as Error)?.stack ?? String(reason) });
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  try {
    const broker = b.running.broker;
    await broker.topics.upsert(targets.topic, { readQueueNums: 2, writeQueueNums: 2 });
    await broker.groups.upsert(targets.group, {});
    await raw.send(targets.topic, [{ body: Buffer.from('before the fuzz') }]);
    const problems: Problem[] = [];
    const h2 = { connections: 0, framesSent: 0, framesReceived: 0, bytesSent: 0, ms: 0 };
    if (opts.h2) {
      const baseline = b.running.grpcConnectionCount();
      const heapBefore = heapAfterGc();
      const started = Date.now();
      watchLog = true;
      const run = await fuzzH2({
        host: '127.0.0.1',
        port: b.running.grpcPort,
        seed: opts.seed,
        connections: opts.h2,
        parallel: opts.h2Parallel ?? 24,
        targets,
        ...(opts.h2Only ? { only: opts.h2Only, trace: true } : {}),
        afterBatch: async (batch) => {
          try {
            await waitFor(() => b.running.grpcConnectionCount() <= baseline, { timeoutMs: 5000 });
          } catch {
            problems.push({
              what: `seed ${opts.seed} batch ${batch}: connections`,
              detail: `${b.running.grpcConnectionCount()} gRPC connections open 5 s after the batch closed its own (${baseline} before)`,
            });
          }
        },
      });
      watchLog = false;
      h2.ms = Date.now() - started;
      problems.push(...run.problems);
      for (const line of logged)
        problems.push({ what: 'the broker logged an error', detail: line.slice(0, 2000) });
      for (const [k, n] of run.outcomes) h2Outcomes.set(k, (h2Outcomes.get(k) ?? 0) + n);
      Object.assign(h2, {
        connections: run.connections,
        framesSent: run.framesSent,
        framesReceived: run.framesReceived,
        bytesSent: run.bytesSent,
      });
      // What was stored before is still there, as it was (the admin fuzz after this may delete it).
      const bodies: string[] = [];
      for (const queueId of [0, 1]) {
        const got = await raw.pull('FuzzBeforeG', targets.topic, queueId, 0, { batch: 1 });
        bodies.push(...got.messages.map((m: { body: Uint8Array }) => Buffer.from(m.body).toString()));
      }
      assert.ok(bodies.includes('before the fuzz'), `the message stored before the HTTP/2 fuzz: ${bodies}`);
      const heapAfter = heapAfterGc();
      if (heapAfter - heapBefore > HEAP_GROWTH_BOUND) {
        problems.push({
          what: 'memory',
          detail: `the heap grew by ${((heapAfter - heapBefore) / 2 ** 20).toFixed(1)} MiB over the HTTP/2 fuzz`,
        });
      }
    }
    problems.push(
      ...(await fuzzGrpc({ address: b.endpoints, seed: opts.seed, iterations: opts.grpc, targets })),
      ...(await fuzzAdmin({ baseUrl: b.adminUrl, seed: opts.seed, iterations: opts.admin, targets })),
    );

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
    problems.push(...uncaught);
    return { seed: opts.seed, grpcCalls: opts.grpc, adminCalls: opts.admin, h2, problems };
  } finally {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
    raw.close();
    await b.close();
  }
}

/** heapUsed after a full collection (gc exposed at run time when node was not started with it). */
function heapAfterGc(): number {
  let gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc') as () => void;
  }
  gc();
  return process.memoryUsage().heapUsed;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string, def: number) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? Number(process.argv[i + 1]) : def;
  };
  const rounds = arg('rounds', 5);
  const only = process.argv.includes('--h2-only')
    ? process.argv[process.argv.indexOf('--h2-only') + 1]
    : undefined;
  const first = arg('seed', Date.now() % 100_000);
  let failed = 0;
  for (let k = 0; k < rounds; k++) {
    const run = await runFuzz({
      seed: first + k,
      grpc: arg('grpc', 3000),
      admin: arg('admin', 1000),
      h2: arg('h2', 0),
      h2Parallel: arg('h2-parallel', 24),
      ...(only ? { h2Only: only.split(',').map(Number) } : {}),
    });
    failed += run.problems.length;
    const h2 = run.h2.connections
      ? `, ${run.h2.connections} HTTP/2 connections (${run.h2.framesSent} frames sent, ` +
        `${run.h2.framesReceived} received, ${(run.h2.bytesSent / 2 ** 20).toFixed(1)} MiB, ${run.h2.ms} ms)`
      : '';
    process.stdout.write(
      `seed ${run.seed}: ${run.grpcCalls} gRPC calls, ${run.adminCalls} admin calls${h2}, ${run.problems.length} problems\n`,
    );
    for (const p of run.problems.slice(0, 20)) process.stdout.write(`  ${p.what}: ${p.detail}\n`);
  }
  if (process.argv.includes('--outcomes'))
    for (const [k, n] of [...outcomes, ...h2Outcomes].sort())
      process.stdout.write(`${String(n).padStart(6)}  ${k}\n`);
  process.exitCode = failed > 0 ? 1 : 0;
}
