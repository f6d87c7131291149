/**
 * What answering an AckMessage costs the broker per acknowledged message: `node --import tsx
 * bench/ack-answer.ts`. A request of 256 entries as the SDK sends them (a 32-character message id and
 * a receipt handle each) is decoded by hand (ack-codec.ts), and its all-OK answer written two ways, in
 * turns, three times: from the decoded strings (an entry object per answer entry, each string
 * measured and written), and from the request's bytes (`ackEcho`: each entry copied, a status after
 * it), which the AckMessage handler uses when every entry was acknowledged.
 */
import { randomBytes } from 'node:crypto';
import { ackEcho, decodeAckRequest, encodeAckResponse } from '../src/protocol/ack-codec.js';
import { encode, messagingMethods } from '../src/protocol/codec.js';
import { ReceiptHandles } from '../src/broker/receipt-handle.js';

const ENTRIES = 256;
const OK = { code: 20000, message: 'OK' };
const ack = messagingMethods().get('AckMessage')!;
const handles = ReceiptHandles.withKey(randomBytes(32)).encodeMany(
  'BenchTopic',
  'BenchGroup',
  Array.from({ length: ENTRIES }, (_, i) => ({ queueId: i % 8, offset: 1_000_000 + i, nonce: i * 7919 })),
);
const bytes = Buffer.from(
  encode(ack.requestType, {
    group: { name: 'BenchGroup' },
    topic: { name: 'BenchTopic' },
    entries: handles.map((receipt_handle) => ({
      message_id: randomBytes(16).toString('hex').toUpperCase(),
      receipt_handle,
    })),
  }),
);

const fromStrings = (): number => {
  const req = decodeAckRequest(bytes)!;
  const entries = req.entries!.map((e) => ({
    message_id: e.message_id ?? '',
    receipt_handle: e.receipt_handle ?? '',
    status: OK,
  }));
  return encodeAckResponse({ status: OK, entries })!.length;
};
const fromBytes = (): number => {
  const req = decodeAckRequest(bytes)!;
  return encodeAckResponse({ status: OK, echo: ackEcho(req)! })!.length;
};

if (fromStrings() !== fromBytes()) throw new Error('the two answers differ in length');

let sink = 0;
function measure(name: string, answer: () => number): void {
  const runs = 5000;
  for (let i = 0; i < 500; i++) sink += answer();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) sink += answer();
  const ns = Number(process.hrtime.bigint() - t0) / runs / ENTRIES;
  console.log(
    `${name.padEnd(52)} ${ns.toFixed(0).padStart(5)} ns per entry (request decoded, answer written)`,
  );
}

for (let round = 1; round <= 3; round++) {
  measure(`round ${round}: answer from the decoded strings`, fromStrings);
  measure(`round ${round}: answer from the request's bytes`, fromBytes);
}
if (sink === 0) console.log('');
