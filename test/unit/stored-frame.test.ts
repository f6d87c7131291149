import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decode, encode, messagingMethods } from '../../src/protocol/codec.js';
import { frameResponses } from '../../src/protocol/message-frame.js';
import { planStored } from '../../src/protocol/stored-frame.js';
import { toWireMessage, type DeliveryInfo } from '../../src/protocol/convert.js';
import { frameMessages } from '../../src/protocol/transport/grpc-wire.js';
import {
  bodyCrcOf,
  decodeMessageFrame,
  encodeMessageFrame,
  messageFrameUpperBound,
  type MessageInput,
  type StoredMessage,
} from '../../src/store/record-codec.js';

const receive = messagingMethods().get('ReceiveMessage')!.responseType;
const pull = messagingMethods().get('PullMessage')!.responseType;

/** A message as a store read hands it out: encoded as a record, decoded from it (at an offset). */
function read(
  input: Partial<MessageInput>,
  storeTimestamp = 1_764_000_000_456,
  verified = true,
): StoredMessage {
  const m: MessageInput = {
    topic: 'T',
    queueId: 3,
    messageId: '0A0B0C0D0E0F00112233445566778899',
    body: randomBytes(1024),
    bornTimestamp: 1_764_000_000_123,
    bornHost: '10.0.0.1',
    ...input,
  };
  const buf = Buffer.alloc(37 + messageFrameUpperBound(m));
  const len = encodeMessageFrame(buf, 37, m, 2 ** 40 + 5, storeTimestamp);
  const stored = decodeMessageFrame(buf, 37, 4096);
  if (verified) stored.bodyCrc = bodyCrcOf(buf, 37, len, stored.body.length);
  return stored;
}

const handleInfo: DeliveryInfo = {
  receiptHandle: 'AgAAAAMAAAAAAAAAAAAAAAF5g6XlD1SR6jqF-L1Sp3Ye',
  deliveryAttempt: 1,
  invisibleMs: 30_000,
  storeHost: '127.0.0.1:8081',
  crc32Digest: true,
};

const cases: [string, StoredMessage, DeliveryInfo][] = [
  ['a first delivery with a receipt handle (CRC32 digest)', read({}), handleInfo],
  ['the same, the body CRC not known from the read', read({}, undefined, false), handleInfo],
  [
    'an MD5 digest (the official clients), stored by an earlier build',
    read({ properties: { __VELA_BODY_MD5: 'ABCDEF0123456789ABCDEF0123456789' } }),
    { ...handleInfo, crc32Digest: false },
  ],
  ['an MD5 digest computed at delivery', read({}), { ...handleInfo, crc32Digest: false }],
  [
    'tag, keys, message group, user properties, unicode, trace context, delay, redelivery',
    read({
      tag: 'TagA',
      keys: ['k1', 'ключ', ''],
      messageGroup: 'グループ',
      deliveryTimestamp: 1_764_000_100_000,
      properties: { a: '1', ü: 'é😀', empty: '', TRACE_CONTEXT: '00-abc', __VELA_INTERNAL: 'x', 7: 'seven' },
      body: Buffer.alloc(0),
      sysFlag: 2 | 8,
    }),
    { receiptHandle: 'x', deliveryAttempt: 17, invisibleMs: 0, storeHost: 'h:1', crc32Digest: true },
  ],
  [
    'a pulled message of a namespaced topic (no handle, no invisible time)',
    read({ topic: 'ns%T', queueId: 0 }),
    { deliveryAttempt: 1, storeHost: 'h:1', crc32Digest: true },
  ],
  [
    'a large body, long strings, an unknown message type',
    read({ body: randomBytes(300_000), bornHost: 'h'.repeat(300), tag: 't'.repeat(200), sysFlag: 7 }),
    { deliveryAttempt: 1, storeHost: 's'.repeat(200), crc32Digest: false },
  ],
];

for (const [name, m, info] of cases) {
  test(`a delivery written from its record is what the wire object gives: ${name}`, () => {
    assert.ok(planStored(m, info), 'written from the record');
    const fromRecord = frameResponses([{ delivered: { message: m, info } }], () =>
      assert.fail('no fallback'),
    );
    const wire = { message: toWireMessage(m, info) };
    assert.ok(fromRecord.equals(frameMessages([encode(receive, wire)])), 'same bytes as protobufjs');
    assert.ok(fromRecord.equals(frameMessages([encode(pull, wire)])), 'PullMessageResponse too');
    assert.deepEqual(decode(receive, fromRecord.subarray(5)), decode(receive, encode(receive, wire)));
  });
}

test('a message changed after its read, or without a record, goes the object way', () => {
  const m = read({ properties: { k: 'v' } });
  const changed = [
    { ...m, topic: 'Other' },
    { ...m, messageId: '01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF' }, // a FIFO redelivery's new id
    { ...m }, // any copy: it does not carry the record
    Object.assign(read({}), { queueOffset: -1 }), // as read, with a number the writer does not cover
    Object.assign(read({}), { bornTimestamp: 1.5 }),
  ];
  for (const c of changed) {
    assert.equal(planStored(c, handleInfo), undefined);
    const one = frameResponses([{ delivered: { message: c, info: handleInfo } }], (f) => encode(receive, f));
    assert.ok(one.equals(frameMessages([encode(receive, { message: toWireMessage(c, handleInfo) })])));
  }
  assert.equal(planStored(m, { ...handleInfo, receiptHandle: 'é' }), undefined, 'a non-ASCII handle');
});

test('an answer mixing record-written, object-written and other frames is framed as protobufjs frames each', () => {
  const a = read({ tag: 'A' });
  const b = read({ keys: ['k'] });
  const frames: unknown[] = [
    { status: { code: 20000, message: 'OK' } },
    { delivered: { message: a, info: handleInfo } },
    { delivered: { message: { ...b }, info: handleInfo } },
    { message: toWireMessage(b, handleInfo) },
    { delivery_timestamp: { seconds: 1_764_000_000, nanos: 999_000_000 } },
  ];
  const one = frameResponses(frames, (f) => encode(receive, f));
  const asObjects = frames.map((f) => {
    const d = (f as { delivered?: { message: StoredMessage; info: DeliveryInfo } }).delivered;
    return d ? { message: toWireMessage(d.message, d.info) } : f;
  });
  assert.ok(one.equals(frameMessages(asObjects.map((f) => encode(receive, f)))));
});
