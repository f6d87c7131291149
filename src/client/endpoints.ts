/**
 * Endpoints: the access point a user configures (`'127.0.0.1:8081'`, `'broker.local:8081'`,
 * `'[::1]:8081'`, or several joined by `;`), its wire form, a stable key per endpoint set, and the
 * gRPC target that dials it.
 */
import { WireAddressScheme, type Endpoints } from '../protocol/wire-types.js';
import { Code } from '../common/codes.js';
import { clientError } from './errors.js';

/** Port used when an address names none (Vela's and the RocketMQ proxy's gRPC port). */
export const DEFAULT_GRPC_PORT = 8081;

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

function parseAddress(raw: string): { host: string; port: number; v6: boolean } {
  const s = raw.trim();
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (v6) return { host: v6[1]!, port: v6[2] ? Number(v6[2]) : DEFAULT_GRPC_PORT, v6: true };
  const i = s.lastIndexOf(':');
  const host = i >= 0 ? s.slice(0, i) : s;
  const port = i >= 0 ? Number(s.slice(i + 1)) : DEFAULT_GRPC_PORT;
  if (!host || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw clientError(Code.ILLEGAL_ACCESS_POINT, `illegal endpoint "${raw}" (expected host:port)`);
  }
  return { host, port, v6: false };
}

/** Parse an access point: one or more `host:port` separated by `;` (or `,`). */
export function parseEndpoints(accessPoint: string): Endpoints {
  const parts = accessPoint
    .split(/[;,]/)
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length === 0) throw clientError(Code.ILLEGAL_ACCESS_POINT, 'no endpoint given');
  const addrs = parts.map(parseAddress);
  const scheme = addrs.every((a) => a.v6)
    ? WireAddressScheme.IPv6
    : addrs.every((a) => IPV4.test(a.host))
      ? WireAddressScheme.IPv4
      : WireAddressScheme.DOMAIN_NAME;
  return { scheme, addresses: addrs.map(({ host, port }) => ({ host, port })) };
}

/** A stable key for an endpoint set: `host:port[,host:port]`. */
export function endpointsKey(e: Endpoints): string {
  return (e.addresses ?? []).map((a) => `${hostPart(a.host ?? '')}:${a.port ?? 0}`).join(',');
}

function hostPart(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** The grpc-js target: `host:port` for one address, an `ipv4:`/`ipv6:` list for several. */
export function grpcTarget(e: Endpoints): string {
  const addrs = e.addresses ?? [];
  if (addrs.length === 1) return `${hostPart(addrs[0]!.host ?? '')}:${addrs[0]!.port ?? 0}`;
  if (e.scheme === WireAddressScheme.IPv4) return `ipv4:${endpointsKey(e)}`;
  if (e.scheme === WireAddressScheme.IPv6) return `ipv6:${endpointsKey(e)}`;
  // Several host names: grpc-js cannot dial a list of names; use the first.
  return `${hostPart(addrs[0]?.host ?? '')}:${addrs[0]?.port ?? 0}`;
}
