/**
 * Body digests of delivered messages (`system_properties.body_digest`), shared by the broker, which
 * writes them, and the SDK, which checks them.
 *
 * The official clients need MD5 (uppercase hex): Node 1.0.8 reads a CRC32 as a decimal string and Java
 * as hex, so no CRC32 suits both (reference/protocol.md §10). MD5 costs ~2 µs per KiB on each side,
 * CRC32 a fifth of that, so Vela's SDK asks for CRC32 with the request header `x-vela-accept-digest:
 * CRC32` on ReceiveMessage and PullMessage, and the broker answers such a call with CRC32 digests
 * (uppercase hex, 8 digits, as Java writes them). Calls without the header get MD5, as before.
 */
import { hash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { WireDigestType } from './wire-types.js';

/** Request header: the digest types the caller can check, comma-separated (`CRC32`). */
export const ACCEPT_DIGEST_HEADER = 'x-vela-accept-digest';

/** Whether a request's `x-vela-accept-digest` value lets the broker send CRC32 digests. */
export function acceptsCrc32(header: string | undefined): boolean {
  if (!header) return false;
  if (header === 'CRC32') return true;
  return header.split(',').some((t) => t.trim().toUpperCase() === 'CRC32');
}

/**
 * A body's CRC32 as the digest's checksum: uppercase hex, 8 digits. `known`: the body's CRC when the
 * caller has it already (a store read that verified the record derives it), -1 or absent if not.
 */
export function crc32Checksum(body: Uint8Array, known = -1): string {
  return (known >= 0 ? known : crc32(body) >>> 0).toString(16).toUpperCase().padStart(8, '0');
}

/** A body's MD5 as the digest's checksum: uppercase hex. */
export function md5Checksum(body: Uint8Array): string {
  return hash('md5', body, 'hex').toUpperCase();
}

/** Whether `body` matches its digest; digest types this does not know pass. */
export function digestMatches(body: Uint8Array, type: number, checksum: string): boolean {
  switch (type) {
    case WireDigestType.CRC32: {
      const v = crc32(body) >>> 0;
      // Hex (Vela, Java) or decimal (what the official Node client expects): accept either.
      return hexValue(checksum) === v || (/^[0-9]{1,10}$/.test(checksum) && Number(checksum) === v);
    }
    case WireDigestType.MD5:
      return checksum.length === 32 && md5Checksum(body) === checksum.toUpperCase();
    case WireDigestType.SHA1:
      return hash('sha1', body, 'hex').toUpperCase() === checksum.toUpperCase();
    default:
      return true;
  }
}

/** The value of 1–8 hex digits, or -1 (no regular expression: this runs for every delivered message). */
function hexValue(s: string): number {
  if (s.length === 0 || s.length > 8) return -1;
  let v = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}
