/**
 * What decoding a SendMessage request costs the broker per message: `node --import tsx
 * bench/send-request-decode.ts`. A batch of 64 messages of 1 KiB as the SDK writes it (a tag, a
 * message id, timestamps, a born host), decoded by protobufjs and `toObject` (`decodeRequest`) against
 * the hand decoder (send-request-codec.ts), in turns, three times.
 */
import { encodeSendRequest } from '../src/client/send-encoder.js';
import { decodeRequest, messagingMethods } from '../src/protocol/codec.js';
import { decodeSendRequest } from '../src/protocol/send-request-codec.js';
import type { WireMessage } from '../src/protocol/wire-types.js';

const BATCH = 64;
const send = messagingMethods().get('SendMessage')!;
const messages: WireMessage[] = Array.from({ length: BATCH }, (_, i) => ({
  topic: { resource_namespace: '', name: 'BenchTopic' },
  system_properties: {
    tag: 'TagA',
    message_id: `01AABBCCDDEEFF0011223344556677${String(i).padStart(2, '0')}`,
    body_encoding: 1,
    message_type: 1,
    born_timestamp: { seconds: 1_764_000_000, nanos: 123_000_000 },
    born_host: 'bench-host',
  },
  body: Buffer.alloc(1024, i),
}));
const bytes = encodeSendRequest(messages, 3)!;

function measure(name: string, decode: () => unknown): void {
  const runs = 20_000;
  for (let i = 0; i < 2000; i++) decode();
  const t = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) decode();
  console.log(
    `${name.padEnd(34)} ${(Number(process.hrtime.bigint() - t) / runs / BATCH).toFixed(0)} ns per message`,
  );
}

for (let round = 0; round < 3; round++) {
  measure('protobufjs + toObject', () => decodeRequest(send.requestType, bytes));
  measure('by hand (send-request-codec.ts)', () => decodeSendRequest(bytes));
}
