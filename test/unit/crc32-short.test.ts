/** The CRC-32 of a short span in JavaScript (a record header's, where a call into zlib costs more). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { crc32Short } from '../../src/common/crc32-short.js';

test('crc32Short equals zlib.crc32 of the subarray, for every length and alignment', () => {
  const buf = randomBytes(700);
  for (let start = 0; start < 9; start++)
    for (let len = 0; len <= 600; len++)
      assert.equal(
        crc32Short(buf, start, start + len),
        crc32(buf.subarray(start, start + len)) >>> 0,
        `start ${start}, length ${len}`,
      );
});

test('crc32Short of known inputs', () => {
  assert.equal(crc32Short(Buffer.alloc(0), 0, 0), 0);
  assert.equal(crc32Short(Buffer.from('123456789'), 0, 9), 0xcbf43926);
  assert.equal(crc32Short(new Uint8Array(32).fill(0xff), 0, 32), crc32(Buffer.alloc(32, 0xff)) >>> 0);
});
