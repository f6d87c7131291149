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
/**
 * A length used this often gets a table of its operator (4 × 256 products, 4 KiB): a shift is then
 * four lookups instead of a 32-step multiply whose branches follow the CRC's bits (~6 ns against
 * ~130 ns when the CRCs vary, as they do in a read; a derived body CRC ~95 ns against ~180 in
 * `node --import tsx bench/body-crc.ts`). Building one takes 32 multiplies and ~1,000 XORs, so a
 * length seen once does not get one.
 */
const TABLE_AFTER = 16;
/** At most this many tables at once (256 KiB). */
const TABLE_LIMIT = 64;

interface Operator {
  /** x^(8·bytes) modulo the polynomial. */
  readonly op: number;
  uses: number;
  /** `op` times each byte value at each of the four byte positions, once built. */
  table: Uint32Array | null;
}

const operators = new Map<number, Operator>();
let tables = 0;

/** Products of `op` with every value of each byte of a CRC: multiplying is linear in that CRC. */
function tableOf(op: number): Uint32Array {
  const t = new Uint32Array(1024);
  for (let k = 0; k < 4; k++) {
    const base = k * 256;
    for (let j = 0; j < 8; j++) {
      const bit = 1 << j;
      const product = multiply(op, (bit << (8 * k)) >>> 0);
      for (let v = 0; v < bit; v++) t[base + bit + v] = t[base + v]! ^ product;
    }
  }
  return t;
}

/** `crc` (of some bytes A) moved past `bytes` more bytes: `crc(A ‖ B) ^ crc(B)` for any B of that length. */
export function crc32Shift(crc: number, bytes: number): number {
  let o = operators.get(bytes);
  if (o === undefined) {
    if (operators.size >= CACHE_LIMIT) {
      operators.clear();
      tables = 0;
    }
    o = { op: shiftOperator(bytes), uses: 0, table: null };
    operators.set(bytes, o);
  }
  const c = crc >>> 0;
  const t = o.table;
  if (t !== null)
    return (
      (t[c & 0xff]! ^ t[256 + ((c >>> 8) & 0xff)]! ^ t[512 + ((c >>> 16) & 0xff)]! ^ t[768 + (c >>> 24)]!) >>>
      0
    );
  if (++o.uses === TABLE_AFTER && tables < TABLE_LIMIT) {
    o.table = tableOf(o.op);
    tables++;
  }
  return multiply(o.op, c);
}
