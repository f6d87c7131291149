import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeRequest, encode, messagingMethods } from '../../src/protocol/codec.js';
import {
  ackEcho,
  decodeAckRequest,
  encodeAckResponse,
  type AckResponseWire,
} from '../../src/protocol/ack-codec.js';

const ack = messagingMethods().get('AckMessage')!;
const bytesOf = (o: unknown) => Buffer.from(encode(ack.requestType, o));
const handle = 'AgAAAAMAAAAAAAAAAAAAAAF5g6XlD1SR6jqF-L1Sp3Ye';

const requests: [string, unknown][] = [
  [
    'a batch of entries',
    {
      group: { name: 'G' },
      topic: { resource_namespace: 'ns', name: 'T' },
      entries: Array.from({ length: 32 }, (_, i) => ({ message_id: `01AB${i}`, receipt_handle: handle })),
    },
  ],
  ['no entries, no resources', {}],
  ['empty strings and non-ASCII text', { group: { name: '' }, topic: { name: 'тема' }, entries: [{}] }],
  ['an entry without its id', { group: { name: 'G' }, entries: [{ receipt_handle: handle }] }],
];

for (const [name, req] of requests) {
  test(`an AckMessageRequest decoded by hand is what protobufjs gives: ${name}`, () => {
    const bytes = bytesOf(req);
    assert.deepEqual(decodeAckRequest(bytes), decodeRequest(ack.requestType, bytes));
  });
}

test('fields in another order, and a resource given twice, decode as protobufjs decodes them', () => {
  const entry = bytesOf({ entries: [{ message_id: 'm', receipt_handle: 'h' }] });
  const group1 = bytesOf({ group: { resource_namespace: 'a', name: 'G1' } });
  const group2 = bytesOf({ group: { name: 'G2' } });
  const bytes = Buffer.concat([entry, group1, entry, group2]);
  assert.deepEqual(decodeAckRequest(bytes), decodeRequest(ack.requestType, bytes));
});

test('a string that is not UTF-8 is left to protobufjs, which refuses the request', () => {
  for (const bad of [Buffer.from([0xf0, 0x90, 0x80, 0x41]), Buffer.from([0x6d, 0xff])]) {
    const bytes = Buffer.concat([
      Buffer.from([(3 << 3) | 2, 2 + bad.length + 2 + handle.length, (1 << 3) | 2, bad.length]),
      bad,
      Buffer.from([(2 << 3) | 2, handle.length]),
      Buffer.from(handle),
    ]);
    assert.equal(decodeAckRequest(bytes), undefined, `not decoded by hand: ${bad.toString('hex')}`);
    const byProtobufjs = decodeRequest(ack.requestType, bytes) as Record<symbol, unknown>;
    assert.ok(Object.getOwnPropertySymbols(byProtobufjs).length > 0, 'protobufjs marks it malformed');
  }
});

test('what the hand decoder does not cover is left to protobufjs', () => {
  const lite = bytesOf({ entries: [{ message_id: 'm', receipt_handle: 'h', lite_topic: 'x' }] });
  assert.equal(decodeAckRequest(lite), undefined, 'an entry with a lite topic');
  const unknown = Buffer.concat([bytesOf({ group: { name: 'G' } }), Buffer.from([0x48, 0x01])]); // field 9
  assert.equal(decodeAckRequest(unknown), undefined, 'an unknown field');
  const truncated = bytesOf({ entries: [{ message_id: 'm', receipt_handle: handle }] }).subarray(0, 10);
  assert.equal(decodeAckRequest(truncated), undefined, 'bytes that end inside a field');
  assert.deepEqual(decodeAckRequest(bytesOf({ group: { name: 'G' } })), { group: { name: 'G' } }, 'and on');
});

