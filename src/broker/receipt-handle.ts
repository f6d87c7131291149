/**
 * Receipt handles: opaque to clients, tamper-evident to us. A handle names one delivery of one
 * message (queue, offset and a random delivery nonce) and carries a MAC over those fields, keyed per
 * (topic, consumer group) from a secret kept in the data directory. A forged handle, or one presented
 * for another group or topic, fails the MAC; a stale one (acked, superseded by
 * ChangeInvisibleDuration, or expired) fails the nonce check against the live delivery.
 *
 * Version 2 (issued now): the payload is exactly one AES block (queue id, offset, nonce), and the MAC
 * is AES-128 of that block under a key derived for the (topic, group) with HMAC-SHA256, truncated to
 * 12 bytes. A block cipher is a pseudo-random function on its one-block domain, so this is a MAC for
 * fixed-length payloads; unlike an HMAC per handle (one hash object and four updates, ~4 µs, 7–12 %
 * of the broker's time under consumption) it is one call on a cipher object kept per (topic, group).
 * ECB without padding keeps no state between whole blocks, so the object is reused for every handle.
 * Version 1 handles (HMAC-SHA256 over the payload, topic and group), issued before an upgrade, are
 * still accepted. MACs are compared in constant time (`timingSafeEqual`), so response timing tells a
 * forger nothing about how many bytes of a guess were right.
 */
import { createCipheriv, createHmac, randomBytes, timingSafeEqual, type Cipher } from 'node:crypto';
import { join } from 'node:path';
import { readFileIfExists, writeFileAtomic } from '../store/atomic-file.js';
import { copyBytes } from '../common/copy-bytes.js';
import { VelaError } from '../common/errors.js';

const V1 = 1;
const V2 = 2;
const V1_PAYLOAD = 1 + 4 + 8 + 4; // version | queueId | offset | nonce
const V2_BLOCK = 16; // queueId | offset | nonce (the version byte precedes it)
const MAC = 12;
const LENGTH = 1 + V2_BLOCK + MAC; // the same for both versions
/** Characters of a handle: LENGTH bytes in unpadded base64url. */
const ENCODED_LENGTH = Math.ceil((LENGTH * 4) / 3);
/** Per-(topic, group) ciphers kept, at most (all are dropped when it fills: they are cheap to derive). */
const MAX_CIPHERS = 4096;

export interface HandleFields {
  queueId: number;
  offset: number;
  nonce: number;
}

/** The fields `encodeEach` hands to its caller to fill. */
const scratch: HandleFields = { queueId: 0, offset: 0, nonce: 0 };

export class ReceiptHandles {
  private readonly ciphers = new Map<string, Cipher>();

  private constructor(private readonly key: Buffer) {}

  /** Load the broker's handle key from `dataDir`, creating it on first start. */
  static async load(dataDir: string): Promise<ReceiptHandles> {
    const path = join(dataDir, 'receipt-handle.key');
    let key = await readFileIfExists(path);
    if (!key || key.length !== 32) {
      key = randomBytes(32);
      await writeFileAtomic(path, key);
    }
    return new ReceiptHandles(key);
  }

  static withKey(key: Buffer): ReceiptHandles {
    return new ReceiptHandles(key);
  }

  encode(topic: string, group: string, f: HandleFields): string {
    const buf = Buffer.allocUnsafe(LENGTH);
    buf[0] = V2;
    buf.writeUInt32BE(f.queueId >>> 0, 1);
    buf.writeDoubleBE(f.offset, 5);
    buf.writeUInt32BE(f.nonce >>> 0, 13);
    this.cipherFor(topic, group)
      .update(buf.subarray(1, 1 + V2_BLOCK))
      .copy(buf, 1 + V2_BLOCK, 0, MAC);
    return buf.toString('base64url');
  }

  /** Handles for many deliveries of one (topic, group): one cipher call for the whole batch. */
  encodeMany(topic: string, group: string, fields: readonly HandleFields[]): string[] {
    return this.encodeEach(topic, group, fields.length, (i, f) => {
      const from = fields[i]!;
      f.queueId = from.queueId;
      f.offset = from.offset;
      f.nonce = from.nonce;
    });
  }

  /**
   * Handles for `n` deliveries of one (topic, group), one cipher call for all: `fieldsAt(i, f)` fills
   * `f` (one object, reused) with the i-th delivery's fields. Nothing is allocated per handle but
   * its string.
   */
  encodeEach(
    topic: string,
    group: string,
    n: number,
    fieldsAt: (i: number, f: HandleFields) => void,
  ): string[] {
    if (n === 0) return [];
    const blocks = Buffer.allocUnsafe(n * V2_BLOCK);
    const f = scratch;
    for (let i = 0; i < n; i++) {
      fieldsAt(i, f);
      const at = i * V2_BLOCK;
      blocks.writeUInt32BE(f.queueId >>> 0, at);
      blocks.writeDoubleBE(f.offset, at + 4);
      blocks.writeUInt32BE(f.nonce >>> 0, at + 12);
    }
    const macs = this.cipherFor(topic, group).update(blocks);
    const out = Buffer.allocUnsafe(n * LENGTH);
    const handles: string[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const at = i * LENGTH;
      const block = i * V2_BLOCK;
      out[at] = V2;
      copyBytes(blocks, block, out, at + 1, V2_BLOCK);
      copyBytes(macs, block, out, at + 1 + V2_BLOCK, MAC);
      handles[i] = out.toString('base64url', at, at + LENGTH);
    }
    return handles;
  }

