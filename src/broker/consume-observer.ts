/**
 * What consumption tells the rest of the broker about each delivery: the counters (stats.ts) and the
 * delivery history (delivery-history.ts). The consume and pull services call these hooks at the moment
 * a message is handed out or a delivery ends; the hooks do constant work and never await.
 */
import type { StoredMessage } from '../store/index.js';
import type { BrokerStats } from './stats.js';
import type {
  DeliveredSlot,
  DeliveryHistory,
  DeliveryNext,
  DeliveryOutcome,
  DeliverySlot,
} from './delivery-history.js';
import { originIdOf } from './consume/retry-records.js';

export interface ConsumeObserver {
  /**
   * Messages went to a push or simple consumer at `at` (ms): `slots[i]` handed out `messages[i]` (as
   * the client sees it). One call per receive, so the counters are found once per batch.
   */
  delivered(
    group: string,
    topic: string,
    slots: readonly DeliveredSlot[],
    messages: readonly StoredMessage[],
    at: number,
  ): void;
  /** Deliveries ended: acked, or failed (and what follows). */
  settled(
    group: string,
    topic: string,
    slots: readonly DeliverySlot[],
    outcome: DeliveryOutcome,
    next?: DeliveryNext,
  ): void;
  /** Messages of `topic` moved to the group's dead-letter queue. */
  deadLettered(group: string, topic: string, count: number): void;
}

export interface PullObserver {
  /** A pull consumer read messages of one queue. */
  pulled(
    group: string,
    topic: string,
    queueId: number,
    clientId: string,
    messages: readonly StoredMessage[],
  ): void;
}

export class ConsumptionObserver implements ConsumeObserver, PullObserver {
  constructor(
    private readonly stats: BrokerStats,
    private readonly history: DeliveryHistory,
    private readonly now: () => number,
  ) {}

  delivered(
    group: string,
    topic: string,
    slots: readonly DeliveredSlot[],
    messages: readonly StoredMessage[],
    at: number,
  ): void {
    let fresh = 0;
    let freshBytes = 0;
    let retried = 0;
    let retriedBytes = 0;
    for (let i = 0; i < slots.length; i++) {
      const bytes = messages[i]!.body.length;
      if (slots[i]!.source === 1) {
        retried++;
        retriedBytes += bytes;
      } else {
        fresh++;
        freshBytes += bytes;
      }
    }
    if (fresh > 0) this.stats.delivered(group, topic, false, fresh, freshBytes);
    if (retried > 0) this.stats.delivered(group, topic, true, retried, retriedBytes);
    if (!this.history.enabled) return;
    for (let i = 0; i < slots.length; i++) {
      const m = messages[i]!;
      this.history.delivered(originIdOf(m), m.messageId, group, topic, slots[i]!, at);
    }
  }

  settled(
    _group: string,
    _topic: string,
    slots: readonly DeliverySlot[],
    outcome: DeliveryOutcome,
    next?: DeliveryNext,
  ): void {
    this.history.settled(slots, outcome, this.now(), next);
  }

  deadLettered(group: string, topic: string, count: number): void {
    this.stats.deadLettered(group, topic, count);
  }

  pulled(
    group: string,
    topic: string,
    queueId: number,
    clientId: string,
    messages: readonly StoredMessage[],
  ): void {
    let bytes = 0;
    for (const m of messages) bytes += m.body.length;
    this.stats.delivered(group, topic, false, messages.length, bytes);
    if (!this.history.enabled) return;
    const at = this.now();
    for (const m of messages) {
      this.history.noted(originIdOf(m), {
        group,
        topic,
        messageId: m.messageId,
        attempt: 1,
        clientId,
        via: 'PULL',
        retry: false,
        queueId,
        queueOffset: m.queueOffset,
        at,
        outcome: 'PULLED',
      });
    }
  }
}