const responses: [string, AckResponseWire][] = [
  [
    'every entry acknowledged',
    {
      status: { code: 20000, message: 'OK' },
      entries: Array.from({ length: 32 }, (_, i) => ({
        message_id: `01AB${i}`,
        receipt_handle: handle,
        status: { code: 20000, message: 'OK' },
      })),
    },
  ],
  [
    'refused entries, empty and non-ASCII strings',
    {
      status: { code: 40000, message: 'some entries failed: ошибка' },
      entries: [
        { message_id: '', receipt_handle: '', status: { code: 40004, message: 'invalid receipt handle' } },
        { message_id: 'm', receipt_handle: 'ключ', status: { code: 0, message: '' } },
      ],
    },
  ],
  ['an error answer, no entries', { status: { code: 50001, message: 'internal' } }],
];

for (const [name, res] of responses) {
  test(`an AckMessageResponse written by hand is byte for byte protobufjs's: ${name}`, () => {
    const fast = encodeAckResponse(res);
    assert.ok(fast, 'covered');
    assert.ok(fast.equals(Buffer.from(encode(ack.responseType, res))));
  });
}

test('an answer the hand encoder does not cover is left to protobufjs', () => {
  assert.equal(encodeAckResponse({ status: { code: -1, message: '' } }), undefined);
  assert.equal(encodeAckResponse({ status: { code: 1.5, message: '' } }), undefined);
});

test('an all-OK answer that repeats the request entries from its bytes is byte for byte protobufjs', () => {
  const entries = [
    ...Array.from({ length: 300 }, (_, i) => ({
      message_id: `01AB${i}`.padEnd(32, 'F'),
      receipt_handle: handle,
    })),
    { message_id: 'идентификатор', receipt_handle: handle }, // non-ASCII: copied as bytes all the same
    { message_id: 'x'.repeat(200), receipt_handle: 'h'.repeat(130) }, // lengths of two-byte varints
  ];
  const req = { group: { name: 'G' }, topic: { name: 'T' }, entries };
  const decoded = decodeAckRequest(bytesOf(req))!;
  const echo = ackEcho(decoded);
  assert.ok(echo, 'entries written as protobufjs writes them can be repeated');
  for (const status of [
    { code: 20000, message: 'OK' },
    { code: 20000, message: '' },
  ]) {
    const fast = encodeAckResponse({ status, echo });
    const expected = Buffer.from(
      encode(ack.responseType, { status, entries: entries.map((e) => ({ ...e, status })) }),
    );
    assert.ok(fast?.equals(expected), `the same bytes with status ${JSON.stringify(status)}`);
  }
});

test('entries not written as protobufjs writes them are answered from the decoded strings', () => {
  const one = (fields: Buffer) => Buffer.concat([Buffer.from([(3 << 3) | 2, fields.length]), fields]);
  const id = Buffer.from([(1 << 3) | 2, 1, 0x6d]); // message_id 'm'
  const h = Buffer.from([(2 << 3) | 2, 1, 0x68]); // receipt_handle 'h'
  const cases: [string, Buffer][] = [
    ['the handle before the id', one(Buffer.concat([h, id]))],
    ['a length padded to two bytes', one(Buffer.concat([Buffer.from([(1 << 3) | 2, 0x81, 0x00, 0x6d]), h]))],
    ['the id given twice', one(Buffer.concat([id, id, h]))],
    ['no id', one(h)],
    ['no handle', one(id)],
  ];
  for (const [what, entry] of cases) {
    const bytes = Buffer.concat([one(Buffer.concat([id, h])), entry]);
    const decoded = decodeAckRequest(bytes);
    assert.deepEqual(
      decoded,
      decodeRequest(ack.requestType, bytes),
      `${what}: decoded as protobufjs decodes it`,
    );
    assert.equal(ackEcho(decoded!), undefined, `${what}: not repeated from the bytes`);
  }
  const fine = decodeAckRequest(one(Buffer.concat([id, h])))!;
  assert.deepEqual(ackEcho(fine)?.spans, [2, 6]);
});
