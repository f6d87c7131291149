/**
 * The credential a request carries: its `authorization` value
 * (`MQv2-HMAC-SHA1 Credential=<AccessKey>[/…], SignedHeaders=x-mq-date-time, Signature=<hex>`) read
 * as RocketMQ reads it, and its verification against a user's secret key. The Go client sends
 * `Credential=<AccessKey>//Rocketmq` and lowercase hex; Java and Node uppercase hex: all accepted.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { VelaError } from '../../common/errors.js';
import { DATE_TIME_HEADER, SIGNATURE_ALGORITHM, signContent } from '../../common/signature.js';

export interface Credential {
  /** The access key (username); '' when the client sent none (Go and Python without credentials). */
  accessKey: string;
  /** The signature as sent (hex, either case). */
  signature: string;
}

/** Longest authorization value read (a real one is about 130 characters). */
const MAX_AUTHORIZATION = 1024;

const unauthorized = (why: string) => new VelaError('ACL_UNAUTHORIZED', why);

export function parseAuthorization(value: string): Credential {
  if (value.length > MAX_AUTHORIZATION) throw unauthorized('the authorization header is too long');
  const space = value.indexOf(' ');
  const algorithm = space < 0 ? value : value.slice(0, space);
  if (algorithm !== SIGNATURE_ALGORITHM) {
    throw unauthorized(`the authorization header must start with ${SIGNATURE_ALGORITHM}`);
  }
  let accessKey: string | undefined;
  let signature: string | undefined;
  for (const item of value.slice(space + 1).split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) throw unauthorized(`malformed authorization item "${item.trim()}"`);
    const key = item.slice(0, eq).trim();
    const v = item.slice(eq + 1).trim();
    if (key === 'Credential') accessKey = v.split('/')[0] ?? '';
    else if (key === 'Signature') signature = v;
    else if (key === 'SignedHeaders' && v.toLowerCase() !== DATE_TIME_HEADER) {
      throw unauthorized(`only ${DATE_TIME_HEADER} can be signed (SignedHeaders=${v})`);
    }
  }
  if (accessKey === undefined) throw unauthorized('the authorization header has no Credential');
  if (signature === undefined) throw unauthorized('the authorization header has no Signature');
  return { accessKey, signature };
}

/** Whether `signature` (hex) is the HMAC-SHA1 of `content` with `secretKey`; compared in constant time. */
export function verifySignature(secretKey: string, content: string, signature: string): boolean {
  if (!/^[0-9a-fA-F]{40}$/.test(signature)) return false;
  const expected = Buffer.from(signContent(secretKey, content), 'hex');
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

/**
 * Whether `signature` is the Base64 HMAC-SHA1 of `content` with `secretKey` (RocketMQ's Remoting
 * `AclSigner`); compared in constant time.
 */
export function verifyContentSignature(secretKey: string, content: Buffer, signature: string): boolean {
  const expected = Buffer.from(createHmac('sha1', secretKey).update(content).digest('base64'));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(expected, given);
}
