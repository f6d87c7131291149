/**
 * The parts of RocketMQ's request signature that need no crypto library: the `x-mq-date-time` value
 * and the `authorization` header's layout (signature.ts computes the HMAC with node:crypto; the web
 * console computes it with WebCrypto). No Node imports: the console's bundle includes this file.
 */

export const SIGNATURE_ALGORITHM = 'MQv2-HMAC-SHA1';
export const DATE_TIME_HEADER = 'x-mq-date-time';
/** The header the admin HTTP API reads a signature from (`Authorization` carries the admin token). */
export const ADMIN_AUTHORIZATION_HEADER = 'x-vela-authorization';

/** `yyyyMMdd'T'HHmmss'Z'` of an instant, in UTC (what the header is meant to carry). */
export function formatDateTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}` +
    `T${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`
  );
}

/** The `authorization` header value for a signature. */
export function authorizationValue(accessKey: string, signature: string): string {
  return `${SIGNATURE_ALGORITHM} Credential=${accessKey}, SignedHeaders=${DATE_TIME_HEADER}, Signature=${signature}`;
}
