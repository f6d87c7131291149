/**
 * The HPACK Huffman code (RFC 7541 §5.2, Appendix B): a table-driven decoder and an encoder.
 *
 * The decoder is a state machine that reads 4 bits at a time (as nghttp2's does). A state is an internal
 * node of the code tree (256 of them); DECODE[state * 16 + nibble] packs the next state, the symbol
 * completed along the way (at most one: no code is shorter than 5 bits) and two flags: FAIL when the
 * nibble completes EOS, and ACCEPT when the bits since the last symbol may end the string (up to 7
 * ones, a prefix of EOS: §5.2's padding).
 */
import { HpackError } from './hpack-error.js';
import { HUFFMAN_BITS, HUFFMAN_CODES, HUFFMAN_EOS } from './hpack-tables.js';

const EMIT = 1 << 16;
const ACCEPT = 1 << 17;
const FAIL = 1 << 18;

const DECODE: Uint32Array = buildDecoder();

function buildDecoder(): Uint32Array {
  // The code tree: child[node * 2 + bit] is an internal node (> 0) or a leaf, ~symbol (< 0).
  const child = new Int32Array(256 * 2);
  let nodes = 1;
  for (let symbol = 0; symbol <= HUFFMAN_EOS; symbol++) {
    const code = HUFFMAN_CODES[symbol]!;
    let node = 0;
    for (let bit = HUFFMAN_BITS[symbol]! - 1; bit > 0; bit--) {
      const slot = node * 2 + (Math.floor(code / 2 ** bit) & 1);
      if (child[slot] === 0) child[slot] = nodes++;
      node = child[slot]!;
    }
    child[node * 2 + (code & 1)] = ~symbol;
  }
  // The states where a string may end: the root and the first 7 nodes down the all-ones path.
  const accepting = new Set<number>([0]);
  for (let node = 0, depth = 1; depth <= 7; depth++) accepting.add((node = child[node * 2 + 1]!));

  const table = new Uint32Array(256 * 16);
  for (let state = 0; state < nodes; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0; bit--) {
        const next = child[node * 2 + ((nibble >> bit) & 1)]!;
        if (next >= 0) {
          node = next;
        } else if (~next === HUFFMAN_EOS) {
          entry = FAIL;
          break;
        } else {
          entry = EMIT | (~next << 8);
          node = 0;
        }
      }
      if (entry !== FAIL) entry |= node | (accepting.has(node) ? ACCEPT : 0);
      table[state * 16 + nibble] = entry;
    }
  }
  return table;
}

let scratch = Buffer.allocUnsafe(1024);

/** Decodes src[start, end) as a Huffman string of latin1 characters; throws HpackError if malformed. */
export function huffmanDecode(src: Buffer, start: number, end: number): string {
  const most = Math.ceil(((end - start) * 8) / 5);
  if (scratch.length < most) scratch = Buffer.allocUnsafe(Math.max(most, scratch.length * 2));
  const out = scratch;
  let n = 0;
  let entry = ACCEPT;
  for (let i = start; i < end; i++) {
    const byte = src[i]!;
    const high = DECODE[((entry & 0xff) << 4) | (byte >> 4)]!;
    if (high & EMIT) out[n++] = (high >> 8) & 0xff;
    entry = DECODE[((high & 0xff) << 4) | (byte & 0xf)]!;
    if (entry & EMIT) out[n++] = (entry >> 8) & 0xff;
    if ((high | entry) & FAIL) throw new HpackError('Huffman string contains EOS');
  }
  if ((entry & ACCEPT) === 0) throw new HpackError('Huffman string has bad padding');
  return out.toString('latin1', 0, n);
}

/** The Huffman length in bytes of a string of latin1 characters (the caller checks they are ≤ U+00FF). */
export function huffmanLength(text: string): number {
  let bits = 0;
  for (let i = 0; i < text.length; i++) bits += HUFFMAN_BITS[text.charCodeAt(i)]!;
  return (bits + 7) >> 3;
}

/** Writes the Huffman form of `text` (latin1 characters) at out[pos]; returns the position after it. */
export function huffmanEncode(text: string, out: Buffer, pos: number): number {
  let pending = 0; // the last `bits` (< 8) bits not yet written
  let bits = 0;
  for (let i = 0; i < text.length; i++) {
    const symbol = text.charCodeAt(i);
    let code = HUFFMAN_CODES[symbol]!;
    let length = HUFFMAN_BITS[symbol]!;
    if (length > 24) {
      // Keep `pending` within 31 bits: the top of a long code goes first.
      pending = (pending << (length - 16)) | (code >>> 16);
      bits += length - 16;
      while (bits >= 8) out[pos++] = pending >>> (bits -= 8);
      code &= 0xffff;
      length = 16;
    }
    pending = ((pending & 0xff) << length) | code;
    bits += length;
    while (bits >= 8) out[pos++] = pending >>> (bits -= 8);
  }
  if (bits > 0) out[pos++] = (pending << (8 - bits)) | (0xff >> bits); // pad with EOS's leading ones
  return pos;
}
