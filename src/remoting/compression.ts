/**
 * Bodies the producer compressed (RocketMQ `MessageSysFlag` bit 0; the type in bits 8–10:
 * `CompressionType` ZLIB 0/3, LZ4 1, ZSTD 2). They are inflated once, on send, so every consumer of
 * either protocol gets the plain body.
 *
 * Every decoder is bounded by the broker's maximum body size: the output is counted as it is
 * produced and decoding stops as soon as it passes the bound, so a small "compression bomb" cannot
 * make the broker allocate or loop far beyond what a plain body of the maximum size would cost. LZ4
 * (lz4-java's `LZ4FrameOutputStream`: the LZ4 frame format) and Zstandard (zstd-jni's
 * `ZstdOutputStream`) are decoded by pure-JavaScript libraries (lz4js, fzstd); their frames are
 * walked here first so that no declared size makes them allocate more than the bound allows.
 */
import { inflateSync } from 'node:zlib';
import { Decompress } from 'fzstd';
import lz4 from 'lz4js';
import { VelaError } from '../common/errors.js';

/** RocketMQ `CompressionType` values (sysFlag bits 8–10). */
export const CompressionType = { ZLIB: 3, LZ4: 1, ZSTD: 2 } as const;

const COMPRESSED = 0x1;
const TYPE_MASK = 0x700;

function corrupted(kind: string, why: string): VelaError {
  return new VelaError('MESSAGE_CORRUPTED', `the ${kind}-compressed body does not inflate: ${why}`);
}

function tooLarge(kind: string, maxSize: number): VelaError {
  return new VelaError(
    'MESSAGE_BODY_TOO_LARGE',
    `the ${kind}-compressed body inflates to more than the maximum body size of ${maxSize} bytes`,
  );
}

/** Inflate a body the producer compressed; a body without the flag is returned as it is. */
export function decompressBody(body: Buffer, sysFlag: number, maxSize: number): Buffer {
  if ((sysFlag & COMPRESSED) === 0) return body;
  const type = (sysFlag & TYPE_MASK) >> 8;
  if (type === 0 || type === CompressionType.ZLIB) return inflateZlib(body, maxSize);
  if (type === CompressionType.LZ4) return inflateLz4(body, maxSize);
  if (type === CompressionType.ZSTD) return inflateZstd(body, maxSize);
  throw new VelaError('MESSAGE_CORRUPTED', `unknown compression type ${type} in sysFlag ${sysFlag}`);
}

function inflateZlib(body: Buffer, maxSize: number): Buffer {
  try {
    return inflateSync(body, { maxOutputLength: maxSize });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge('ZLIB', maxSize);
    throw corrupted('ZLIB', (err as Error).message);
  }
}

const LZ4_MAGIC = 0x184d2204;
/** Frame descriptor block maximum sizes, by the BD byte's bits 4–6. */
const LZ4_BLOCK_MAX: Record<number, number> = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };

/**
 * An LZ4 frame: magic, descriptor (FLG, BD, optional content size and dictionary id, header
 * checksum), then blocks (u32 size, high bit = stored uncompressed, optional u32 checksum) up to an
 * end mark of 0, then an optional content checksum. Concatenated frames are read one after another.
 */
function inflateLz4(body: Buffer, maxSize: number): Buffer {
  const bad = (why: string) => corrupted('LZ4', why);
  // Zeroed: a malformed match (offset 0, or before the start) reads what is there, and that must
  // never be memory of the broker's own.
  const out = Buffer.alloc(maxSize);
  let o = 0;
  let p = 0;
  do {
    if (p + 7 > body.length || body.readUInt32LE(p) !== LZ4_MAGIC) throw bad('no LZ4 frame magic');
    const flg = body[p + 4]!;
    const bd = body[p + 5]!;
    if (flg >> 6 !== 1) throw bad('unsupported LZ4 frame version');
    const blockMax = LZ4_BLOCK_MAX[(bd >> 4) & 7];
    if (blockMax === undefined) throw bad('invalid block maximum size');
    const blockChecksum = (flg & 0x10) !== 0;
    const contentSize = (flg & 0x08) !== 0;
    const contentChecksum = (flg & 0x04) !== 0;
    const dictionary = (flg & 0x01) !== 0;
    if (dictionary) throw bad('frames with a dictionary are not supported');
    p += 6;
    if (contentSize) {
      if (p + 8 > body.length) throw bad('truncated frame descriptor');
      if (body.readBigUInt64LE(p) > BigInt(maxSize - o)) throw tooLarge('LZ4', maxSize);
      p += 8;
    }
    p += 1; // header checksum
    for (;;) {
      if (p + 4 > body.length) throw bad('truncated block');
      const word = body.readUInt32LE(p);
      p += 4;
      if (word === 0) break;
      const stored = (word & 0x80000000) !== 0;
      const size = word & 0x7fffffff;
      if (size > blockMax || p + size > body.length) throw bad(`block size ${size} out of range`);
      if (stored) {
        if (o + size > maxSize) throw tooLarge('LZ4', maxSize);
        body.copy(out, o, p, p + size);
        o += size;
      } else {
        // The block decoder writes only inside `out` (a typed array drops writes past its end) and
        // returns where it would have stopped: past the bound means the body is too large.
        const end = lz4.decompressBlock(body, out, p, size, o) as number;
        if (!Number.isInteger(end) || end < o) throw bad('malformed block');
        if (end > maxSize || end - o > blockMax) throw tooLarge('LZ4', maxSize);
        o = end;
      }
      p += size + (blockChecksum ? 4 : 0);
    }
    if (contentChecksum) p += 4;
    if (p > body.length) throw bad('truncated frame');
  } while (p < body.length);
  return Buffer.from(out.subarray(0, o));
}

