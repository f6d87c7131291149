/**
 * Compressed bodies as the Java client sends them (ZLIB, LZ4 frames, Zstandard frames), and the
 * bound on what they may inflate to: compression bombs are refused with MESSAGE_BODY_TOO_LARGE
 * after at most the bound's worth of work, malformed bodies with MESSAGE_CORRUPTED.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import lz4 from 'lz4js';
import { decompressBody } from '../../src/remoting/compression.js';
import { isVelaError } from '../../src/common/errors.js';

const ZLIB = 0x1;
const LZ4 = 0x1 | (1 << 8);
const ZSTD = 0x1 | (2 << 8);

/** `zstd -19` of 40 lines "line N of a zstd fixture; " (1070 bytes). */
const ZSTD_FIXTURE = Buffer.from(
  '28b52ffd642e031d030022440d11a0ed30fc2f0b1a55b56bfa8994c5fe5720dbddddddddcdccccccccfcffffff9b428608cddfa3e09494ad4d32d645bbde82558eb528a811f0eb7f0780a3e203113404ff0d619e1f27611f21841fece00619bca0821344709152f5326c20aa01c0c92f2a',
  'hex',
);
const FIXTURE_TEXT = Array.from({ length: 40 }, (_, i) => `line ${i} of a zstd fixture; `).join('');

/** A Zstandard frame (no declared size, 1 MiB window) of `blocks` RLE blocks of 128 KiB each. */
function zstdRleBomb(blocks: number): Buffer {
  const parts = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 10 << 3])];
  for (let i = 0; i < blocks; i++) {
    const h = ((128 << 10) << 3) | (1 << 1) | (i === blocks - 1 ? 1 : 0);
    parts.push(Buffer.from([h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff, 0x61]));
  }
  return Buffer.concat(parts);
}

function kindOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (isVelaError(err)) return err.kind;
    throw err;
  }
  return 'no error';
}

describe('compressed Remoting bodies', () => {
  const plain = Buffer.from('vela '.repeat(3000));

  test('a body without the compressed flag is kept as it is', () => {
    assert.equal(decompressBody(plain, 0, 1 << 20), plain);
  });

  test('ZLIB bodies (type 0 or 3) are inflated', () => {
    assert.deepEqual(decompressBody(deflateSync(plain), ZLIB, 1 << 20), plain);
    assert.deepEqual(decompressBody(deflateSync(plain), 0x1 | (3 << 8), 1 << 20), plain);
  });

  test('LZ4 frames are inflated', () => {
    const frame = Buffer.from(lz4.compress(plain));
    assert.ok(frame.length < plain.length / 4);
    assert.deepEqual(decompressBody(frame, LZ4, 1 << 20), plain);
    // two frames back to back, as a concatenating writer produces
    assert.deepEqual(
      decompressBody(Buffer.concat([frame, frame]), LZ4, 1 << 20),
      Buffer.concat([plain, plain]),
    );
  });

  test('Zstandard frames are inflated', () => {
    assert.equal(decompressBody(ZSTD_FIXTURE, ZSTD, 1 << 20).toString(), FIXTURE_TEXT);
  });

  test('a body inflating past the maximum body size is refused, for every type', () => {
    const big = Buffer.alloc(3 << 20, 0x61);
    assert.equal(
      kindOf(() => decompressBody(deflateSync(big), ZLIB, 1 << 20)),
      'MESSAGE_BODY_TOO_LARGE',
    );
    assert.equal(
      kindOf(() => decompressBody(Buffer.from(lz4.compress(big)), LZ4, 1 << 20)),
      'MESSAGE_BODY_TOO_LARGE',
    );
    // 64 GiB of "a" in 400 KB: refused after the first MiB
    assert.equal(
      kindOf(() => decompressBody(zstdRleBomb(1 << 19), ZSTD, 1 << 20)),
      'MESSAGE_BODY_TOO_LARGE',
    );
    // a frame declaring a 2 GiB window is refused before the decoder allocates it
    const hugeWindow = Buffer.concat([
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 21 << 3]),
      Buffer.from([1, 0, 0]),
    ]);
    assert.equal(
      kindOf(() => decompressBody(hugeWindow, ZSTD, 1 << 20)),
      'MESSAGE_BODY_TOO_LARGE',
    );
    // exactly the bound is fine
    assert.equal(decompressBody(zstdRleBomb(8), ZSTD, 1 << 20).length, 1 << 20);
  });

  test('malformed bodies are refused as corrupted', () => {
    for (const flag of [ZLIB, LZ4, ZSTD]) {
      assert.equal(
        kindOf(() => decompressBody(Buffer.from('junk junk junk'), flag, 1 << 20)),
        'MESSAGE_CORRUPTED',
      );
    }
    assert.equal(
      kindOf(() => decompressBody(ZSTD_FIXTURE.subarray(0, 40), ZSTD, 1 << 20)),
      'MESSAGE_CORRUPTED',
    );
    const frame = Buffer.from(lz4.compress(plain));
    assert.equal(
      kindOf(() => decompressBody(frame.subarray(0, frame.length - 6), LZ4, 1 << 20)),
      'MESSAGE_CORRUPTED',
    );
    assert.equal(
      kindOf(() => decompressBody(plain, 0x1 | (5 << 8), 1 << 20)),
      'MESSAGE_CORRUPTED',
    );
  });
});
