/**
 * CRC-32 (zlib's polynomial and conditioning) of a short span, in JavaScript: for a few hundred bytes
 * or fewer, slicing by 8 costs less than a call into zlib and the subarray it needs (~75 against
 * ~185 ns for 100 bytes, ~125 against ~240 for 200; `node --import tsx bench/body-crc.ts`). Longer
 * spans belong to `zlib.crc32`, which is faster per byte.
 */

/** Spans up to this many bytes are worth computing here. */
export const SHORT_CRC_MAX = 256;

const POLY = 0xedb88320;
/** Slice-by-8 tables: `T[s·256 + b]` is the CRC of byte `b` followed by `s` zero bytes. */
const T = new Uint32Array(8 * 256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? POLY ^ (c >>> 1) : c >>> 1;
  T[n] = c >>> 0;
}
for (let n = 0; n < 256; n++)
  for (let s = 1; s < 8; s++) {
    const prev = T[(s - 1) * 256 + n]!;
    T[s * 256 + n] = (prev >>> 8) ^ T[prev & 0xff]!;
  }

/** `zlib.crc32(b.subarray(start, end))`, without the subarray. */
export function crc32Short(b: Uint8Array, start: number, end: number): number {
  let c = ~0;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const a = c ^ (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24));
    c =
      T[1792 + (a & 0xff)]! ^
      T[1536 + ((a >>> 8) & 0xff)]! ^
      T[1280 + ((a >>> 16) & 0xff)]! ^
      T[1024 + (a >>> 24)]! ^
      T[768 + b[i + 4]!]! ^
      T[512 + b[i + 5]!]! ^
      T[256 + b[i + 6]!]! ^
      T[b[i + 7]!]!;
  }
  for (; i < end; i++) c = T[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
