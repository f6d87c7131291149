/**
 * The SDK's hand-written SendMessage request against protobufjs: for the messages `prepareMessage`
 * makes (every kind, every optional field, empty and non-ASCII strings, large ids and times), the
 * same bytes as protobufjs writes for the request the producer sent before; and what it cannot write
 * the same way is left to protobufjs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { encode, messagingMethods } from '../../src/protocol/codec.js';
import { prepareMessage, wireOnQueue, type Message } from '../../src/client/message.js';
import { encodeSendRequest } from '../../src/client/send-encoder.js';
import { frameMessage } from '../../src/protocol/transport/grpc-wire.js';
import type { WireMessage } from '../../src/protocol/wire-types.js';

const sendRequest = messagingMethods().get('SendMessage')!.requestType;

const viaProtobufjs = (wires: WireMessage[], queueId: number): Buffer =>
  Buffer.from(encode(sendRequest, { messages: wires.map((w) => wireOnQueue(w, queueId)) }));

const wire = (m: Message, namespace = '', transactional = false): WireMessage =>
  prepareMessage(m, namespace, '01AABBCCDDEEFF00112233445566778899', transactional).wire;

test('SendMessage requests are the bytes protobufjs writes, for every kind of message', () => {
  const cases: [string, WireMessage[], number][] = [
    ['one plain message, queue 0', [wire({ topic: 'T', body: 'x' })], 0],
    ['a 1 KiB body, queue 7', [wire({ topic: 'orders', body: randomBytes(1024) })], 7],
    ['a large queue id', [wire({ topic: 'T', body: 'x' })], 2 ** 31 - 1],
    ['a namespace', [wire({ topic: 'T', body: 'x' }, 'ns-1')], 3],
    [
      'tag, keys, properties',
      [
        wire({
          topic: 'T',
          body: 'payload',
          tag: 'TagA',
          keys: ['k1', 'k2', ''],
          properties: { a: '1', empty: '', 'non-ascii': 'é漢字🙂' },
        }),
      ],
      1,
    ],
    ['an empty tag', [wire({ topic: 'T', body: 'x', tag: '' })], 1],
    ['one key as a string', [wire({ topic: 'T', body: 'x', keys: 'only' })], 1],
    ['FIFO', [wire({ topic: 'T', body: 'x', messageGroup: 'group-🙂' })], 2],
    ['DELAY, a Date', [wire({ topic: 'T', body: 'x', deliveryTimestamp: new Date(1_900_000_000_123) })], 2],
    ['DELAY at 1970', [wire({ topic: 'T', body: 'x', deliveryTimestamp: 0 })], 2],
    ['DELAY on a whole second', [wire({ topic: 'T', body: 'x', deliveryTimestamp: 1_900_000_000_000 })], 2],
    ['transactional', [wire({ topic: 'T', body: 'x' }, '', true)], 4],
    ['a non-ASCII topic and body string', [wire({ topic: 'tópico', body: 'añadido' })], 1],
    [
      'a batch of 300, bodies of 0.1 to 20 KiB',
      Array.from({ length: 300 }, (_, i) =>
        wire({ topic: 'T', body: randomBytes(100 + ((i * 997) % 20_000)), tag: i % 2 ? 'odd' : undefined }),
      ),
      5,
    ],
  ];
  for (const [name, wires, queueId] of cases) {
    const mine = encodeSendRequest(wires, queueId);
    assert.ok(mine, name);
    assert.deepEqual(mine, viaProtobufjs(wires, queueId), name);
    // Prefixed: the same bytes after the gRPC message prefix, as frameMessage would write them.
    assert.deepEqual(encodeSendRequest(wires, queueId, true), frameMessage(mine), `${name}, prefixed`);
  }
});

test('what it cannot write as protobufjs does is left to protobufjs', () => {
  // Before 1970, and a fraction of a nanosecond: protobufjs's int64 and int32 rules, not ours.
  assert.equal(encodeSendRequest([wire({ topic: 'T', body: 'x', deliveryTimestamp: -1000 })], 0), undefined);
  assert.equal(
    encodeSendRequest([wire({ topic: 'T', body: 'x', deliveryTimestamp: 1.23456789 })], 0),
    undefined,
  );
  // A fraction of a millisecond that is whole nanoseconds is written, as protobufjs does.
  const sub = [wire({ topic: 'T', body: 'x', deliveryTimestamp: 1.5 })];
  assert.deepEqual(encodeSendRequest(sub, 0), viaProtobufjs(sub, 0));
  // A JavaScript caller's property that is not a string.
  const odd = wire({ topic: 'T', body: 'x', properties: { n: 42 as unknown as string } });
  assert.equal(encodeSendRequest([wire({ topic: 'T', body: 'x' }), odd], 0), undefined);
  // And a request after one of those is whole again (nothing left over from the refused one).
  const ok = [wire({ topic: 'T', body: 'y', keys: ['a'] })];
  assert.deepEqual(encodeSendRequest(ok, 1), viaProtobufjs(ok, 1));
});
