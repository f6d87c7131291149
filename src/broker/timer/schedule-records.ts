/**
 * What a delay message looks like while it waits, and once it is delivered.
 *
 * While it waits, a DELAY message is stored on the system topic `rmq_sys_wheel_timer` (queue 0),
 * as RocketMQ does, with its real topic and queue in `REAL_TOPIC` / `REAL_QID` and its delivery time
 * in the record's delivery timestamp: no consumer reads that topic. When it is due, the timer appends
 * a copy to the real topic, with the same message id, the delivery timestamp kept (consumers see it)
 * and the position of the waiting record in an internal property, by which a restart can tell
 * whether a delivery it began had completed (so nothing is delivered twice).
 */
import type { MessageInput, StoredMessage } from '../../store/index.js';

/** The topic delay messages wait on (RocketMQ's `TimerMessageStore.TIMER_TOPIC`). */
export const TIMER_TOPIC = 'rmq_sys_wheel_timer';
export const REAL_TOPIC = 'REAL_TOPIC';
export const REAL_QID = 'REAL_QID';
/** On a delivered copy: the log position of the record it was delivered from. */
export const SCHEDULE_POSITION = '__VELA_SCHEDULE_POS';

/** The record that waits on the timer topic for `input` (a message for `input.topic`). */
export function scheduleRecord(input: MessageInput, due: number): MessageInput {
  return {
    ...input,
    topic: TIMER_TOPIC,
    queueId: 0,
    properties: { ...input.properties, [REAL_TOPIC]: input.topic, [REAL_QID]: String(input.queueId) },
    deliveryTimestamp: due,
  };
}

/** The real topic a waiting record is for. */
export function realTopicOf(m: StoredMessage): string {
  return m.properties[REAL_TOPIC] ?? '';
}

/** The queue a waiting record asked for, fitted to the topic's current write queues. */
export function realQueueOf(m: StoredMessage, writeQueueNums: number): number {
  const q = Number(m.properties[REAL_QID] ?? 0);
  return Number.isInteger(q) && q >= 0 ? q % Math.max(1, writeQueueNums) : 0;
}

/** The copy of a waiting record that is delivered to its real topic. */
export function deliveryRecord(m: StoredMessage, queueId: number): MessageInput {
  const { [REAL_TOPIC]: topic, [REAL_QID]: _qid, ...properties } = m.properties;
  return {
    topic: topic ?? '',
    queueId,
    messageId: m.messageId,
    body: m.body,
    ...(m.tag ? { tag: m.tag } : {}),
    ...(m.keys.length ? { keys: m.keys } : {}),
    ...(m.messageGroup ? { messageGroup: m.messageGroup } : {}),
    properties: { ...properties, [SCHEDULE_POSITION]: String(m.logPosition) },
    bornTimestamp: m.bornTimestamp,
    ...(m.bornHost ? { bornHost: m.bornHost } : {}),
    deliveryTimestamp: m.deliveryTimestamp,
    reconsumeTimes: m.reconsumeTimes,
    sysFlag: m.sysFlag,
  };
}

export interface RecallHandle {
  due: number;
  position: number;
  messageId: string;
}

const HANDLE_VERSION = 'v1';

/** The opaque handle a producer gets at send time to recall the message before it is due. */
export function encodeRecallHandle(h: RecallHandle): string {
  return Buffer.from(`${HANDLE_VERSION} ${h.due} ${h.position} ${h.messageId}`, 'utf8').toString('base64url');
}

/** The handle's fields, or null when it is not one of ours. */
export function decodeRecallHandle(handle: unknown): RecallHandle | null {
  if (typeof handle !== 'string' || handle.length === 0 || handle.length > 1024) return null;
  if (!/^[A-Za-z0-9_-]+$/.test(handle)) return null;
  const text = Buffer.from(handle, 'base64url').toString('utf8');
  const m = /^v1 (\d{1,16}) (\d{1,16}) (.+)$/s.exec(text);
  if (!m) return null;
  const due = Number(m[1]);
  const position = Number(m[2]);
  if (!Number.isSafeInteger(due) || !Number.isSafeInteger(position)) return null;
  return { due, position, messageId: m[3]! };
}
