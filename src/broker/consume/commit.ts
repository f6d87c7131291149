/**
 * A delivery leaves the state for good (acked, moved to a retry topic or the DLQ, or gone with its
 * message): free its FIFO key, count its offset as settled in the FIFO window, journal it.
 * Call serialized.
 */
import type { StateRecord } from '../state-records.js';
import type { ConsumeContext } from './context.js';
import { Source, deliveryKey, type Delivery, type DeliveryKey, type GroupTopicState } from './delivery.js';

/** Remove a delivery from memory; the caller journals it with `journalSettled`. */
export function settle(ctx: ConsumeContext, s: GroupTopicState, key: DeliveryKey): Delivery {
  const d = s.deliveries.get(key)!;
  s.deliveries.delete(key);
  if (d.armed) ctx.heap.noteStale();
  if (d.fifoKey && s.blocked.get(d.fifoKey) === key) {
    s.blocked.delete(d.fifoKey);
    ctx.waiters.wake(s.topic, s.group);
  }
  if (d.fifoKey && d.source === Source.TOPIC) {
    s.fifoQueue(d.queueId, d.offset).settle(d.offset, s.topicNext.get(d.queueId) ?? 0, (o) =>
      s.deliveries.has(deliveryKey(Source.TOPIC, d.queueId, o)),
    );
  }
  return d;
}

/** Journal settled deliveries (one record); resolves once it is durable. */
export function journalSettled(
  ctx: ConsumeContext,
  s: GroupTopicState,
  done: readonly Delivery[],
): Promise<void> {
  return ctx.journal.append(settledRecord(s, done));
}

/** The journal record of settled deliveries (with their FIFO windows' new low marks). */
export function settledRecord(s: GroupTopicState, done: readonly Delivery[]): StateRecord {
  const fifo = done.some((d) => d.fifoKey);
  const queues = fifo ? [...new Set(done.filter((d) => d.fifoKey).map((d) => d.queueId))] : [];
  return {
    kind: 'settled',
    group: s.group,
    topic: s.topic,
    settled: done.map((d) => ({ source: d.source, queueId: d.queueId, offset: d.offset })),
    fifo,
    fifoLows: queues.map((queueId) => ({ queueId, low: s.fifo.get(queueId)?.low ?? 0 })),
  };
}
