import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ReceiptHandles } from '../../src/broker/receipt-handle.js';
import { isVelaError } from '../../src/common/errors.js';

const invalid = (err: unknown) => isVelaError(err, 'INVALID_RECEIPT_HANDLE');
const fields = { queueId: (3 | 0x8000_0000) >>> 0, offset: 2 ** 40 + 17, nonce: 0xdead_beef };

test('a handle decodes to its fields for its own topic and group only', () => {
  const h = ReceiptHandles.withKey(randomBytes(32));
  const handle = h.encode('T', 'G', fields);
  assert.deepEqual(h.decode(handle, 'T', 'G'), fields);
  assert.throws(() => h.decode(handle, 'T2', 'G'), invalid);
  assert.throws(() => h.decode(handle, 'T', 'G2'), invalid);
  assert.throws(() => h.decode(handle, 'TG', ''), invalid, 'the topic/group boundary is part of the key');
  assert.throws(
    () => ReceiptHandles.withKey(randomBytes(32)).decode(handle, 'T', 'G'),
    invalid,
    'another key',
  );
});

test('changing any bit of a handle makes it invalid', () => {
  const h = ReceiptHandles.withKey(randomBytes(32));
  const raw = Buffer.from(h.encode('T', 'G', fields), 'base64url');
  for (let i = 0; i < raw.length; i++) {
    for (let bit = 0; bit < 8; bit++) {
      const t = Buffer.from(raw);
      t[i]! ^= 1 << bit;
      assert.throws(() => h.decode(t.toString('base64url'), 'T', 'G'), invalid, `byte ${i} bit ${bit}`);
    }
  }
});

test('changing any bit of a handle makes it invalid in a batch too, and only that one', () => {
  const h = ReceiptHandles.withKey(randomBytes(32));
  const good = h.encode('T', 'G', fields);
  const raw = Buffer.from(good, 'base64url');
  const batch: string[] = [];
  for (let i = 0; i < raw.length; i++) {
    for (let bit = 0; bit < 8; bit++) {
      const t = Buffer.from(raw);
      t[i]! ^= 1 << bit;
      batch.push(t.toString('base64url'), good);
    }
  }
  const out = h.decodeMany(batch, 'T', 'G');
  for (let i = 0; i < out.length; i += 2) {
    assert.ok(invalid(out[i]), `flipped bit ${i / 2}`);
    assert.deepEqual(out[i + 1], fields, `the untouched one beside it (${i / 2})`);
  }
});

test('handles of different deliveries differ, and the same delivery gives the same handle', () => {
  const h = ReceiptHandles.withKey(randomBytes(32));
  const a = h.encode('T', 'G', fields);
  assert.equal(h.encode('T', 'G', fields), a);
  assert.notEqual(h.encode('T', 'G', { ...fields, nonce: fields.nonce + 1 }), a);
  assert.notEqual(h.encode('T', 'G', { ...fields, offset: fields.offset + 1 }), a);
  assert.notEqual(h.encode('T', 'G2', fields), a);
});

test('version 1 handles (issued before the upgrade) are still accepted, and still checked', () => {
  const key = randomBytes(32);
  const h = ReceiptHandles.withKey(key);
  const v1 = h.encodeV1('T', 'G', fields);
  assert.deepEqual(h.decode(v1, 'T', 'G'), fields);
  assert.throws(() => h.decode(v1, 'T', 'G2'), invalid);
  const t = Buffer.from(v1, 'base64url');
  t[t.length - 1]! ^= 1;
  assert.throws(() => h.decode(t.toString('base64url'), 'T', 'G'), invalid);
});

test('malformed handles are refused with INVALID_RECEIPT_HANDLE', () => {
  const h = ReceiptHandles.withKey(randomBytes(32));
  for (const bad of ['', 'x', 'A'.repeat(65), 42, undefined, Buffer.alloc(29, 3).toString('base64url')]) {
    assert.throws(() => h.decode(bad, 'T', 'G'), invalid, String(bad));
  }
});

test('handles issued and checked in batches are the same as one at a time', () => {
  const key = randomBytes(32);
  const h = ReceiptHandles.withKey(key);
  const many = Array.from({ length: 40 }, (_, i) => ({
    queueId: i % 8,
    offset: 1000 + i,
    nonce: (i * 2654435761) >>> 0,
  }));
  const handles = h.encodeMany('T', 'G', many);
  assert.deepEqual(
    handles,
    many.map((f) => h.encode('T', 'G', f)),
  );
  const tampered = Buffer.from(handles[3]!, 'base64url');
  tampered[20]! ^= 4;
  const mixed: unknown[] = [
    ...handles,
    h.encodeV1('T', 'G', many[0]!),
    tampered.toString('base64url'),
    'junk',
    7,
    h.encode('T', 'G2', many[1]!),
    `${handles[5]!.slice(0, 38)}!`, // a character outside base64url
    `${handles[5]!}=`, // padded
    handles[5]!.slice(0, 38),
  ];
  const out = h.decodeMany(mixed, 'T', 'G');
  assert.deepEqual(out.slice(0, 41), [...many, many[0]]);
  for (const bad of out.slice(41)) assert.ok(invalid(bad), String(bad));
  assert.deepEqual(h.encodeMany('T', 'G', []), []);
});
