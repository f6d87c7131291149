/**
 * A delivered message's cost on the broker from stored bytes to answer bytes (not a test):
 * `node --import tsx bench/delivery-encode.ts`. Prints CPU time per message (process CPU time /
 * messages, best of five rounds) for answers of 32 messages of 1 KiB, each step added to the last:
 *
 * - copy: the records copied out of a cached chunk (as a store read does);
 * - verify: their checksums checked;
 * - decode: decoded into messages (with the body's CRC derived from the checksum);
 * - answer, wire objects: `toWireMessage` per message, then the hand-written frame encoder;
 * - answer, from records: the answer written from the records' bytes (stored-frame.ts).
 */
import { randomBytes } from 'node:crypto';
import {
  bodyCrcOf,
  checkFrame,
  decodeMessageFrame,
  encodeMessageFrame,
  FrameCheck,
  messageFrameUpperBound,
  type MessageInput,
  type StoredMessage,
} from '../src/store/record-codec.js';
import { toWireMessage, type DeliveryInfo } from '../src/protocol/convert.js';
import { frameResponses } from '../src/protocol/message-frame.js';

const BATCH = 32;
const ROUNDS = Number(process.argv[2] ?? 5_000);
const topic = 'BenchTopic';
const chunk = Buffer.alloc(64 * 1024);
const offsets: number[] = [];
const sizes: number[] = [];
let end = 0;
for (let i = 0; i < BATCH; i++) {
  const m: MessageInput = {
    topic,
    queueId: 3,
    messageId: `01AABBCCDDEEFF0011223344556677${String(i).padStart(4, '0')}`,
    body: randomBytes(1024),
    bornHost: '127.0.0.1',
    bornTimestamp: Date.now(),
  };
  const len = encodeMessageFrame(chunk, end, m, 1000 + i, Date.now());
  if (len > messageFrameUpperBound(m)) throw new Error('frame larger than its bound');
  offsets.push(end);
  sizes.push(len);
  end += len;
}
const info: DeliveryInfo = {
  receiptHandle: 'AgAAAAMAAAAAAAAAAAAAAAF5g6XlD1SR6jqF-L1Sp3Ye',
  deliveryAttempt: 1,
  invisibleMs: 30_000,
  storeHost: '127.0.0.1:8081',
  crc32Digest: true,
};
const status = { status: { code: 20000, message: 'OK' } };
const stamp = { delivery_timestamp: { seconds: 1_764_000_000, nanos: 0 } };
const other = () => Buffer.alloc(8);

type Step = 'copy' | 'verify' | 'decode' | 'objects' | 'records';

function answer(step: Step): void {
  const own = Buffer.allocUnsafe(end);
  const messages: StoredMessage[] = [];
  for (let i = 0; i < BATCH; i++) {
    const at = offsets[i]!;
    chunk.copy(own, at, at, at + sizes[i]!);
    if (step === 'copy') continue;
    if (checkFrame(own, at, at + sizes[i]!) !== FrameCheck.OK) throw new Error('corrupt');
    if (step === 'verify') continue;
    const m = decodeMessageFrame(own, at, at, topic);
    m.bodyCrc = bodyCrcOf(own, at, sizes[i]!, m.body.length);
    messages.push(m);
  }
  if (step === 'objects') {
    frameResponses([status, ...messages.map((m) => ({ message: toWireMessage(m, info) })), stamp], other);
  } else if (step === 'records') {
    frameResponses([status, ...messages.map((m) => ({ delivered: { message: m, info } })), stamp], other);
  }
}

const label: Record<Step, string> = {
  copy: 'copy out of the chunk',
  verify: '+ verify the checksum',
  decode: '+ decode',
  objects: '+ answer, wire objects',
  records: '+ answer, from records',
};
for (const step of ['copy', 'verify', 'decode', 'objects', 'records'] as Step[]) {
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const t = process.cpuUsage();
    for (let i = 0; i < ROUNDS; i++) answer(step);
    const u = process.cpuUsage(t);
    best = Math.min(best, (u.user + u.system) / (ROUNDS * BATCH));
  }
  console.log(`${label[step].padEnd(28)} ${best.toFixed(2)} µs per message`);
}
