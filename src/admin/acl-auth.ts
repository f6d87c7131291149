/**
 * The admin API under access control: when ACL is on, every `/api/` request must be signed by a
 * super user, with the same signature as gRPC requests (HMAC-SHA1 of `x-mq-date-time` with the
 * secret key) in the header `x-vela-authorization` (`Authorization` carries the admin token, when
 * one is set). The admin clients stamp UTC, so no time-zone offset is allowed here: a captured
 * request stops working once it is older than `acl.clockSkewMs`. `/healthz` stays open.
 */
import type { FastifyRequest } from 'fastify';
import type { AccessControl } from '../broker/auth/access-control.js';

import { ADMIN_AUTHORIZATION_HEADER, DATE_TIME_HEADER } from '../common/signature-format.js';

export { ADMIN_AUTHORIZATION_HEADER };

const header = (req: FastifyRequest, name: string): string => {
  const v = req.headers[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
};

/** A Fastify `onRequest` hook: `UNAUTHORIZED` without a valid signature, `FORBIDDEN` for a normal user. */
export function aclAuthHook(acl: AccessControl) {
  return async (req: FastifyRequest): Promise<void> => {
    if (!acl.enabled) return;
    const path = req.url.split('?')[0]!;
    if (!path.startsWith('/api/') && path !== '/api') return;
    const principal = acl.authenticate(
      { authorization: header(req, ADMIN_AUTHORIZATION_HEADER), dateTime: header(req, DATE_TIME_HEADER) },
      { skewMs: acl.settings.clock.skewMs, timeZoneOffsets: false },
    );
    acl.requireSuper(principal);
  };
}