  /**
   * Decode and authenticate many handles of one (topic, group), one cipher call for all the version 2
   * ones: per handle its fields, or the INVALID_RECEIPT_HANDLE error `decode` would throw.
   */
  decodeMany(handles: readonly unknown[], topic: string, group: string): (HandleFields | VelaError)[] {
    const n = handles.length;
    const out: (HandleFields | VelaError)[] = new Array(n);
    // Every handle decoded into one buffer, LENGTH bytes apiece (no buffer per handle).
    const all = Buffer.allocUnsafe(n * LENGTH);
    const valid = new Uint8Array(n);
    let v2 = 0;
    for (let i = 0; i < n; i++) {
      const h = handles[i];
      const at = i * LENGTH;
      if (
        typeof h !== 'string' ||
        h.length !== ENCODED_LENGTH ||
        all.write(h, at, LENGTH, 'base64url') !== LENGTH ||
        (all[at] !== V1 && all[at] !== V2)
      ) {
        out[i] = new VelaError('INVALID_RECEIPT_HANDLE', 'malformed receipt handle');
        continue;
      }
      valid[i] = 1;
      if (all[at] === V2) v2++;
    }
    let macs: Buffer | undefined;
    if (v2 > 0) {
      const blocks = Buffer.allocUnsafe(v2 * V2_BLOCK);
      let k = 0;
      for (let i = 0; i < n; i++) {
        if (valid[i] !== 1 || all[i * LENGTH] !== V2) continue;
        const from = i * LENGTH + 1;
        const to = V2_BLOCK * k++;
        copyBytes(all, from, blocks, to, V2_BLOCK);
      }
      macs = this.cipherFor(topic, group).update(blocks);
    }
    let k = 0;
    for (let i = 0; i < n; i++) {
      if (valid[i] !== 1) continue;
      const at = i * LENGTH;
      let ok: boolean;
      if (all[at] === V2) {
        ok = sameMac(macs!, k * V2_BLOCK, all, at + LENGTH - MAC);
        k++;
      } else {
        ok = sameMac(this.macV1(all.subarray(at, at + V1_PAYLOAD), topic, group), 0, all, at + LENGTH - MAC);
      }
      out[i] = ok
        ? {
            queueId: all.readUInt32BE(at + 1),
            offset: all.readDoubleBE(at + 5),
            nonce: all.readUInt32BE(at + 13),
          }
        : new VelaError(
            'INVALID_RECEIPT_HANDLE',
            'receipt handle does not belong to this topic and consumer group',
          );
    }
    return out;
  }

  /** Decode and authenticate a handle for this topic and group, or throw INVALID_RECEIPT_HANDLE. */
  decode(handle: unknown, topic: string, group: string): HandleFields {
    if (typeof handle !== 'string' || handle.length !== ENCODED_LENGTH) {
      throw new VelaError('INVALID_RECEIPT_HANDLE', 'malformed receipt handle');
    }
    const buf = Buffer.from(handle, 'base64url');
    if (buf.length !== LENGTH || (buf[0] !== V1 && buf[0] !== V2)) {
      throw new VelaError('INVALID_RECEIPT_HANDLE', 'malformed receipt handle');
    }
    const expected =
      buf[0] === V2
        ? this.cipherFor(topic, group).update(buf.subarray(1, 1 + V2_BLOCK))
        : this.macV1(buf.subarray(0, V1_PAYLOAD), topic, group);
    if (!timingSafeEqual(expected.subarray(0, MAC), buf.subarray(LENGTH - MAC))) {
      throw new VelaError(
        'INVALID_RECEIPT_HANDLE',
        'receipt handle does not belong to this topic and consumer group',
      );
    }
    return { queueId: buf.readUInt32BE(1), offset: buf.readDoubleBE(5), nonce: buf.readUInt32BE(13) };
  }

  /** Version 1's MAC, kept to accept handles issued before the upgrade. */
  encodeV1(topic: string, group: string, f: HandleFields): string {
    const buf = Buffer.allocUnsafe(LENGTH);
    buf[0] = V1;
    buf.writeUInt32BE(f.queueId >>> 0, 1);
    buf.writeDoubleBE(f.offset, 5);
    buf.writeUInt32BE(f.nonce >>> 0, 13);
    this.macV1(buf.subarray(0, V1_PAYLOAD), topic, group).copy(buf, V1_PAYLOAD, 0, MAC);
    return buf.toString('base64url');
  }

  private cipherFor(topic: string, group: string): Cipher {
    const id = `${topic}\u0000${group}`;
    let c = this.ciphers.get(id);
    if (!c) {
      if (this.ciphers.size >= MAX_CIPHERS) this.ciphers.clear();
      const derived = createHmac('sha256', this.key)
        .update('vela receipt handle v2\u0000')
        .update(topic)
        .update('\u0000')
        .update(group)
        .digest()
        .subarray(0, 16);
      c = createCipheriv('aes-128-ecb', derived, null);
      c.setAutoPadding(false);
      this.ciphers.set(id, c);
    }
    return c;
  }

  private macV1(payload: Buffer, topic: string, group: string): Buffer {
    return createHmac('sha256', this.key)
      .update(payload)
      .update(topic)
      .update('\u0000')
      .update(group)
      .digest();
  }
}

/** A fresh delivery nonce. */
export function newNonce(): number {
  return (Math.random() * 0x1_0000_0000) >>> 0;
}

/**
 * Whether the MAC at `a[aAt]` equals the one at `b[bAt]` (MAC bytes each), in time that does not
 * depend on where they differ (every byte is looked at; no early exit): what `timingSafeEqual` does,
 * without the two views it needs per handle.
 */
function sameMac(a: Uint8Array, aAt: number, b: Uint8Array, bAt: number): boolean {
  let diff = 0;
  for (let i = 0; i < MAC; i++) diff |= a[aAt + i]! ^ b[bAt + i]!;
  return diff === 0;
}
