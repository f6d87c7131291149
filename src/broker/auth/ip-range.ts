/**
 * Source IPs of ACL entries: one address (`192.168.1.10`, `2001:db8::1`) or a CIDR range
 * (`192.168.1.0/24`, `2001:db8::/32`), as RocketMQ accepts them. A client's IPv4 address seen through
 * an IPv6 socket (`::ffff:192.168.1.10`) is matched as the IPv4 address it is.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { VelaError } from '../../common/errors.js';

export interface IpRange {
  /** 4 or 6. */
  family: 4 | 6;
  /** First address of the range. */
  base: bigint;
  prefix: number;
  /** As written. */
  text: string;
}

function v4ToBig(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function v6ToBig(ip: string): bigint {
  let s = ip;
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hex groups.
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = v4ToBig(tail);
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const missing = 8 - left.length - right.length;
  const all = [...left, ...Array<string>(rest === undefined ? 0 : missing).fill('0'), ...right];
  return all.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

const MAPPED_V4 = 0xffffn << 32n;

export interface ParsedIp {
  family: 4 | 6;
  value: bigint;
}

/** An address as (family, value), IPv4-mapped IPv6 as IPv4; undefined when it is not an IP. */
export function parseIp(raw: string): ParsedIp | undefined {
  const ip = raw.trim().replace(/^\[(.*)\]$/, '$1');
  if (isIPv4(ip)) return { family: 4, value: v4ToBig(ip) };
  if (isIPv6(ip)) {
    const value = v6ToBig(ip);
    if (value >> 32n === MAPPED_V4 >> 32n) return { family: 4, value: value & 0xffffffffn };
    return { family: 6, value };
  }
  return undefined;
}

/** Parse one source IP or CIDR range; `ILLEGAL_ACL` when it is neither. */
export function parseIpRange(raw: unknown): IpRange {
  const text = typeof raw === 'string' ? raw.trim() : '';
  const bad = () =>
    new VelaError(
      'ILLEGAL_ACL',
      `source IP "${String(raw)}" is not an IP address or a CIDR range (e.g. 192.168.1.0/24)`,
    );
  if (text === '') throw bad();
  const slash = text.indexOf('/');
  const addr = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!addr) throw bad();
  const bits = addr.family === 4 ? 32 : 128;
  let prefix = bits;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > bits) throw bad();
    prefix = Number(p);
  }
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
  return { family: addr.family, base: addr.value & mask, prefix, text };
}

/** Whether `ip` (an address, possibly IPv4-mapped, or one parsed already) lies in the range. */
export function inRange(range: IpRange, ip: string | ParsedIp | undefined): boolean {
  const addr = typeof ip === 'string' ? parseIp(ip) : ip;
  if (!addr || addr.family !== range.family) return false;
  const bits = range.family === 4 ? 32 : 128;
  const shift = BigInt(bits - range.prefix);
  return addr.value >> shift === range.base >> shift;
}

/**
 * The client address of a transport peer string: `127.0.0.1:5555`, `[::1]:5555` or `::1:5555`
 * (an IPv6 address with its port appended) → the address without the port.
 */
export function peerAddress(peer: string): string {
  const p = peer.replace(/^ipv[46]:/, '');
  if (p.startsWith('[')) return p.slice(1, p.indexOf(']'));
  const i = p.lastIndexOf(':');
  if (i < 0) return p;
  const host = p.slice(0, i);
  return isIPv4(host) || isIPv6(host) ? host : p;
}
