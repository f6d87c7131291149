import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encode, type } from '../../src/protocol/codec.js';
import { guardRequest } from '../../src/protocol/request-guard.js';
import { LimitError } from '../../src/protocol/transport/grpc-wire.js';

const SendRequest = type('SendMessageRequest');
const AckRequest = type('AckMessageRequest');
const limits = { maxEntries: 1024, maxValues: 1024 * 512 };
const tooLarge = (e: unknown) => e instanceof LimitError && e.kind === 'message-too-large';
const malformed = (e: unknown) => e instanceof LimitError && e.kind === 'malformed';

function message(i: number, properties = 0) {
  return {
    topic: { name: 'T' },
    body: Buffer.alloc(1024, 1),
    user_properties: Object.fromEntries(Array.from({ length: properties }, (_, k) => [`k${k}`, `v${k}`])),
    system_properties: { message_id: `ID${i}`, tag: 'A', keys: ['k1', 'k2'], message_type: 1 },
  };
}

test('a full legitimate batch passes: 1,024 messages with 128 properties each', () => {
  const bytes = encode(SendRequest, { messages: Array.from({ length: 1024 }, (_, i) => message(i, 128)) });
  guardRequest(SendRequest, bytes, limits, 1);
});

test('the decode bomb of the issue (megabytes of empty messages) is refused without decoding', () => {
  const bomb = Buffer.alloc(4 * 1024 * 1024);
  for (let i = 0; i < bomb.length; i += 2) bomb[i] = 0x0a; // field 1, length 0: an empty Message
  const t0 = performance.now();
  assert.throws(() => guardRequest(SendRequest, bomb, limits, 1), tooLarge);
  assert.ok(performance.now() - t0 < 200, 'the refusal is cheap');
});

test('entries beyond the limit are refused; at the limit they pass', () => {
  const entries = (n: number) =>
    encode(AckRequest, {
      group: { name: 'G' },
      topic: { name: 'T' },
      entries: Array.from({ length: n }, (_, i) => ({ message_id: `m${i}`, receipt_handle: `h${i}` })),
    });
  guardRequest(AckRequest, entries(1024), limits, 3);
  assert.throws(() => guardRequest(AckRequest, entries(1025), limits, 3), tooLarge);
});

test('nested values count too: one message with a million empty keys is refused', () => {
  // Message { system_properties (3) { keys (2): "" × n } }
  const n = 1_000_000;
  const inner = Buffer.alloc(2 * n);
  for (let i = 0; i < inner.length; i += 2) inner[i] = 0x12;
  const sp = Buffer.concat([Buffer.from([0x1a]), varint(inner.length), inner]);
  const msg = Buffer.concat([Buffer.from([0x0a]), varint(sp.length), sp]);
  assert.throws(() => guardRequest(SendRequest, msg, limits, 1), tooLarge);
});

test('truncated or impossible wire data is malformed', () => {
  assert.throws(() => guardRequest(SendRequest, Buffer.from([0x0a, 0x05, 0x00]), limits, 1), malformed);
  assert.throws(() => guardRequest(SendRequest, Buffer.from([0x0b]), limits, 1), malformed); // group start
  assert.throws(() => guardRequest(SendRequest, Buffer.from([0x80]), limits, 1), malformed);
});

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}
