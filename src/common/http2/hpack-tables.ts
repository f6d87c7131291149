/**
 * HPACK's constant data (RFC 7541): the static table (Appendix A) and the Huffman code (Appendix B).
 *
 * The Huffman code is canonical, so it is stored as its 257 code lengths (bytes 0..255, then EOS = 256)
 * and the codes are derived: symbols sorted by (length, symbol) take consecutive codes, shifted left
 * whenever the length grows. The decoder's state machine is built from these codes in hpack-huffman.ts.
 */

/** Appendix A: index i + 1 is STATIC_TABLE[i]. */
export const STATIC_TABLE: readonly (readonly [name: string, value: string])[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/** The EOS symbol: decoding it is an error; its code's leading ones pad the last byte. */
export const HUFFMAN_EOS = 256;

// prettier-ignore
/** Appendix B, the "len in bits" column: symbols 0..255, then EOS. */
const HUFFMAN_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 0x20  !"#$%&'()*+,-./
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 0x30 0-9:;<=>?
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 0x40 @A-O
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 0x50 P-Z[\]^_
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 0x60 `a-o
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 0x70 p-z{|}~ DEL
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0
  30, // EOS
];

/** Code length in bits of each symbol (0..256). */
export const HUFFMAN_BITS: Uint8Array = Uint8Array.from(HUFFMAN_LENGTHS);

/** The code of each symbol (0..256), right-aligned in HUFFMAN_BITS[symbol] bits. */
export const HUFFMAN_CODES: Uint32Array = canonicalCodes(HUFFMAN_BITS);

function canonicalCodes(bits: Uint8Array): Uint32Array {
  const order = Array.from(bits.keys()).sort((a, b) => bits[a]! - bits[b]! || a - b);
  const codes = new Uint32Array(bits.length);
  let code = 0;
  let length = bits[order[0]!]!;
  for (const symbol of order) {
    code *= 2 ** (bits[symbol]! - length); // not <<: a 30-bit code shifted stays exact
    length = bits[symbol]!;
    codes[symbol] = code;
    code++;
  }
  return codes;
}
