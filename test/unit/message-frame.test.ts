import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decode, encode, fromMillis, messagingMethods } from '../../src/protocol/codec.js';
import { encodeMessageResponse, frameResponses } from '../../src/protocol/message-frame.js';
import { frameMessages } from '../../src/protocol/transport/grpc-wire.js';
import { toWireMessage } from '../../src/protocol/convert.js';
import type { WireMessage } from '../../src/protocol/wire-types.js';
import type { BrokerMessage } from '../../src/broker/message.js';

const receive = messagingMethods().get('ReceiveMessage')!.responseType;
const pull = messagingMethods().get('PullMessage')!.responseType;

function stored(over: Partial<BrokerMessage> = {}): BrokerMessage {
  return {
    topic: 'T',
    queueId: 3,
    queueOffset: 2 ** 40 + 5,
    messageId: '0A0B0C0D0E0F00112233445566778899',
    body: randomBytes(1024),
    keys: [],
    properties: { __VELA_BODY_MD5: 'ABCDEF0123456789ABCDEF0123456789' },
    bornTimestamp: 1_764_000_000_123,
    bornHost: '10.0.0.1',
    storeTimestamp: 1_764_000_000_456,
    sysFlag: 0,
    ...over,
  } as BrokerMessage;
}

const cases: [string, WireMessage][] = [
  [
    'a first delivery with a receipt handle',
    toWireMessage(stored(), {
      receiptHandle: 'h'.repeat(39),
      deliveryAttempt: 1,
      invisibleMs: 30_000,
      storeHost: '127.0.0.1:8081',
    }),
  ],
  [
    'tag, keys, message group, user properties, unicode, trace context, delay, redelivery',
    toWireMessage(
      stored({
        tag: 'TagA',
        keys: ['k1', 'ключ', ''],
        messageGroup: 'グループ',
        deliveryTimestamp: 1_764_000_100_000,
        properties: { a: '1', ü: 'é😀', empty: '', traceparent: '00-abc' },
        body: Buffer.alloc(0),
        sysFlag: 1,
      } as Partial<BrokerMessage>),
      { receiptHandle: 'x', deliveryAttempt: 17, invisibleMs: 0, storeHost: 'h:1' },
    ),
  ],
  [
    'a pulled message (no handle, no invisible time)',
    toWireMessage(stored({ topic: 'ns%T' }), { deliveryAttempt: 1, storeHost: 'h:1' }),
  ],
  [
    'a large body',
    toWireMessage(stored({ body: randomBytes(300_000) }), { deliveryAttempt: 1, storeHost: 'h:1' }),
  ],
  [
    'a hand-built message with absent fields',
    {
      topic: { name: 'T' },
      system_properties: { message_id: 'm', queue_offset: 0, born_timestamp: fromMillis(0) },
    },
  ],
];

for (const [name, wire] of cases) {
  test(`the hand-written frame is byte for byte protobufjs's: ${name}`, () => {
    const fast = encodeMessageResponse(wire);
    assert.ok(fast, 'covered by the fast path');
    const slow = Buffer.from(encode(receive, { message: wire }));
    assert.ok(fast.equals(slow), 'same bytes as protobufjs');
    assert.ok(fast.equals(Buffer.from(encode(pull, { message: wire }))), 'PullMessageResponse too');
    assert.deepEqual(decode(receive, fast), decode(receive, slow));
  });
}

test('what the fast path does not cover is left to protobufjs', () => {
  const base = toWireMessage(stored(), { deliveryAttempt: 1, storeHost: 'h:1' });
  assert.equal(
    encodeMessageResponse({ ...base, system_properties: { ...base.system_properties, priority: 3 } }),
    undefined,
  );
  assert.equal(
    encodeMessageResponse({ ...base, system_properties: { ...base.system_properties, queue_id: -1 } }),
    undefined,
  );
  assert.equal(
    encodeMessageResponse({ ...base, system_properties: { ...base.system_properties, queue_offset: 1.5 } }),
    undefined,
  );
  assert.ok(encodeMessageResponse(base), 'and the next message is encoded again');
});

test('a whole answer in one buffer is the gRPC framing of protobufjs encoding each frame', () => {
  const base = toWireMessage(stored(), { deliveryAttempt: 1, storeHost: 'h:1' });
  const frames: unknown[] = [
    { status: { code: 20000, message: 'OK' } },
    ...cases.map(([, wire]) => ({ message: wire })),
    { message: { ...base, system_properties: { ...base.system_properties, priority: 3 } } }, // not covered
    { message: base },
    { delivery_timestamp: fromMillis(1_764_000_000_999) },
  ];
  const one = frameResponses(frames, (f) => encode(receive, f));
  const expected = frameMessages(frames.map((f) => encode(receive, f)));
  assert.ok(one.equals(expected));
});
