/**
 * What a transactional message looks like while its transaction is open, and once it is committed.
 *
 * A half message is stored on the system topic `RMQ_SYS_TRANS_HALF_TOPIC` (queue 0), as RocketMQ
 * does, with its real topic and queue in `REAL_TOPIC` / `REAL_QID`, `TRAN_MSG=true`, and the client
 * that sent it: no consumer reads that topic. A commit appends a copy to the real topic with the
 * same message id and the half message's offset in an internal property, by which a restart can
 * tell whether a commit it began had completed. The transaction id names the half message: its
 * queue offset and log position.
 */
import type { MessageInput, StoredMessage } from '../../store/index.js';
import type { BrokerMessage } from '../message.js';
import { REAL_QID, REAL_TOPIC } from '../timer/schedule-records.js';

/** The topic half messages wait on (RocketMQ's `TransactionalMessageUtil.buildHalfTopic()`). */
export const HALF_TOPIC = 'RMQ_SYS_TRANS_HALF_TOPIC';
export const TRAN_MSG = 'TRAN_MSG';
/** RocketMQ's property for a per-message check delay, in seconds. */
export const CHECK_IMMUNITY_TIME = 'CHECK_IMMUNITY_TIME_IN_SECONDS';
/** The client id of the producer that sent the half message. */
export const PRODUCER_CLIENT = '__VELA_PRODUCER';
/** On a committed copy: the queue offset of its half message. */
export const HALF_OFFSET = '__VELA_TX_HALF';

const INTERNAL = new Set([REAL_TOPIC, REAL_QID, TRAN_MSG, CHECK_IMMUNITY_TIME, PRODUCER_CLIENT]);

/** The half message to store for `input` (a message for `input.topic`). */
export function halfRecord(input: MessageInput, clientId: string, checkAfterMs: number): MessageInput {
  const properties: Record<string, string> = {
    ...input.properties,
    [REAL_TOPIC]: input.topic,
    [REAL_QID]: String(input.queueId),
    [TRAN_MSG]: 'true',
  };
  if (clientId) properties[PRODUCER_CLIENT] = clientId;
  if (checkAfterMs > 0) properties[CHECK_IMMUNITY_TIME] = String(Math.ceil(checkAfterMs / 1000));
  return { ...input, topic: HALF_TOPIC, queueId: 0, properties };
}

export function realTopicOf(m: StoredMessage): string {
  return m.properties[REAL_TOPIC] ?? '';
}

export function producerOf(m: StoredMessage): string {
  return m.properties[PRODUCER_CLIENT] ?? '';
}

/** The check delay the producer asked for, in ms (0 if none). */
export function checkAfterMsOf(m: StoredMessage): number {
  const s = Number(m.properties[CHECK_IMMUNITY_TIME] ?? 0);
  return Number.isFinite(s) && s > 0 ? s * 1000 : 0;
}

function userProperties(m: StoredMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in m.properties) if (!INTERNAL.has(k)) out[k] = m.properties[k]!;
  return out;
}

/** The copy a commit appends to the real topic. */
export function commitRecord(m: StoredMessage, queueId: number): MessageInput {
  return {
    topic: realTopicOf(m),
    queueId,
    messageId: m.messageId,
    body: m.body,
    ...(m.tag ? { tag: m.tag } : {}),
    ...(m.keys.length ? { keys: m.keys } : {}),
    properties: { ...userProperties(m), [HALF_OFFSET]: String(m.queueOffset) },
    bornTimestamp: m.bornTimestamp,
    ...(m.bornHost ? { bornHost: m.bornHost } : {}),
    sysFlag: m.sysFlag,
  };
}

/** The half message as its producer sent it: what an orphaned-transaction check shows. */
export function producerView(m: StoredMessage): BrokerMessage {
  return { ...m, topic: realTopicOf(m), properties: userProperties(m) };
}

const HEX16 = /^[0-9A-F]{16}$/;

/** The transaction id of the half message at this queue offset and log position. */
export function encodeTransactionId(offset: number, position: number): string {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(16, '0');
  return `${hex(position)}${hex(offset)}`;
}

export function decodeTransactionId(id: unknown): { offset: number; position: number } | null {
  if (typeof id !== 'string' || id.length !== 32) return null;
  const p = id.slice(0, 16);
  const o = id.slice(16);
  if (!HEX16.test(p) || !HEX16.test(o)) return null;
  const position = parseInt(p, 16);
  const offset = parseInt(o, 16);
  if (!Number.isSafeInteger(position) || !Number.isSafeInteger(offset)) return null;
  return { offset, position };
}
