/**
 * Child process for crash tests: appends to a store and reports every acknowledged message on
 * stdout as `A <id> <queueId> <queueOffset>`. Killed with SIGKILL by the parent at random moments.
 *
 * usage: append-child.ts <dataDir> <prefix> loop|fixed:<count> [flush]
 */
import { MessageStore } from '../../src/store/index.js';
import { bodyFor } from '../helpers.js';

const [dataDir, prefix, mode, flush = 'sync'] = process.argv.slice(2) as [string, string, string, string?];
const fixed = mode.startsWith('fixed:') ? Number(mode.slice(6)) : 0;
const store = await MessageStore.open({
  dataDir,
  flush: flush as 'sync' | 'async',
  segmentSize: 256 * 1024,
  indexEntriesPerFile: 64,
  checkpointIntervalMs: fixed ? 2e9 : 50,
  indexFlushIntervalMs: fixed ? 2e9 : 20,
});
let seq = 0;
const out = (s: string) => process.stdout.write(s + '\n');

async function appender(): Promise<void> {
  for (;;) {
    if (fixed && seq >= fixed) return;
    const n = fixed ? 1 : 1 + Math.floor(Math.random() * 5);
    const batch = [];
    for (let i = 0; i < n; i++) {
      const id = `${prefix}-${seq++}`;
      batch.push({
        topic: 'CrashTopic',
        queueId: seq % 4,
        messageId: id,
        body: bodyFor(id),
        keys: [`key-${id}`],
      });
    }
    const results = await store.append(batch);
    for (const r of results) out(`A ${r.messageId} ${r.queueId} ${r.queueOffset}`);
  }
}

if (fixed) {
  await appender();
  out('DONE');
  setInterval(() => {}, 1000); // wait to be killed, never closing the store
} else {
  await Promise.all(Array.from({ length: 8 }, appender));
}
