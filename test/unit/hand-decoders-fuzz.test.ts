/**
 * The broker's hand-written request decoders (SendMessage, AckMessage) against protobufjs on damaged
 * input: valid requests with bytes flipped, inserted, removed or cut off, from a fixed seed so that a
 * failure reproduces. For every input the hand decoder either leaves it to protobufjs (undefined) or
 * gives exactly protobufjs's object — never an object for bytes protobufjs refuses, never a different
 * one, never an exception. A few thousand inputs each; no timing.
 */
import { test } from 'node:test';
import type protobuf from 'protobufjs';
import assert from 'node:assert/strict';
import { MALFORMED, decodeRequest, encode, messagingMethods } from '../../src/protocol/codec.js';
import { decodeSendRequest } from '../../src/protocol/send-request-codec.js';
import { decodeAckRequest } from '../../src/protocol/ack-codec.js';
import { seededRandom } from '../helpers.js';

/** One damaged copy of `bytes`: a byte changed, inserted or removed, a span cut out, or the end cut off. */
function damage(bytes: Buffer, rnd: (n: number) => number): Buffer {
  const b = Buffer.from(bytes);
  const at = rnd(b.length);
  switch (rnd(6)) {
    case 0: // a random byte
      b[at] = rnd(256);
      return b;
    case 1: // a bit flipped
      b[at]! ^= 1 << rnd(8);
      return b;
    case 2: // a byte that reads as a tag, a length or a varint continuation
      b[at] = [0x0a, 0x12, 0x1a, 0x22, 0x80, 0xff, 0x00, 0x7f][rnd(8)]!;
      return b;
    case 3: // a byte inserted
      return Buffer.concat([b.subarray(0, at), Buffer.from([rnd(256)]), b.subarray(at)]);
    case 4: // a span removed
      return Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + rnd(16)))]);
    default: // cut short
      return b.subarray(0, at);
  }
}

function agree(
  name: string,
  decodeByHand: (bytes: Buffer) => object | undefined,
  type: Parameters<typeof decodeRequest>[0],
  bytes: Buffer,
): 'hand' | 'left' {
  let byHand: object | undefined;
  try {
    byHand = decodeByHand(bytes);
  } catch (err) {
    assert.fail(`${name}: the hand decoder threw (${String(err)}) on ${bytes.toString('hex')}`);
  }
  if (byHand === undefined) return 'left';
  const reference = decodeRequest(type, bytes);
  assert.ok(
    !(MALFORMED in reference),
    `${name}: decoded by hand what protobufjs refuses (${String((reference as Record<symbol, unknown>)[MALFORMED])}): ${bytes.toString('hex')}`,
  );
  assert.deepEqual(byHand, reference, `${name}: ${bytes.toString('hex')}`);
  return 'hand';
}

function fuzz(
  name: string,
  decodeByHand: (bytes: Buffer) => object | undefined,
  type: Parameters<typeof decodeRequest>[0],
  seeds: readonly Buffer[],
  rounds: number,
): void {
  const rnd = seededRandom(0x5eed + seeds.length);
  const count = { hand: 0, left: 0 };
  for (let i = 0; i < rounds; i++) {
    let bytes = seeds[rnd(seeds.length)]!;
    // One to three damages on top of each other.
    for (let d = 1 + rnd(3); d > 0; d--) bytes = damage(bytes, rnd);
    count[agree(name, decodeByHand, type, bytes)]++;
  }
  // The inputs must exercise both ways, or the test says nothing about one of them.
  assert.ok(count.hand > rounds / 20, `${name}: only ${count.hand} of ${rounds} decoded by hand`);
  assert.ok(count.left > rounds / 20, `${name}: only ${count.left} of ${rounds} left to protobufjs`);
}

const methods = messagingMethods();
const send = methods.get('SendMessage')!;
const ack = methods.get('AckMessage')!;

