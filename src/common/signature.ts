/**
 * RocketMQ's request signature (ACL 2.0, gRPC): the `x-mq-date-time` header
 * (`yyyyMMdd'T'HHmmss'Z'`) signed with HMAC-SHA1 keyed by the secret key, sent in hex as
 * `authorization: MQv2-HMAC-SHA1 Credential=<AccessKey>, SignedHeaders=x-mq-date-time, Signature=<hex>`.
 * One implementation for everything that signs (the SDK, `vela admin`) and for the broker, which
 * recomputes it to verify. The formatting (no crypto) is in signature-format.ts, which the web console
 * shares.
 */
import { createHmac } from 'node:crypto';

export {
  SIGNATURE_ALGORITHM,
  DATE_TIME_HEADER,
  ADMIN_AUTHORIZATION_HEADER,
  formatDateTime,
  authorizationValue,
} from './signature-format.js';
import {
  ADMIN_AUTHORIZATION_HEADER,
  authorizationValue,
  DATE_TIME_HEADER,
  formatDateTime,
} from './signature-format.js';

/** HMAC-SHA1 of `content` keyed with the UTF-8 secret, in uppercase hex (as the Java and Node clients send it). */
export function signContent(secretKey: string, content: string): string {
  return createHmac('sha1', secretKey).update(content, 'utf8').digest('hex').toUpperCase();
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

/**
 * The headers of an admin HTTP API request (`vela admin`, the SDK's Admin): the JSON content type
 * when there is a body, the admin token as a Bearer header, a super user's signature under ACL.
 */
export function adminRequestHeaders(o: {
  json: boolean;
  token?: string;
  credentials?: { accessKey: string; secretKey: string };
}): Record<string, string> {
  const h: Record<string, string> = o.json ? { 'content-type': 'application/json' } : {};
  if (o.token) h.authorization = `Bearer ${o.token}`;
  if (o.credentials) {
    const signed = signRequest(o.credentials.accessKey, o.credentials.secretKey);
    h[DATE_TIME_HEADER] = signed.dateTime;
    h[ADMIN_AUTHORIZATION_HEADER] = signed.authorization;
  }
  return h;
}
