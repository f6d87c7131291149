import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { acceptsCrc32, crc32Checksum, digestMatches, md5Checksum } from '../../src/protocol/body-digest.js';
import { toWireMessage } from '../../src/protocol/convert.js';
import { WireDigestType } from '../../src/protocol/wire-types.js';
import type { BrokerMessage } from '../../src/broker/message.js';

const body = Buffer.from('123456789');

function stored(over: Partial<BrokerMessage> = {}): BrokerMessage {
  return {
    topic: 'T',
    queueId: 0,
    queueOffset: 7,
    messageId: 'ID',
    body,
    keys: [],
    properties: { a: '1' },
    bornTimestamp: 1_764_000_000_123,
    bornHost: 'h',
    storeTimestamp: 1_764_000_000_456,
    sysFlag: 0,
    ...over,
  } as BrokerMessage;
}

test('CRC32 checksums are 8 uppercase hex digits (the check value of "123456789" is CBF43926)', () => {
  assert.equal(crc32Checksum(body), 'CBF43926');
  assert.equal(crc32Checksum(Buffer.from([0x95])), crc32Checksum(Buffer.from([0x95])).padStart(8, '0'));
  assert.equal(crc32Checksum(Buffer.alloc(0)), '00000000');
  assert.equal(md5Checksum(body), createHash('md5').update(body).digest('hex').toUpperCase());
});

test('digestMatches accepts the right digest in every format and refuses a changed body', () => {
  const md5 = md5Checksum(body);
  assert.ok(digestMatches(body, WireDigestType.CRC32, 'CBF43926'));
  assert.ok(digestMatches(body, WireDigestType.CRC32, 'cbf43926'), 'lowercase hex');
  assert.ok(
    digestMatches(body, WireDigestType.CRC32, String(0xcbf43926)),
    'decimal (the Node client format)',
  );
  assert.ok(digestMatches(body, WireDigestType.MD5, md5));
  assert.ok(digestMatches(body, WireDigestType.MD5, md5.toLowerCase()));
  const sha1 = createHash('sha1').update(body).digest('hex').toUpperCase();
  assert.ok(digestMatches(body, WireDigestType.SHA1, sha1));

  const changed = Buffer.from(body);
  changed[4]! ^= 1;
  assert.equal(digestMatches(changed, WireDigestType.CRC32, 'CBF43926'), false);
  assert.equal(digestMatches(changed, WireDigestType.CRC32, String(0xcbf43926)), false);
  assert.equal(digestMatches(changed, WireDigestType.MD5, md5), false);
  assert.equal(digestMatches(changed, WireDigestType.SHA1, sha1), false);
  for (const bad of ['', 'CBF4392G', 'CBF43926 ', '0xCBF43926', 'CBF439260']) {
    assert.equal(digestMatches(body, WireDigestType.CRC32, bad), false, JSON.stringify(bad));
  }
  assert.equal(digestMatches(body, WireDigestType.MD5, ''), false);
});

test('x-vela-accept-digest: CRC32 alone or in a list, any case', () => {
  assert.ok(acceptsCrc32('CRC32'));
  assert.ok(acceptsCrc32('MD5, crc32'));
  assert.equal(acceptsCrc32(''), false);
  assert.equal(acceptsCrc32(undefined), false);
  assert.equal(acceptsCrc32('MD5'), false);
  assert.equal(acceptsCrc32('CRC32C'), false);
});

test('deliveries carry MD5 unless the caller takes CRC32; an MD5 stored by earlier builds is used as is', () => {
  const d = { deliveryAttempt: 1, storeHost: 'h:1' };
  assert.deepEqual(toWireMessage(stored(), d).system_properties?.body_digest, {
    type: WireDigestType.MD5,
    checksum: md5Checksum(body),
  });
  assert.deepEqual(toWireMessage(stored(), { ...d, crc32Digest: true }).system_properties?.body_digest, {
    type: WireDigestType.CRC32,
    checksum: 'CBF43926',
  });
  const old = toWireMessage(
    stored({ properties: { a: '1', __VELA_BODY_MD5: 'ABCDEF0123456789ABCDEF0123456789' } }),
    d,
  );
  assert.deepEqual(old.system_properties?.body_digest, {
    type: WireDigestType.MD5,
    checksum: 'ABCDEF0123456789ABCDEF0123456789',
  });
  assert.deepEqual(old.user_properties, { a: '1' }, 'the stored digest is not a user property');
});
