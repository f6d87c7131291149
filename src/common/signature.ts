/**
 * RocketMQ's request signature (ACL 2.0, gRPC): the `x-mq-date-time` header
 * (`yyyyMMdd'T'HHmmss'Z'`) signed with HMAC-SHA1 keyed by the secret key, sent in hex as
 * `authorization: MQv2-HMAC-SHA1 Credential=<AccessKey>, SignedHeaders=x-mq-date-time, Signature=<hex>`.
 * One implementation for everything that signs (the SDK, `vela admin`) and for the broker, which
 * recomputes it to verify.
 */
import { createHmac } from 'node:crypto';

export const SIGNATURE_ALGORITHM = 'MQv2-HMAC-SHA1';
export const DATE_TIME_HEADER = 'x-mq-date-time';

/** `yyyyMMdd'T'HHmmss'Z'` of an instant, in UTC (what the header is meant to carry). */
export function formatDateTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}` +
    `T${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`
  );
}

/** HMAC-SHA1 of `content` keyed with the UTF-8 secret, in uppercase hex (as the Java and Node clients send it). */
export function signContent(secretKey: string, content: string): string {
  return createHmac('sha1', secretKey).update(content, 'utf8').digest('hex').toUpperCase();
}

/** The `authorization` header value for a signature. */
export function authorizationValue(accessKey: string, signature: string): string {
  return `${SIGNATURE_ALGORITHM} Credential=${accessKey}, SignedHeaders=${DATE_TIME_HEADER}, Signature=${signature}`;
}

/** The two headers that sign a request made now: `x-mq-date-time` and the authorization value. */
export function signRequest(
  accessKey: string,
  secretKey: string,
  nowMs: number = Date.now(),
): { dateTime: string; authorization: string } {
  const dateTime = formatDateTime(nowMs);
  return { dateTime, authorization: authorizationValue(accessKey, signContent(secretKey, dateTime)) };
}
