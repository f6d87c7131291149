/**
 * The recent deliveries of messages, for the console's message view: each attempt (to which group and
 * client, when), and how it ended (acked, nacked, invisible time expired, released when its client
 * left, forwarded to the DLQ) and what came next (a retry, the DLQ). Pull consumers' reads are noted
 * as reads; whether they are consumed is what their committed offset says.
 *
 * Bounded in memory: the newest `capacity` messages (by their original id, so a message's retries
 * stay with it) are remembered, each with its latest `perMessage` records; older ones are forgotten.
 * Nothing here is persisted: after a restart the history starts empty.
 */

export type DeliveryOutcome =
  | 'IN_FLIGHT'
  | 'ACKED'
  | 'NACKED'
  | 'EXPIRED'
  | 'RELEASED'
  | 'FORWARDED_TO_DLQ'
  | 'PULLED'
  | 'RESENT_FROM_DLQ';

/** What a failed delivery led to. */
export type DeliveryNext = 'RETRY' | 'FIFO_RETRY' | 'DLQ';

export interface DeliveryRecord {
  group: string;
  topic: string;
  /** The id the client saw (a retry has its own id). */
  messageId: string;
  /** 1 for the first delivery. */
  attempt: number;
  clientId: string;
  /** POP: push and simple consumers; PULL: pull consumers; ADMIN: an operator's action. */
  via: 'POP' | 'PULL' | 'ADMIN';
  /** Where the delivered copy is stored: the topic's queue or the group's retry topic. */
  retry: boolean;
  queueId: number;
  queueOffset: number;
  at: number;
  outcome: DeliveryOutcome;
  settledAt?: number;
  next?: DeliveryNext;
}

/** Where a delivery is kept by the consumption state (its source, queue and offset). */
export interface DeliverySlot {
  /** 1: the group's retry topic. */
  source: number;
  queueId: number;
  offset: number;
}

const openKey = (group: string, topic: string, d: DeliverySlot) =>
  `${group}\u0000${topic}\u0000${d.source}:${d.queueId}:${d.offset}`;

export class DeliveryHistory {
  private readonly byMessage = new Map<string, DeliveryRecord[]>();
  /** Deliveries not yet settled, to attach their outcome. */
  private readonly open = new Map<string, DeliveryRecord>();

  constructor(
    /** Messages remembered; 0 turns the history off. */
    readonly capacity: number,
    readonly perMessage = 32,
  ) {}

  get enabled(): boolean {
    return this.capacity > 0;
  }

  /** Messages remembered now. */
  get size(): number {
    return this.byMessage.size;
  }

  /** A message was handed to a consumer (POP). */
  delivered(originId: string, group: string, topic: string, slot: DeliverySlot, rec: DeliveryRecord): void {
    if (!this.enabled) return;
    this.add(originId, rec);
    this.open.set(openKey(group, topic, slot), rec);
  }

  /** Messages read by a pull consumer, or an operator's action on a message. */
  noted(originId: string, rec: DeliveryRecord): void {
    if (this.enabled) this.add(originId, rec);
  }

  /** POP deliveries ended: how, and what follows. */
  settled(
    group: string,
    topic: string,
    slots: readonly DeliverySlot[],
    outcome: DeliveryOutcome,
    at: number,
    next?: DeliveryNext,
  ): void {
    if (!this.enabled || this.open.size === 0) return;
    for (const d of slots) {
      const k = openKey(group, topic, d);
      const rec = this.open.get(k);
      if (!rec) continue;
      this.open.delete(k);
      rec.outcome = outcome;
      rec.settledAt = at;
      if (next) rec.next = next;
    }
  }

  /** Every record of a message (by its original id), oldest first. */
  of(originId: string): DeliveryRecord[] {
    return (this.byMessage.get(originId) ?? []).map((r) => ({ ...r }));
  }

  private add(originId: string, rec: DeliveryRecord): void {
    let list = this.byMessage.get(originId);
    if (list) {
      // Most recently active last, so the oldest is evicted first.
      this.byMessage.delete(originId);
    } else {
      list = [];
    }
    list.push(rec);
    if (list.length > this.perMessage) this.forget(list.shift()!);
    this.byMessage.set(originId, list);
    while (this.byMessage.size > this.capacity) {
      const [oldest, records] = this.byMessage.entries().next().value as [string, DeliveryRecord[]];
      this.byMessage.delete(oldest);
      for (const r of records) this.forget(r);
    }
  }

  /** Drop an evicted record's open entry (if it still stands for it). */
  private forget(rec: DeliveryRecord): void {
    if (rec.outcome !== 'IN_FLIGHT' || rec.via !== 'POP') return;
    const k = openKey(rec.group, rec.topic, {
      source: rec.retry ? 1 : 0,
      queueId: rec.queueId,
      offset: rec.queueOffset,
    });
    if (this.open.get(k) === rec) this.open.delete(k);
  }
}
