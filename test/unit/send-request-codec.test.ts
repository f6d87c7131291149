import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeRequest, encode, messagingMethods } from '../../src/protocol/codec.js';
import { decodeSendRequest } from '../../src/protocol/send-request-codec.js';
import { encodeSendRequest } from '../../src/client/send-encoder.js';
import type { WireMessage } from '../../src/protocol/wire-types.js';

const send = messagingMethods().get('SendMessage')!;
const bytesOf = (o: unknown) => Buffer.from(encode(send.requestType, o));

/** The hand decoder gives exactly what protobufjs gives, body a view into the request included. */
function sameAsProtobufjs(bytes: Buffer): void {
  const byHand = decodeSendRequest(bytes);
  assert.ok(byHand, 'decoded by hand');
  assert.deepEqual(byHand, decodeRequest(send.requestType, bytes));
  for (const m of byHand.messages ?? []) {
    if (m.body) assert.equal(m.body.buffer, bytes.buffer, 'the body is a view, not a copy');
  }
}

const sdkMessage = (i: number): WireMessage => ({
  topic: { resource_namespace: i % 2 ? 'ns' : '', name: 'T' },
  ...(i % 3 ? { user_properties: { a: `b${i}`, ключ: 'значение' } } : {}),
  system_properties: {
    ...(i % 2 ? { tag: `tag${i}` } : {}),
    ...(i % 4 === 1 ? { keys: ['k1', `k${i}`] } : {}),
    message_id: `01AABBCCDDEEFF0011223344556677${String(i).padStart(2, '0')}`,
    body_encoding: 1,
    message_type: 1 + (i % 4),
    born_timestamp: { seconds: 1_764_000_000 + i, nanos: (i * 1_000_000) % 1e9 },
    born_host: 'host-1',
    ...(i % 5 === 2 ? { delivery_timestamp: { seconds: 1_764_000_100, nanos: 0 } } : {}),
    ...(i % 3 === 1 ? { message_group: `g${i % 7}` } : {}),
  },
  body: Buffer.from(`body ${i} `.repeat(i)),
});

test('SendMessage decoded by hand is what protobufjs gives: the SDK’s batches', () => {
  for (const queueId of [0, 3]) {
    const bytes = encodeSendRequest(
      Array.from({ length: 24 }, (_, i) => sdkMessage(i)),
      queueId,
    );
    assert.ok(bytes);
    sameAsProtobufjs(bytes);
  }
});

test('SendMessage decoded by hand is what protobufjs gives: what the official clients send', () => {
  sameAsProtobufjs(
    bytesOf({
      messages: [
        {
          topic: { name: 'T' },
          user_properties: { x: '1', empty: '' },
          system_properties: {
            tag: '',
            keys: ['a', 'b', ''],
            message_id: '0100163E0A0B0C0D0E0F1011121314151617',
            body_digest: { type: 2, checksum: '5D41402ABC4B2A76B9719D911017C592' },
            body_encoding: 1,
            message_type: 4,
            born_timestamp: { seconds: 1_764_000_000, nanos: 123_000_000 },
            born_host: '10.0.0.1',
            queue_id: 7,
            trace_context: '00-abc-def-01',
            orphaned_transaction_recovery_duration: { seconds: 30 },
          },
          body: Buffer.from('hello'),
        },
        // Fields a producer has no reason to send, still decoded as protobufjs decodes them.
        {
          topic: {},
          system_properties: {
            store_timestamp: { seconds: 1 },
            store_host: 'h',
            receipt_handle: 'rh',
            queue_offset: 2 ** 40,
            invisible_duration: { nanos: 5 },
            delivery_attempt: 3,
          },
          body: Buffer.alloc(0),
        },
        {},
      ],
    }),
  );
});

test('fields in any order, scalars given twice (the last one counts), map keys given twice', () => {
  // A message: body, then topic, then body again and a map entry twice, in one message field.
  const parts = Buffer.concat([
    Buffer.from([0x22, 5]),
    Buffer.from('first'),
    Buffer.from([0x0a, 3, 0x12, 1, 0x54]),
    Buffer.from([0x22, 6]),
    Buffer.from('second'),
    Buffer.from([0x12, 6, 0x0a, 1, 0x6b, 0x12, 1, 0x31]),
    Buffer.from([0x12, 6, 0x0a, 1, 0x6b, 0x12, 1, 0x32]),
  ]);
  sameAsProtobufjs(Buffer.concat([Buffer.from([0x0a, parts.length]), parts]));
  sameAsProtobufjs(Buffer.alloc(0));
});

test('what the hand decoder does not cover is left to protobufjs', () => {
  const cases: [string, Buffer][] = [
    ['a field it does not know', bytesOf({ messages: [{ system_properties: { lite_topic: 'x' } }] })],
    ['a message field given twice', Buffer.from([0x0a, 8, 0x0a, 2, 0x12, 0, 0x0a, 2, 0x12, 0])],
    ['a string that is not UTF-8', Buffer.from([0x0a, 6, 0x0a, 4, 0x12, 2, 0x6d, 0xff])],
    [
      'an integer past 2^53',
      bytesOf({ messages: [{ system_properties: { queue_offset: '9007199254740993' } }] }),
    ],
    ['a negative int32', bytesOf({ messages: [{ system_properties: { queue_id: -1 } }] })],
    ['a map key __proto__', Buffer.from([0x0a, 15, 0x12, 13, 0x0a, 9, ...Buffer.from('__proto__'), 0x12, 0])],
    ['bytes that end inside a field', bytesOf({ messages: [{ body: Buffer.from('abc') }] }).subarray(0, 5)],
  ];
  for (const [name, bytes] of cases) assert.equal(decodeSendRequest(bytes), undefined, name);
});
