/**
 * The request signature: known vectors (HMAC-SHA1 computed independently, with Python's hmac and
 * openssl), what each official client sends (Java/Node uppercase hex, Go/Python lowercase, Go's
 * `AK//Rocketmq` credential), and the header grammar's refusals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { authorizationValue, formatDateTime, signContent, signRequest } from '../../src/common/signature.js';
import { parseAuthorization, verifySignature } from '../../src/broker/auth/credential.js';
import { isVelaError } from '../../src/common/errors.js';

const VECTORS = [
  { secret: '12345678', dateTime: '20240102T030405Z', hex: '0183ec6e9bf0753ca4402acb305f8e39d222458f' },
  { secret: 'yourSecretKey', dateTime: '20231121T224655Z', hex: 'e950b2b58d448c307b9fb82452dc689021ba15b3' },
  // The secret is UTF-8, as every client encodes it.
  { secret: 'sêcret-ключ', dateTime: '20260101T000000Z', hex: '61f7cf66a6585f32bef3a48265a7c9a95fe1db05' },
];

test('signContent: HMAC-SHA1 of the date-time keyed by the secret, uppercase hex', () => {
  for (const v of VECTORS) assert.equal(signContent(v.secret, v.dateTime), v.hex.toUpperCase());
});

test('verifySignature accepts either case of the hex and nothing else', () => {
  for (const v of VECTORS) {
    assert.ok(verifySignature(v.secret, v.dateTime, v.hex), 'lowercase (Go, Python)');
    assert.ok(verifySignature(v.secret, v.dateTime, v.hex.toUpperCase()), 'uppercase (Java, Node)');
    assert.ok(!verifySignature(`${v.secret}x`, v.dateTime, v.hex), 'another secret');
    assert.ok(!verifySignature(v.secret, '20240102T030406Z', v.hex), 'another date-time');
  }
  const { secret, dateTime, hex } = VECTORS[0]!;
  assert.ok(!verifySignature(secret, dateTime, hex.slice(0, 38)), 'truncated');
  assert.ok(!verifySignature(secret, dateTime, `${hex}00`), 'too long');
  assert.ok(!verifySignature(secret, dateTime, 'zz' + hex.slice(2)), 'not hex');
  assert.ok(!verifySignature(secret, dateTime, Buffer.from(hex, 'hex').toString('base64')), 'base64');
});

test('formatDateTime is yyyyMMddTHHmmssZ in UTC', () => {
  assert.equal(formatDateTime(Date.UTC(2024, 0, 2, 3, 4, 5, 999)), '20240102T030405Z');
  assert.equal(formatDateTime(Date.UTC(1999, 11, 31, 23, 59, 59)), '19991231T235959Z');
});

test('signRequest signs what it stamps, in the header form the official clients send', () => {
  const at = Date.UTC(2024, 0, 2, 3, 4, 5);
  const s = signRequest('rocketmq', '12345678', at);
  assert.equal(s.dateTime, '20240102T030405Z');
  assert.equal(
    s.authorization,
    'MQv2-HMAC-SHA1 Credential=rocketmq, SignedHeaders=x-mq-date-time, Signature=0183EC6E9BF0753CA4402ACB305F8E39D222458F',
  );
  assert.equal(s.authorization, authorizationValue('rocketmq', signContent('12345678', s.dateTime)));
});

test('parseAuthorization reads every client’s form', () => {
  const hex = VECTORS[0]!.hex;
  // Java and Node
  assert.deepEqual(
    parseAuthorization(
      `MQv2-HMAC-SHA1 Credential=ak1, SignedHeaders=x-mq-date-time, Signature=${hex.toUpperCase()}`,
    ),
    { accessKey: 'ak1', signature: hex.toUpperCase() },
  );
  // Go: more `/`-separated parts after the access key
  assert.deepEqual(
    parseAuthorization(
      `MQv2-HMAC-SHA1 Credential=ak1//Rocketmq, SignedHeaders=x-mq-date-time, Signature=${hex}`,
    ),
    { accessKey: 'ak1', signature: hex },
  );
  // Go and Python without credentials: an empty access key (refused later, as unsigned)
  assert.equal(
    parseAuthorization(`MQv2-HMAC-SHA1 Credential=, SignedHeaders=x-mq-date-time, Signature=${hex}`)
      .accessKey,
    '',
  );
});

test('parseAuthorization refuses what is not a MQv2-HMAC-SHA1 credential, as UNAUTHORIZED', () => {
  const hex = VECTORS[0]!.hex;
  for (const bad of [
    `Bearer abc`,
    `MQv2-HMAC-SHA256 Credential=a, SignedHeaders=x-mq-date-time, Signature=${hex}`,
    `MQv2-HMAC-SHA1 SignedHeaders=x-mq-date-time, Signature=${hex}`,
    `MQv2-HMAC-SHA1 Credential=a, SignedHeaders=x-mq-date-time`,
    `MQv2-HMAC-SHA1 Credential=a, SignedHeaders=host, Signature=${hex}`,
    `MQv2-HMAC-SHA1 Credential=a, garbage, Signature=${hex}`,
    `MQv2-HMAC-SHA1 Credential=${'a'.repeat(2000)}, Signature=${hex}`,
  ]) {
    assert.throws(
      () => parseAuthorization(bad),
      (e: unknown) => isVelaError(e, 'ACL_UNAUTHORIZED') && e.code === 40100,
      bad.slice(0, 60),
    );
  }
});
