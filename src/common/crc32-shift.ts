/**
 * CRC-32 (zlib's polynomial) of a concatenation, from the CRCs of its parts: for byte strings A and B,
 * `crc(A ‖ B) = crc32Shift(crc(A), |B|) ^ crc(B)`, where the shift multiplies by x^(8·|B|) modulo the
 * polynomial (the arithmetic behind zlib's `crc32_combine`). So the CRC of a record's body follows from
 * the record's checksum and the CRC of the few bytes before the body, without a second pass over the
 * body (`bodyCrcOf` in record-codec.ts).
 *
 * Polynomials are in the reflected bit order zlib uses: bit 31 is the coefficient of x^0.
 */

const POLY = 0xedb88320;
const X0 = 0x80000000; // the polynomial 1

/** a · b modulo the CRC polynomial (both reflected). */
function multiply(a: number, b: number): number {
  let product = 0;
  for (let m = X0; m !== 0; m >>>= 1) {
    if (a & m) product ^= b;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return product >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0…31. */
const POWERS = new Uint32Array(32);
POWERS[0] = 0x40000000; // x^1
for (let k = 1; k < 32; k++) POWERS[k] = multiply(POWERS[k - 1]!, POWERS[k - 1]!);

/** x^(8·bytes) modulo the polynomial. */
function shiftOperator(bytes: number): number {
  let op = X0;
  let n = bytes;
  for (let k = 3; n > 0; k++, n = Math.floor(n / 2)) if (n % 2 === 1) op = multiply(POWERS[k % 32]!, op);
  return op;
}

/** Operators of recent lengths (bodies of one workload tend to share a few): at most this many. */
const CACHE_LIMIT = 4096;
const operators = new Map<number, number>();

/** `crc` (of some bytes A) moved past `bytes` more bytes: `crc(A ‖ B) ^ crc(B)` for any B of that length. */
export function crc32Shift(crc: number, bytes: number): number {
  let op = operators.get(bytes);
  if (op === undefined) {
    op = shiftOperator(bytes);
    if (operators.size >= CACHE_LIMIT) operators.clear();
    operators.set(bytes, op);
  }
  return multiply(op, crc >>> 0);
}
