/** The stored message behind a delivery, and the message as a delivery presents it to the client. */
import { createHash } from 'node:crypto';
import { VelaError } from '../../common/errors.js';
import type { MessageStore, StoredMessage } from '../../store/index.js';
import { Source, type Delivery, type GroupTopicState } from './delivery.js';
import { ORIGIN_MESSAGE_ID, originIdOf, retryTopicOf } from './retry-records.js';

/**
 * The stored message a delivery stands for, or null if retention removed it. A message handed out
 * before its record was durable (pop.ts) is read once it is; null if a rollback took it back.
 */
export async function readDelivered(
  store: MessageStore,
  s: GroupTopicState,
  d: Delivery,
): Promise<StoredMessage | null> {
  const topic = d.source === Source.RETRY ? retryTopicOf(s.group, s.topic) : s.topic;
  // Each try that meets a rollback reads again: the offset then holds another message, or none yet.
  for (let tries = 0; tries < 3; tries++) {
    const rollbacks = store.rollbacks;
    const appended = d.source === Source.TOPIC && d.offset >= store.maxOffset(topic, d.queueId);
    const r = await store.read(topic, d.queueId, d.offset, { maxCount: 1, appended });
    if (store.rollbacks !== rollbacks) continue;
    const m = r.messages[0];
    if (!m || m.queueOffset !== d.offset) return null;
    if (appended && !store.isDurable(m.logPosition)) {
      try {
        await store.whenDurable(m.logPosition, rollbacks);
      } catch {
        continue; // rejected only by a rollback
      }
    }
    return m;
  }
  throw new VelaError(
    'STORE_IO_ERROR',
    `${topic} queue ${d.queueId} offset ${d.offset} kept being rolled back`,
  );
}

/** A presented id for the n-th delivery of a FIFO message: new per retry, stable for a given attempt. */
function retryMessageId(origin: string, attempt: number): string {
  return `01${createHash('md5').update(`${origin}#${attempt}`).digest('hex').toUpperCase()}`;
}

/**
 * The message as this delivery presents it: a retry shows its original topic; a FIFO message
 * delivered again shows a new message id, with the first one in `ORIGIN_MESSAGE_ID`. (A copy made
 * by spreading does not carry the record the read decoded: record-codec.ts ReadMessage.)
 */
export function presentDelivered(s: GroupTopicState, m: StoredMessage, d: Delivery): StoredMessage {
  if (d.source === Source.RETRY) return { ...m, topic: s.topic };
  if (d.attempt > 1) {
    const origin = originIdOf(m);
    return {
      ...m,
      messageId: retryMessageId(origin, d.attempt),
      properties: { ...m.properties, [ORIGIN_MESSAGE_ID]: origin },
    };
  }
  return m;
}