test('SendMessage: damaged requests are decoded by hand as protobufjs decodes them, or left to it', () => {
  const message = (i: number) => ({
    topic: { resource_namespace: i % 2 ? 'ns' : '', name: `T${i}` },
    user_properties: i % 2 ? { a: `b${i}`, ключ: 'значение' } : {},
    system_properties: {
      tag: `tag${i}`,
      keys: i % 3 ? ['k1', `k${i}`] : [],
      message_id: `01AABBCCDDEEFF00112233445566770${i}`,
      body_digest: { type: 1, checksum: 'ABCDEF01' },
      body_encoding: 1,
      message_type: 1 + (i % 4),
      born_timestamp: { seconds: 1_764_000_000 + i, nanos: 1_000_000 * i },
      born_host: 'host-1',
      queue_id: i,
      ...(i % 2 ? { delivery_timestamp: { seconds: 1_764_000_100 } } : { message_group: `g${i}` }),
    },
    body: Buffer.from(`body ${i} `.repeat(3 + i)),
  });
  const seeds = [1, 2, 3].map((n) =>
    Buffer.from(encode(send.requestType, { messages: Array.from({ length: n }, (_, i) => message(i)) })),
  );
  fuzz('SendMessage', decodeSendRequest, send.requestType, seeds, 4000);
});

test('AckMessage: damaged requests are decoded by hand as protobufjs decodes them, or left to it', () => {
  const seeds = [1, 4].map((n) =>
    Buffer.from(
      encode(ack.requestType, {
        group: { name: 'G' },
        topic: { resource_namespace: 'ns', name: 'T' },
        entries: Array.from({ length: n }, (_, i) => ({
          message_id: `01AB${i}`,
          receipt_handle: `AgAAAAMAAAAAAAAAAAAAAAF5g6XlD1SR6jqF-L1Sp3Y${i}`,
        })),
      }),
    ),
  );
  fuzz('AckMessage', decodeAckRequest, ack.requestType, seeds, 4000);
});

/**
 * Every scalar field of `type` (and of the messages inside it, a few levels down) written once with
 * its default value ('' or 0, which encoders leave out), wrapped by `wrap` into a whole request.
 */
function defaultsWritten(type: protobuf.Type, wrap: (inner: Buffer) => Buffer, depth = 0): Buffer[] {
  const varint = (n: number) => {
    const out: number[] = [];
    do {
      out.push((n & 127) | (n > 127 ? 128 : 0));
      n >>>= 7;
    } while (n > 0);
    return Buffer.from(out);
  };
  const field = (id: number, wireType: 0 | 2, payload: Buffer) =>
    Buffer.concat([
      varint((id << 3) | wireType),
      wireType === 2 ? varint(payload.length) : Buffer.alloc(0),
      payload,
    ]);
  const out: Buffer[] = [];
  for (const f of type.fieldsArray) {
    f.resolve();
    if (f.map) continue;
    // Not instanceof: the schema's protobufjs may be another copy of the module than this file's.
    const nested =
      f.resolvedType && 'fieldsArray' in f.resolvedType ? (f.resolvedType as protobuf.Type) : undefined;
    if (f.repeated && !nested) continue; // a repeated scalar keeps an empty element
    if (nested) {
      if (depth < 3) out.push(...defaultsWritten(nested, (inner) => wrap(field(f.id, 2, inner)), depth + 1));
    } else if (f.type === 'string' || f.type === 'bytes') {
      out.push(wrap(field(f.id, 2, Buffer.alloc(0))));
    } else {
      out.push(wrap(field(f.id, 0, Buffer.from([0])))); // numbers, enums, bools
    }
  }
  return out;
}

test('a field given with its default value (encoders leave it out): as protobufjs decodes it, or left to it', () => {
  const messageType = send.requestType.fields.messages!.resolvedType as protobuf.Type;
  const sendInputs = defaultsWritten(messageType, (inner) =>
    Buffer.concat([Buffer.from([0x0a]), Buffer.from([inner.length]), inner]),
  );
  assert.ok(sendInputs.length > 20);
  for (const bytes of sendInputs) agree('SendMessage', decodeSendRequest, send.requestType, bytes);
  const ackInputs = defaultsWritten(ack.requestType, (inner) => inner);
  assert.ok(ackInputs.length >= 6);
  for (const bytes of ackInputs) agree('AckMessage', decodeAckRequest, ack.requestType, bytes);
});
