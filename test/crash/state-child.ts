/**
 * Child process for the state-journal crash test: appends numbered state records (compacting into a
 * snapshot every few hundred) and prints `A <n>` once each is durable. Killed with SIGKILL by the parent.
 *
 * usage: state-child.ts <dir> <startAt>
 */
import { StateLog } from '../../src/store/index.js';

const [dir, startAt] = process.argv.slice(2) as [string, string];
const applied: number[] = [];
const log = await StateLog.open(
  { dir, segmentSize: 64 * 1024 },
  {
    onSnapshot: (data) => applied.push(...(JSON.parse(data.toString()) as number[])),
    onRecord: (rec) => applied.push(rec.readUInt32LE(0)),
  },
);
let n = Number(startAt);
async function writer(): Promise<void> {
  for (;;) {
    const k = n++;
    const rec = Buffer.alloc(4 + (k % 200));
    rec.writeUInt32LE(k, 0);
    applied.push(k);
    const durable = log.append(rec);
    // The snapshot reflects exactly the records appended before the call, this one included.
    if (k % 300 === 0) void log.compact(Buffer.from(JSON.stringify(applied)));
    await durable;
    process.stdout.write(`A ${k}\n`);
  }
}
await Promise.all(Array.from({ length: 8 }, writer));
