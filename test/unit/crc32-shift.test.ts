/** CRC-32 of a concatenation from its parts' CRCs (what derives a record's body CRC from its checksum). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { crc32Shift } from '../../src/common/crc32-shift.js';

test('crc(A ‖ B) is crc32Shift(crc(A), |B|) xor crc(B), for every length from 0 up', () => {
  const lengths = [0, 1, 2, 3, 7, 8, 255, 1024, 1025, 4096, 65_535, 65_536, 1_000_003];
  for (const la of [0, 1, 61, 200]) {
    const a = randomBytes(la);
    for (const lb of lengths) {
      const b = randomBytes(lb);
      const whole = crc32(Buffer.concat([a, b])) >>> 0;
      assert.equal((crc32Shift(crc32(a), lb) ^ crc32(b)) >>> 0, whole, `|A| ${la}, |B| ${lb}`);
    }
  }
});

test('shifting by 0 bytes changes nothing, and shifts compose', () => {
  for (let i = 0; i < 50; i++) {
    const c = randomBytes(4).readUInt32LE(0);
    assert.equal(crc32Shift(c, 0), c);
    const x = 1 + ((i * 7919) % 5000);
    const y = 1 + ((i * 104_729) % 7000);
    assert.equal(crc32Shift(crc32Shift(c, x), y), crc32Shift(c, x + y));
  }
});

test('many distinct lengths (past the cache of operators) stay right', () => {
  const a = randomBytes(40);
  for (let lb = 0; lb < 5000; lb += 1) {
    if (lb % 97 !== 0) {
      crc32Shift(1, lb + 10_000); // fill the cache with other lengths
      continue;
    }
    const b = randomBytes(lb);
    assert.equal((crc32Shift(crc32(a), lb) ^ crc32(b)) >>> 0, crc32(Buffer.concat([a, b])) >>> 0);
  }
});

test('a length used often (shifted by its table) gives what the 32-step multiply gives', () => {
  // The first uses of a length multiply; later ones look the product up. Both must agree with zlib.
  for (const lb of [1, 1024, 1100, 65_536]) {
    for (let i = 0; i < 200; i++) {
      const a = randomBytes(1 + (i % 70));
      const b = randomBytes(lb);
      assert.equal(
        (crc32Shift(crc32(a), lb) ^ crc32(b)) >>> 0,
        crc32(Buffer.concat([a, b])) >>> 0,
        `|B| ${lb}, use ${i + 1}`,
      );
    }
  }
});
