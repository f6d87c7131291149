import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encode, messagingMethods } from '../../src/protocol/codec.js';
import { encodeSendResponse, type SendResponseWire } from '../../src/protocol/send-codec.js';

const send = messagingMethods().get('SendMessage')!;
const OK = { code: 20000, message: 'OK' };

const answers: [string, SendResponseWire][] = [
  [
    'a batch stored',
    {
      status: OK,
      entries: Array.from({ length: 32 }, (_, i) => ({
        status: OK,
        message_id: `01AABBCCDDEEFF00112233445566778${i}`,
        transaction_id: '',
        offset: i * 1000,
      })),
    },
  ],
  [
    'transactions, recall handles, large offsets, refused entries, non-ASCII text',
    {
      status: { code: 40000, message: 'some messages failed: ошибка' },
      entries: [
        { status: OK, message_id: 'm1', transaction_id: 'tx-1', offset: 2 ** 40 + 7 },
        { status: OK, message_id: 'm2', transaction_id: '', offset: 3, recall_handle: 'recall-ключ' },
        {
          status: { code: 40006, message: 'topic not found' },
          message_id: '',
          transaction_id: '',
          offset: 0,
        },
        {
          status: { code: 0, message: '' },
          message_id: 'm4',
          transaction_id: '',
          offset: 0,
          recall_handle: '',
        },
      ],
    },
  ],
  ['an error answer, no entries', { status: { code: 50001, message: 'internal error' } }],
];

for (const [name, res] of answers) {
  test(`a SendMessageResponse written by hand is byte for byte protobufjs's: ${name}`, () => {
    const fast = encodeSendResponse(res);
    assert.ok(fast, 'covered');
    assert.ok(fast.equals(Buffer.from(encode(send.responseType, res))));
  });
}

test('an answer the hand encoder does not cover is left to protobufjs', () => {
  const entry = { status: OK, message_id: 'm', transaction_id: '', offset: 1 };
  assert.equal(encodeSendResponse({ status: { code: -1, message: '' } }), undefined);
  assert.equal(encodeSendResponse({ status: OK, entries: [{ ...entry, offset: -1 }] }), undefined);
  assert.equal(encodeSendResponse({ status: OK, entries: [{ ...entry, offset: 1.5 }] }), undefined);
  assert.ok(encodeSendResponse({ status: OK, entries: [entry] }), 'and the usual one is');
});
