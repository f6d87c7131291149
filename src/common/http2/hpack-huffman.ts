/**
 * The HPACK Huffman code (RFC 7541 §5.2, Appendix B): a table-driven decoder and an encoder.
 *
 * The decoder is a state machine that reads a byte at a time. A state is an internal node of the code
 * tree (256 of them: the bits read since the last whole symbol); DECODE[state * 256 + byte] packs the
 * next state, the symbols completed along the way (at most two, no code being shorter than 5 bits) and
 * two flags: FAIL when the byte completes EOS, and ACCEPT when the bits since the last symbol may end
 * the string (up to 7 ones, a prefix of EOS: §5.2's padding). 64 Ki entries of 4 bytes, built on first use.
 */
import { HpackError } from './hpack-error.js';
import { HUFFMAN_BITS, HUFFMAN_CODES, HUFFMAN_EOS } from './hpack-tables.js';

// An entry: next state in bits 0-7, first symbol 8-15, second symbol 16-23, then these.
const ONE = 1 << 24;
const TWO = 1 << 25;
const ACCEPT = 1 << 26;
const FAIL = 1 << 27;

let DECODE: Uint32Array | undefined; // built by the first decode (~5 ms)

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

  const table = new Uint32Array(256 * 256);
  for (let state = 0; state < nodes; state++) {
    for (let byte = 0; byte < 256; byte++) {
      let node = state;
      let entry = 0;
      for (let bit = 7; bit >= 0; bit--) {
        const next = child[node * 2 + ((byte >> bit) & 1)]!;
        if (next >= 0) {
          node = next;
        } else if (~next === HUFFMAN_EOS) {
          entry = FAIL;
          break;
        } else {
          entry = entry & ONE ? entry | TWO | (~next << 16) : ONE | (~next << 8);
          node = 0;
        }
      }
      if (entry !== FAIL) entry |= node | (accepting.has(node) ? ACCEPT : 0);
      table[state * 256 + byte] = entry;
    }
  }
  return table;
}

let scratch = Buffer.allocUnsafe(1024);

/** buf.toString('latin1', start, end) without its argument checks: Buffer's own latin1Slice (since Node 0.x). */
export function latin1(buf: Buffer, start: number, end: number): string {
  return (buf as Buffer & { latin1Slice(start: number, end: number): string }).latin1Slice(start, end);
}

/** Decodes src[start, end) as a Huffman string of latin1 characters; throws HpackError if malformed. */
export function huffmanDecode(src: Buffer, start: number, end: number): string {
  const most = Math.ceil(((end - start) * 8) / 5);
  if (scratch.length < most) scratch = Buffer.allocUnsafe(Math.max(most, scratch.length * 2));
  const out = scratch;
  const table = (DECODE ??= buildDecoder());
  let n = 0;
  let entry = ACCEPT;
  for (let i = start; i < end; i++) {
    entry = table[((entry & 0xff) << 8) | src[i]!]!;
    if (entry & (ONE | FAIL)) {
      if (entry & FAIL) throw new HpackError('Huffman string contains EOS');
      out[n++] = entry >> 8;
      if (entry & TWO) out[n++] = entry >> 16;
    }
  }
  if ((entry & ACCEPT) === 0) throw new HpackError('Huffman string has bad padding');
  return latin1(out, 0, n);
}

/** The Huffman length in bytes of a string of latin1 characters, or -1 if one is above U+00FF. */
export function huffmanLength(text: string): number {
  let bits = 0;
  for (let i = 0; i < text.length; i++) {
    const symbol = text.charCodeAt(i);
    if (symbol > 0xff) return -1;
    bits += HUFFMAN_BITS[symbol]!;
  }
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
