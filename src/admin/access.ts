/**
 * Who may call the admin HTTP API. A web page on another site must not be able to change the broker
 * through the visitor's browser, and a page that rebinds its own DNS name to 127.0.0.1 must not be
 * able to read or change it either. Checked before the body is parsed:
 *
 * - **Host** (DNS rebinding): without a token the server answers only requests addressed to a
 *   loopback name (`localhost`, `127.x.x.x`, `[::1]`) — what a rebinding page sends is its own name.
 * - **Origin** / **Sec-Fetch-Site** (cross-site requests): a request a browser marks as coming from
 *   another origin is refused; the console is served from the API's own origin.
 * - **JSON for state changes**: POST, PUT and PATCH must say `Content-Type: application/json`, which
 *   a cross-site form or `fetch` cannot send without a CORS preflight (and the API answers no CORS).
 *   A DELETE is never a "simple" request, so browsers preflight it too; if it has a body, it is JSON.
 * - **Token**: when one is configured (it must be beyond loopback), `/api/*` and `/metrics` need
 *   `Authorization: Bearer <token>`, compared in constant time.
 *
 * The console's static files and `/healthz` carry nothing secret and need no token, but still get
 * the Host check.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { VelaError } from '../common/errors.js';
import { isLoopbackHost } from '../common/config.js';

export interface AccessPolicy {
  /** '' for none. */
  token: string;
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Paths that need the token when one is set. */
const guarded = (path: string) => path === '/metrics' || path.startsWith('/api/') || path === '/api';

/** The host name of a Host header (`name:port`, `[v6]:port`), lower-cased. */
export function hostNameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.indexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

function isJson(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** A Fastify `onRequest` hook enforcing the policy. */
export function accessHook(policy: AccessPolicy) {
  const tokenDigest = policy.token ? digest(policy.token) : null;
  return async (req: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const path = req.url.split('?')[0]!;
    const host = req.headers.host;

    // DNS rebinding: without a token, only loopback names are ours.
    if (!tokenDigest && host !== undefined && !isLoopbackHost(hostNameOf(host))) {
      throw new VelaError(
        'ADMIN_FORBIDDEN_ORIGIN',
        `Host "${host}" is not a loopback name; set an admin token to serve other names`,
      );
    }

    // Cross-site requests: a browser says where a request comes from.
    const site = req.headers['sec-fetch-site'];
    if (site === 'cross-site' || site === 'same-site') {
      throw new VelaError('ADMIN_FORBIDDEN_ORIGIN', `Sec-Fetch-Site: ${site}`);
    }
    const origin = req.headers.origin;
    if (origin !== undefined) {
      let originHost: string | null = null;
      try {
        originHost = origin === 'null' ? null : new URL(origin).host.toLowerCase();
      } catch {
        originHost = null;
      }
      if (originHost === null || host === undefined || originHost !== host.trim().toLowerCase()) {
        throw new VelaError('ADMIN_FORBIDDEN_ORIGIN', `Origin "${origin}" is not this server`);
      }
    }

    if (STATE_CHANGING.has(req.method)) {
      const type = req.headers['content-type'];
      const hasBody =
        req.method !== 'DELETE' ||
        type !== undefined ||
        (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') ||
        req.headers['transfer-encoding'] !== undefined;
      if (hasBody && !isJson(type)) {
        throw new VelaError('ADMIN_NOT_JSON', `got ${type ? `"${type}"` : 'no Content-Type'}`);
      }
    }

    if (tokenDigest && guarded(path)) {
      const auth = req.headers.authorization ?? '';
      const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
      if (!m || !timingSafeEqual(digest(m[1]!), tokenDigest)) {
        throw new VelaError('ADMIN_UNAUTHORIZED', m ? 'the token does not match' : undefined);
      }
    }
  };
}
