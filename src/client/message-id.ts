/**
 * Client-side message ids in RocketMQ's v1 layout (the Java and Node clients' `MessageIdCodec`):
 * 17 bytes as 34 uppercase hex characters, big-endian:
 * `01` | 6-byte MAC address (random when none) | 2-byte pid | 4-byte seconds since 2021-01-01T00:00Z |
 * 4-byte sequence number (per process, wrapping at 2^32).
 */
import { networkInterfaces } from 'node:os';
import { randomBytes } from 'node:crypto';

const EPOCH_2021_MS = Date.UTC(2021, 0, 1);

function macAddress(): Buffer {
  try {
    for (const list of Object.values(networkInterfaces())) {
      for (const nic of list ?? []) {
        if (nic.internal || !nic.mac || /^(00:){5}00$/.test(nic.mac)) continue;
        const bytes = Buffer.from(nic.mac.split(':').map((h) => parseInt(h, 16)));
        if (bytes.length === 6) return bytes;
      }
    }
  } catch {
    // No interfaces visible (sandboxes): fall back to random bytes, as the format allows.
  }
  return randomBytes(6);
}

/** The fixed part: version, MAC, pid (9 bytes, as hex). */
const PREFIX = Buffer.concat([
  Buffer.from([0x01]),
  macAddress(),
  Buffer.from([(process.pid >> 8) & 0xff, process.pid & 0xff]),
])
  .toString('hex')
  .toUpperCase();

let sequence = 0;

/** A new message id. `now` is injectable for tests. */
export function newMessageId(now: number = Date.now()): string {
  const tail = Buffer.allocUnsafe(8);
  const seconds = Math.max(0, Math.floor((now - EPOCH_2021_MS) / 1000));
  tail.writeUInt32BE(seconds >>> 0, 0);
  tail.writeUInt32BE(sequence, 4);
  sequence = (sequence + 1) >>> 0;
  return PREFIX + tail.toString('hex').toUpperCase();
}

/** The fields of a v1 id, or undefined for another layout. */
export function decodeMessageId(
  id: string,
): { mac: string; pid: number; timestamp: number; sequence: number } | undefined {
  if (!/^01[0-9A-F]{32}$/.test(id)) return undefined;
  const b = Buffer.from(id, 'hex');
  return {
    mac: b.subarray(1, 7).toString('hex'),
    pid: b.readUInt16BE(7),
    timestamp: EPOCH_2021_MS + b.readUInt32BE(9) * 1000,
    sequence: b.readUInt32BE(13),
  };
}