const ZSTD_MAGIC = 0xfd2fb528;
/** Zstandard's block maximum (128 KiB). */
const ZSTD_BLOCK_MAX = 128 << 10;

/**
 * Check every Zstandard frame's header (window and declared content size, which fzstd allocates
 * from) and walk its blocks, before decoding: no frame may need a window or declare a content size
 * beyond the bound. Skippable frames are allowed.
 */
function checkZstdFrames(body: Buffer, maxSize: number): void {
  const bad = (why: string) => corrupted('ZSTD', why);
  let p = 0;
  while (p < body.length) {
    if (p + 4 > body.length) throw bad('truncated frame');
    const magic = body.readUInt32LE(p);
    if ((magic & 0xfffffff0) === 0x184d2a50) {
      if (p + 8 > body.length) throw bad('truncated skippable frame');
      p += 8 + body.readUInt32LE(p + 4);
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw bad('no Zstandard frame magic');
    if (p + 5 > body.length) throw bad('truncated frame header');
    const fhd = body[p + 4]!;
    const sizeFlag = fhd >> 6;
    const singleSegment = (fhd >> 5) & 1;
    const checksum = (fhd >> 2) & 1;
    const dictBytes = [0, 1, 2, 4][fhd & 3]!;
    if (dictBytes) throw bad('frames with a dictionary are not supported');
    let q = p + 5;
    let window = 0;
    if (!singleSegment) {
      const wd = body[q++];
      if (wd === undefined) throw bad('truncated frame header');
      const base = 2 ** (10 + (wd >> 3));
      window = base + (base / 8) * (wd & 7);
    }
    const sizeBytes = sizeFlag === 0 ? singleSegment : 1 << sizeFlag;
    if (q + sizeBytes > body.length) throw bad('truncated frame header');
    let contentSize = 0;
    for (let i = sizeBytes - 1; i >= 0; i--) contentSize = contentSize * 256 + body[q + i]!;
    if (sizeBytes === 2) contentSize += 256;
    q += sizeBytes;
    if (singleSegment) window = contentSize;
    // The decoder allocates the window (or the whole declared content) up front.
    if (contentSize > maxSize || window > Math.max(maxSize, 8 << 20)) throw tooLarge('ZSTD', maxSize);
    for (;;) {
      if (q + 3 > body.length) throw bad('truncated block header');
      const h = body[q]! | (body[q + 1]! << 8) | (body[q + 2]! << 16);
      q += 3;
      const type = (h >> 1) & 3;
      const size = h >>> 3;
      if (type === 3) throw bad('reserved block type');
      if (size > ZSTD_BLOCK_MAX) throw bad(`block size ${size} out of range`);
      q += type === 1 ? 1 : size;
      if (h & 1) break;
    }
    p = q + (checksum ? 4 : 0);
    if (p > body.length) throw bad('truncated frame');
  }
}

function inflateZstd(body: Buffer, maxSize: number): Buffer {
  checkZstdFrames(body, maxSize);
  const chunks: Uint8Array[] = [];
  let total = 0;
  let over = false;
  const d = new Decompress((chunk) => {
    total += chunk.length;
    if (total > maxSize) {
      over = true;
      throw tooLarge('ZSTD', maxSize);
    }
    chunks.push(Buffer.from(chunk)); // a copy: the decoder may reuse its window
  });
  try {
    d.push(body, true);
  } catch (err) {
    if (over) throw tooLarge('ZSTD', maxSize);
    throw corrupted('ZSTD', (err as Error).message);
  }
  return Buffer.concat(chunks, total);
}
