/**
 * Where failed messages go, and what they look like there.
 *
 * A message waiting for retry is a new message (new message id, `ORIGIN_MESSAGE_ID` = the first id)
 * in the group's retry topic for its topic, `%RETRY%<group>+<topic>` (RocketMQ 5's form: neither name
 * may contain `+`, so the pair is unambiguous; the `_` of earlier versions was not, see
 * retry-migration.ts), with its due time as delivery
 * timestamp. Retries are spread over queues by the attempt that failed, so that within one queue due
 * times only grow (every retry after attempt n waits the same interval): a consumer only ever looks
 * at the head of each retry queue. Waiting retries therefore live on disk, not in memory, and a
 * restart neither loses them nor fires them early. Queue 0 holds retries that are due at once.
 *
 * A message out of attempts goes to `%DLQ%<group>` (one queue), keeping its original id.
 */
import { randomBytes } from 'node:crypto';
import type { MessageInput, StoredMessage } from '../../store/index.js';
import { DLQ_PREFIX, RETRY_PREFIX } from '../names.js';

export const ORIGIN_MESSAGE_ID = 'ORIGIN_MESSAGE_ID';
export const RETRY_TOPIC_PROPERTY = 'RETRY_TOPIC';
export const DLQ_ORIGIN_TOPIC = 'DLQ_ORIGIN_TOPIC';
export const DLQ_ORIGIN_MESSAGE_ID = 'DLQ_ORIGIN_MESSAGE_ID';
/**
 * System property (never shown to clients): the delivery a retry or dead letter was written for, so
 * that a restart after a crash does not write it twice (failure-marks.ts).
 */
export const FAILED_DELIVERY = '__VELA_FAILED_DELIVERY';

/** Retry queues: 0 for "due now", then one per failed attempt up to this many. */
export const RETRY_QUEUES = 33;

export function retryTopicOf(group: string, topic: string): string {
  return `${RETRY_PREFIX}${group}+${topic}`;
}

/** The (group, topic) of a retry topic, or null for any other name (including the old `_` form). */
export function parseRetryTopic(name: string): { group: string; topic: string } | null {
  if (!name.startsWith(RETRY_PREFIX)) return null;
  const plus = name.indexOf('+', RETRY_PREFIX.length);
  if (plus < 0) return null;
  return { group: name.slice(RETRY_PREFIX.length, plus), topic: name.slice(plus + 1) };
}

/** Whether a name is a retry topic in the old `_` form. */
export function isLegacyRetryTopic(name: string): boolean {
  return name.startsWith(RETRY_PREFIX) && !name.includes('+', RETRY_PREFIX.length);
}

export function dlqTopicOf(group: string): string {
  return `${DLQ_PREFIX}${group}`;
}

export function retryQueueFor(failedAttempt: number, delayMs: number): number {
  return delayMs <= 0 ? 0 : Math.min(RETRY_QUEUES - 1, Math.max(1, failedAttempt));
}

/** A fresh message id in the v1 layout the official clients use (34 uppercase hex characters). */
export function newMessageId(): string {
  return `01${randomBytes(16).toString('hex').toUpperCase()}`;
}

/** The first id of a message, through any number of retries. */
export function originIdOf(m: StoredMessage): string {
  return m.properties[ORIGIN_MESSAGE_ID] ?? m.messageId;
}

/**
 * A record of `m` under another topic, queue, id or properties. One literal with every field (absent
 * ones `undefined`), not `{ ...copy, more }`: copies made by spreading get a V8 map each, and the
 * store's encoder then misses its inline caches on every field of every retry (found with `--log-ic`).
 */
export function recordOf(
  m: StoredMessage,
  topic: string,
  queueId: number,
  messageId: string,
  properties: Record<string, string>,
  deliveryTimestamp: number | undefined,
  reconsumeTimes: number,
): MessageInput {
  return {
    topic,
    queueId,
    messageId,
    body: m.body,
    tag: m.tag || undefined,
    keys: m.keys.length ? m.keys : undefined,
    messageGroup: m.messageGroup || undefined,
    properties,
    bornTimestamp: m.bornTimestamp,
    bornHost: m.bornHost || undefined,
    deliveryTimestamp,
    reconsumeTimes,
    sysFlag: m.sysFlag,
  };
}

/**
 * The retry message for `m` after its delivery attempt `failedAttempt` failed, due at `dueAt`;
 * `mark` names that delivery (failure-marks.ts).
 */
export function retryRecord(
  m: StoredMessage,
  group: string,
  topic: string,
  failedAttempt: number,
  dueAt: number,
  delayMs: number,
  mark: string,
): MessageInput {
  const properties = {
    ...m.properties,
    [ORIGIN_MESSAGE_ID]: originIdOf(m),
    [RETRY_TOPIC_PROPERTY]: topic,
    [FAILED_DELIVERY]: mark,
  };
  const queueId = retryQueueFor(failedAttempt, delayMs);
  return recordOf(m, retryTopicOf(group, topic), queueId, newMessageId(), properties, dueAt, failedAttempt);
}

/** The dead-letter copy of `m`, which failed `attempts` deliveries; `mark` names the last one. */
export function dlqRecord(
  m: StoredMessage,
  group: string,
  topic: string,
  attempts: number,
  mark: string,
): MessageInput {
  const origin = originIdOf(m);
  const properties = {
    ...m.properties,
    [ORIGIN_MESSAGE_ID]: origin,
    [DLQ_ORIGIN_TOPIC]: topic,
    [DLQ_ORIGIN_MESSAGE_ID]: origin,
    [FAILED_DELIVERY]: mark,
  };
  return recordOf(m, dlqTopicOf(group), 0, origin, properties, undefined, attempts);
}

/** A waiting retry moved to another retry topic as it is (same id, due time and attempts). */
export function movedRetryRecord(
  m: StoredMessage,
  topic: string,
  queueId: number,
  dueAt: number,
  reconsumeTimes: number,
): MessageInput {
  return recordOf(m, topic, queueId, m.messageId, m.properties, dueAt, reconsumeTimes);
}

/** A message resent from the DLQ to its group: due now, attempts start again. */
export function resendRecord(m: StoredMessage, group: string): MessageInput {
  const topic = m.properties[DLQ_ORIGIN_TOPIC] ?? m.topic;
  const {
    [DLQ_ORIGIN_TOPIC]: _t,
    [DLQ_ORIGIN_MESSAGE_ID]: _i,
    [FAILED_DELIVERY]: _f,
    ...properties
  } = m.properties;
  const resent = { ...properties, [ORIGIN_MESSAGE_ID]: originIdOf(m), [RETRY_TOPIC_PROPERTY]: topic };
  return recordOf(m, retryTopicOf(group, topic), 0, newMessageId(), resent, 0, 0);
}
