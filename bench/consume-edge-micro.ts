/**
 * Per-message costs on the consume edge, old way against new, in one process (not a test):
 * `node --import tsx bench/consume-edge-micro.ts`. Prints the CPU time per message (process CPU
 * time / iterations, best of three rounds) of:
 *
 * - a receipt handle: HMAC-SHA256 per handle (version 1), the AES block per handle (version 2), and
 *   version 2 for a batch of 32 in one cipher call; and checking one;
 * - a delivered 1 KiB message frame: protobufjs's encoder + gRPC framing, and the hand-written encoder
 *   writing a whole 32-message answer into one buffer;
 * - the SDK's decoding of that frame: protobufjs decode + toObject, and decode alone (`decodeLean`);
 * - the MD5 of a 1 KiB body: a Hash object, and the one-shot `crypto.hash`;
 * - an AckMessage of 32 entries on the broker: the request decoded and the answer encoded with
 *   protobufjs, and by hand (protocol/ack-codec.ts);
 * - on the produce edge, the answer of a SendMessage of 32: protobufjs, and by hand
 *   (protocol/send-codec.ts).
 */
import { createHash, createHmac, hash, randomBytes } from 'node:crypto';
import { ReceiptHandles } from '../src/broker/receipt-handle.js';
import { decode, decodeLean, decodeRequest, encode, messagingMethods } from '../src/protocol/codec.js';
import { decodeAckRequest, encodeAckResponse } from '../src/protocol/ack-codec.js';
import { encodeSendResponse } from '../src/protocol/send-codec.js';
import { toWireMessage } from '../src/protocol/convert.js';
import { frameResponses } from '../src/protocol/message-frame.js';
import { frameMessages } from '../src/protocol/transport/grpc-wire.js';
import type { BrokerMessage } from '../src/broker/message.js';

const N = Number(process.argv[2] ?? 100_000);

function cpuPer(label: string, perCall: number, fn: () => void): void {
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const t = process.cpuUsage();
    for (let i = 0; i < N / perCall; i++) fn();
    const u = process.cpuUsage(t);
    best = Math.min(best, (u.user + u.system) / N);
  }
  console.log(`${label.padEnd(64)} ${best.toFixed(2)} µs`);
}

const key = randomBytes(32);
const handles = ReceiptHandles.withKey(key);
const fields = Array.from({ length: 32 }, (_, i) => ({
  queueId: i % 8,
  offset: 100_000 + i,
  nonce: i * 7919,
}));
const payload = randomBytes(17);
cpuPer('receipt handle, v1: one HMAC-SHA256 per handle', 1, () =>
  createHmac('sha256', key).update(payload).update('Topic').update('\u0000').update('Group').digest(),
);
cpuPer('receipt handle, v2: one AES block per handle', 1, () => handles.encode('Topic', 'Group', fields[0]!));
cpuPer('receipt handle, v2: 32 handles in one cipher call (per handle)', 32, () =>
  handles.encodeMany('Topic', 'Group', fields),
);
const issued = handles.encodeMany('Topic', 'Group', fields);
cpuPer('receipt handle, v2: checking 32 in one cipher call (per handle)', 32, () =>
  handles.decodeMany(issued, 'Topic', 'Group'),
);

const type = messagingMethods().get('ReceiveMessage')!.responseType;
const stored = {
  topic: 'Topic',
  queueId: 3,
  queueOffset: 123_456,
  messageId: '0A0B0C0D0E0F00112233445566778899',
  body: randomBytes(1024),
  keys: ['key-1'],
  properties: { __VELA_BODY_MD5: 'ABCDEF0123456789ABCDEF0123456789' },
  bornTimestamp: Date.now(),
  bornHost: '127.0.0.1',
  storeTimestamp: Date.now(),
  sysFlag: 0,
} as unknown as BrokerMessage;
const wire = toWireMessage(stored, {
  receiptHandle: issued[0]!,
  deliveryAttempt: 1,
  invisibleMs: 30_000,
  storeHost: '127.0.0.1:8081',
});
const frames = [
  { status: { code: 20000, message: 'OK' } },
  ...Array.from({ length: 32 }, () => ({ message: wire })),
  { delivery_timestamp: { seconds: 1, nanos: 0 } },
];
cpuPer('answer of 32 messages, protobufjs + framing (per message)', 32, () =>
  frameMessages(frames.map((f) => encode(type, f))),
);
cpuPer('answer of 32 messages, hand-written into one buffer (per message)', 32, () =>
  frameResponses(frames, (f) => encode(type, f)),
);
const one = encode(type, { message: wire });
cpuPer('SDK: decode one message frame + toObject', 1, () => decode(type, one));
cpuPer('SDK: decode one message frame, lean', 1, () => decodeLean(type, one));
cpuPer('MD5 of 1 KiB: createHash', 1, () => createHash('md5').update(stored.body).digest('hex'));
cpuPer('MD5 of 1 KiB: crypto.hash', 1, () => hash('md5', stored.body, 'hex'));

const ack = messagingMethods().get('AckMessage')!;
const ackRequest = Buffer.from(
  encode(ack.requestType, {
    group: { name: 'Group' },
    topic: { name: 'Topic' },
    entries: issued.map((h, i) => ({ message_id: `0A0B0C0D0E0F001122334455667788${i}`, receipt_handle: h })),
  }),
);
const ackAnswer = {
  status: { code: 20000, message: 'OK' },
  entries: issued.map((h, i) => ({
    message_id: `0A0B0C0D0E0F001122334455667788${i}`,
    receipt_handle: h,
    status: { code: 20000, message: 'OK' },
  })),
};
cpuPer('AckMessage of 32: request decoded by protobufjs (per entry)', 32, () =>
  decodeRequest(ack.requestType, ackRequest),
);
cpuPer('AckMessage of 32: request decoded by hand (per entry)', 32, () => decodeAckRequest(ackRequest));
cpuPer('AckMessage of 32: answer encoded by protobufjs (per entry)', 32, () =>
  encode(ack.responseType, ackAnswer),
);
cpuPer('AckMessage of 32: answer encoded by hand (per entry)', 32, () => encodeAckResponse(ackAnswer));

const sendAnswer = {
  status: { code: 20000, message: 'OK' },
  entries: Array.from({ length: 32 }, (_, i) => ({
    status: { code: 20000, message: 'OK' },
    message_id: `01AABBCCDDEEFF00112233445566778${i}`,
    transaction_id: '',
    offset: 100_000 + i,
  })),
};
const sendType = messagingMethods().get('SendMessage')!.responseType;
cpuPer('SendMessage of 32: answer encoded by protobufjs (per entry)', 32, () => encode(sendType, sendAnswer));
cpuPer('SendMessage of 32: answer encoded by hand (per entry)', 32, () => encodeSendResponse(sendAnswer));
