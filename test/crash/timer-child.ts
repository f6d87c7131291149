/**
 * Child process for the timer and transaction crash test: a broker (no network) that schedules
 * delay messages due within the next 1.5 s, recalls some, sends transactional messages and ends
 * some, and reports every acknowledged step on stdout; killed with SIGKILL by the parent.
 *
 *   D <messageId> <due>        a delay message was stored (acknowledged)
 *   x <messageId>              a recall of it is about to be asked for
 *   X <messageId>              it was recalled (acknowledged)
 *   H <messageId> <txId>       a half message was stored
 *   C <messageId> / R <messageId>   its transaction was committed / rolled back (acknowledged)
 *
 * usage: timer-child.ts <dataDir> <prefix>
 */
import { Broker } from '../../src/broker/broker.js';
import type { SendReceipt } from '../../src/broker/produce.js';

const [dataDir, prefix] = process.argv.slice(2) as [string, string];
const broker = await Broker.open({
  dataDir,
  store: { segmentSize: 1024 * 1024, checkpointIntervalMs: 50 },
  transaction: { checkTimeoutMs: 60_000 },
});
const DELAY = 'CrashDelay';
const TX = 'CrashTx';
if (!broker.topics.get(DELAY))
  await broker.topics.upsert(DELAY, {
    readQueueNums: 4,
    writeQueueNums: 4,
    attributes: { 'message.type': 'DELAY' },
  });
if (!broker.topics.get(TX))
  await broker.topics.upsert(TX, {
    readQueueNums: 2,
    writeQueueNums: 2,
    attributes: { 'message.type': 'TRANSACTION' },
  });
const out = (s: string) => process.stdout.write(s + '\n');
let seq = 0;

async function scheduler(): Promise<void> {
  for (;;) {
    const now = broker.clock.now();
    const batch = Array.from({ length: 1 + Math.floor(Math.random() * 8) }, () => ({
      topic: DELAY,
      messageId: `${prefix}-d${seq++}`,
      body: Buffer.from(`delay ${seq}`),
      deliveryTimestamp: now + 30 + Math.floor(Math.random() * 1500),
    }));
    const results = await broker.produce.send(batch);
    const recall: { id: string; handle: string }[] = [];
    results.forEach((r, i) => {
      if (r instanceof Error) throw r;
      out(`D ${batch[i]!.messageId} ${batch[i]!.deliveryTimestamp}`);
      if (Math.random() < 0.1)
        recall.push({ id: batch[i]!.messageId, handle: (r as SendReceipt).recallHandle! });
    });
    for (const { id, handle } of recall) {
      out(`x ${id}`);
      try {
        await broker.timer.recall(DELAY, handle);
        out(`X ${id}`);
      } catch {
        // too late: it is being delivered
      }
    }
  }
}

async function transactor(): Promise<void> {
  for (;;) {
    const id = `${prefix}-t${seq++}`;
    const [r] = await broker.produce.send([
      { topic: TX, messageId: id, body: Buffer.from(`tx ${id}`), messageType: 'TRANSACTION' },
    ]);
    if (!r || r instanceof Error) throw r;
    const tid = (r as SendReceipt).transactionId!;
    out(`H ${id} ${tid}`);
    const roll = Math.random();
    if (roll < 0.5) {
      await broker.transactions.end({ topic: TX, messageId: id, transactionId: tid, resolution: 'COMMIT' });
      out(`C ${id}`);
    } else if (roll < 0.7) {
      await broker.transactions.end({ topic: TX, messageId: id, transactionId: tid, resolution: 'ROLLBACK' });
      out(`R ${id}`);
    } // else: left open
  }
}

await Promise.all([scheduler(), scheduler(), transactor(), transactor()]);
