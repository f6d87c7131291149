/**
 * Receipt handles: opaque to clients, tamper-evident to us. A handle names one delivery of one
 * message (queue, offset and a random delivery nonce) and carries an HMAC over those fields plus the
 * topic and consumer group, keyed with a secret kept in the data directory. A forged handle, or one
 * presented for another group or topic, fails the HMAC; a stale one (acked, superseded by
 * ChangeInvisibleDuration, or expired) fails the nonce check against the live delivery.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readFileIfExists, writeFileAtomic } from '../store/atomic-file.js';
import { VelaError } from '../common/errors.js';

const VERSION = 1;
const PAYLOAD = 1 + 4 + 8 + 4; // version | queueId | offset | nonce
const MAC = 12;

export interface HandleFields {
  queueId: number;
  offset: number;
  nonce: number;
}

export class ReceiptHandles {
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
    const buf = Buffer.allocUnsafe(PAYLOAD + MAC);
    buf[0] = VERSION;
    buf.writeUInt32BE(f.queueId, 1);
    buf.writeDoubleBE(f.offset, 5);
    buf.writeUInt32BE(f.nonce >>> 0, 13);
    this.mac(buf.subarray(0, PAYLOAD), topic, group).copy(buf, PAYLOAD, 0, MAC);
    return buf.toString('base64url');
  }

  /** Decode and authenticate a handle for this topic and group, or throw INVALID_RECEIPT_HANDLE. */
  decode(handle: unknown, topic: string, group: string): HandleFields {
    if (typeof handle !== 'string' || handle.length === 0 || handle.length > 64) {
      throw new VelaError('INVALID_RECEIPT_HANDLE', 'malformed receipt handle');
    }
    const buf = Buffer.from(handle, 'base64url');
    if (buf.length !== PAYLOAD + MAC || buf[0] !== VERSION) {
      throw new VelaError('INVALID_RECEIPT_HANDLE', 'malformed receipt handle');
    }
    const expected = this.mac(buf.subarray(0, PAYLOAD), topic, group);
    if (!expected.subarray(0, MAC).equals(buf.subarray(PAYLOAD))) {
      throw new VelaError(
        'INVALID_RECEIPT_HANDLE',
        'receipt handle does not belong to this topic and consumer group',
      );
    }
    return { queueId: buf.readUInt32BE(1), offset: buf.readDoubleBE(5), nonce: buf.readUInt32BE(13) };
  }

  private mac(payload: Buffer, topic: string, group: string): Buffer {
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
