/**
 * Child process for the compaction race test: a broker (no network) makes one kind of state change
 * with a journal compaction started exactly as that change's record is appended (the moment the
 * journal's own threshold check would start one), answers it, and kills itself with SIGKILL: at once
 * (`during`: the snapshot may be half written) or once the snapshot is written (`after`).
 *
 * Prints `ACK <step> [details]` once the change is acknowledged, then dies.
 *
 * usage: compaction-race-child.ts <dataDir> <step> <during|after>
 */
import assert from 'node:assert/strict';
import { writeSync } from 'node:fs';
import { Broker } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import type { SendReceipt } from '../../src/broker/produce.js';
import type { StateRecord } from '../../src/broker/state-journal.js';
import { RACE, raceStep, type RaceStep } from './compaction-race-steps.js';

const [dataDir, stepName, mode] = process.argv.slice(2) as [string, string, 'during' | 'after'];
const step: RaceStep = raceStep(stepName);
const broker = await Broker.open({ dataDir, consume: { minInvisibleMs: 0 } });

// Compact when a record of the armed kind is appended, right after it (no threshold involved).
const journal = broker.consume.journal;
let armed: StateRecord['kind'] | null = null;
let compaction: Promise<void> | null = null;
for (const method of ['append', 'commit'] as const) {
  const original = journal[method].bind(journal);
  journal[method] = (...records: StateRecord[]) => {
    const durable = original(...records);
    if (armed && records.some((r) => r.kind === armed)) {
      armed = null;
      compaction = journal.compact();
      compaction.catch(() => {});
    }
    return durable;
  };
}
async function racing(kind: StateRecord['kind'], change: () => Promise<string>): Promise<never> {
  armed = kind;
  const details = await change();
  assert.ok(compaction, `no ${kind} record was appended`);
  if (mode === 'after') await compaction;
  writeSync(1, `ACK ${step} ${details}\n`);
  process.kill(process.pid, 'SIGKILL');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10_000);
  throw new Error('still alive');
}

if (step.startsWith('tx-')) {
  await broker.topics.upsert(RACE.txTopic, { attributes: { 'message.type': 'TRANSACTION' } });
  const [r] = await broker.produce.send([
    { topic: RACE.txTopic, messageId: RACE.txMessage, body: Buffer.from('tx'), messageType: 'TRANSACTION' },
  ]);
  if (!r || r instanceof Error) throw r;
  const transactionId = (r as SendReceipt).transactionId!;
  const resolution = step === 'tx-rollback' ? 'ROLLBACK' : 'COMMIT';
  await racing(step === 'tx-committing' ? 'txCommitting' : 'txEnded', async () => {
    await broker.transactions.end({
      topic: RACE.txTopic,
      messageId: RACE.txMessage,
      transactionId,
      resolution,
    });
    return transactionId;
  });
}

if (step.startsWith('retry-')) {
  await broker.topics.upsert(RACE.topic, { readQueueNums: 1, writeQueueNums: 1 });
  await broker.groups.upsert(RACE.group, { retryPolicy: { type: 'CUSTOMIZED', next: [1] } });
  await broker.produce.send([{ topic: RACE.topic, messageId: 'M-race', body: Buffer.from(RACE.body) }]);
  const receive = (autoRenew: boolean) =>
    broker.consume.receive({
      group: RACE.group,
      topic: RACE.topic,
      filter: parseFilter('TAG', '*'),
      batchSize: 1,
      ...(autoRenew ? {} : { invisibleMs: 3600_000 }),
      autoRenew,
      clientId: 'race-client',
      pollMs: 0,
    });
  const [d] = await receive(true);
  assert.ok(d);
  const nack = () => broker.consume.changeInvisibleDuration(RACE.group, RACE.topic, d.receiptHandle, 0);
  if (step === 'retry-nack') {
    await racing('settled', async () => {
      await nack();
      return '';
    });
  }
  await nack();
  await new Promise((r) => setTimeout(r, 20)); // the retry is due 1 ms after the nack
  const receiveRetry = async () => {
    const [got] = await receive(false);
    assert.equal(got?.deliveryAttempt, 2, 'the retry is handed out');
    return got;
  };
  if (step === 'retry-deliver') {
    await racing('deliveries', async () => (await receiveRetry()).receiptHandle);
  }
  const retry = await receiveRetry();
  await racing('settled', async () => {
    await broker.consume.ack(RACE.group, RACE.topic, retry.receiptHandle);
    return '';
  });
}

if (step.startsWith('acl-')) {
  const registry = broker.acl.registry;
  const subject = `User:${RACE.user}`;
  const entry = (resource: string) => ({
    subject,
    resources: [resource],
    actions: ['Pub'],
    decision: 'Allow',
  });
  if (step === 'acl-user') {
    await racing('aclUser', async () => {
      await registry.createUser(RACE.user, RACE.password);
      return '';
    });
  }
  await registry.createUser(RACE.user, RACE.password);
  if (step === 'acl-entry') {
    await racing('acl', async () => {
      await registry.upsertAcl(entry(`Topic:${RACE.topic}`));
      return '';
    });
  }
  await registry.upsertAcl(entry(`Topic:${RACE.topic}`));
  if (step === 'acl-deleted') {
    await racing('aclDeleted', async () => {
      await registry.deleteAcl(subject);
      return '';
    });
  }
  await racing('aclUserDeleted', async () => {
    await registry.deleteUser(RACE.user);
    return '';
  });
}
