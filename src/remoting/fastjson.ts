/**
 * Bodies as RocketMQ's fastjson writes and reads them (reference/remoting.md §A6). Mostly plain JSON,
 * with one quirk Vela must reproduce: maps keyed by `MessageQueue` are written with the key object
 * itself as the key, `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{…}}}`, which is not
 * JSON. `stringify` writes a value in which `mqMap(...)` marks such maps.
 */
import { VelaError } from '../common/errors.js';

export interface MessageQueueKey {
  brokerName: string;
  queueId: number;
  topic: string;
}

class MqMap {
  constructor(readonly entries: readonly (readonly [MessageQueueKey, unknown])[]) {}
}

/** A map keyed by message queues, written the fastjson way. */
export function mqMap(entries: readonly (readonly [MessageQueueKey, unknown])[]): unknown {
  return new MqMap(entries);
}

/** JSON, except that `mqMap` values are written with object keys (fields in fastjson's order). */
export function stringify(value: unknown): string {
  if (value instanceof MqMap) {
    return `{${value.entries
      .map(
        ([k, v]) =>
          `{"brokerName":${JSON.stringify(k.brokerName)},"queueId":${k.queueId},"topic":${JSON.stringify(k.topic)}}:${stringify(v)}`,
      )
      .join(',')}}`;
  }
  if (Array.isArray(value)) return `[${value.map((v) => stringify(v ?? null)).join(',')}]`;
  if (value && typeof value === 'object' && !Buffer.isBuffer(value)) {
    const parts: string[] = [];
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (v !== undefined) parts.push(`${JSON.stringify(k)}:${stringify(v)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function jsonBody(value: unknown): Buffer {
  return Buffer.from(stringify(value), 'utf8');
}

/** Parse a JSON request body; a missing or malformed one is `BAD_REQUEST`. */
export function parseBody<T>(body: Buffer | undefined, what: string): T {
  if (!body || body.length === 0) throw new VelaError('BAD_REQUEST', `the request has no ${what} body`);
  try {
    return JSON.parse(body.toString('utf8')) as T;
  } catch (err) {
    throw new VelaError('BAD_REQUEST', `the ${what} body is not JSON: ${(err as Error).message}`);
  }
}
