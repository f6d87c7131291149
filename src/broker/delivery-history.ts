/**
 * The recent deliveries of messages, for the console's message view: each attempt (to which group and
 * client, when), and how it ended (acked, nacked, invisible time expired, released when its client
 * left, forwarded to the DLQ) and what came next (a retry, the DLQ). Pull consumers' reads are noted
 * as reads; whether they are consumed is what their committed offset says.
 *
 * Bounded in memory: the newest `capacity` deliveries are remembered, in a ring (the oldest is
 * forgotten as a new one comes). Recording one costs an object and, for a delivery in flight, an entry
 * in a map of the deliveries not yet settled (as large as what is in flight); finding a message's
 * deliveries scans the ring, which only the console does. Nothing here is persisted: after a restart
 * the history starts empty.
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

/** A queue (of the topic, or of the retry topic) as one small integer: no string built per delivery. */
const queueKey = (d: DeliverySlot) => d.queueId * 2 + (d.source & 1);

interface Entry {
  origin: string;
  rec: DeliveryRecord;
  /** Set while a POP delivery is not settled: where it is in `open`. */
  openIn: Map<number, Entry> | undefined;
  key: number;
}

export class DeliveryHistory {
  private readonly ring: (Entry | undefined)[] = [];
  private head = 0;
  /** Deliveries not yet settled, by group, topic, queue and offset, to attach their outcome. */
  private readonly open = new Map<string, Map<string, Map<number, Map<number, Entry>>>>();

  constructor(
    /** Deliveries remembered; 0 turns the history off. */
    readonly capacity: number,
  ) {}

  get enabled(): boolean {
    return this.capacity > 0;
  }

  /** Deliveries remembered now. */
  get size(): number {
    return this.ring.length;
  }

  /** A message was handed to a consumer (POP). */
  delivered(originId: string, group: string, topic: string, slot: DeliverySlot, rec: DeliveryRecord): void {
    if (!this.enabled) return;
    let byTopic = this.open.get(group);
    if (!byTopic) this.open.set(group, (byTopic = new Map()));
    let byQueue = byTopic.get(topic);
    if (!byQueue) byTopic.set(topic, (byQueue = new Map()));
    const q = queueKey(slot);
    let slots = byQueue.get(q);
    if (!slots) byQueue.set(q, (slots = new Map()));
    const e = this.add(originId, rec);
    e.openIn = slots;
    e.key = slot.offset;
    slots.set(slot.offset, e);
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
    const byQueue = this.open.get(group)?.get(topic);
    if (!byQueue) return;
    for (const d of slots) {
      const open = byQueue.get(queueKey(d));
      const e = open?.get(d.offset);
      if (!e) continue;
      open!.delete(d.offset);
      e.openIn = undefined;
      e.rec.outcome = outcome;
      e.rec.settledAt = at;
      if (next) e.rec.next = next;
    }
  }

  /** Every remembered delivery of a message (by its original id), oldest first, at most `limit`. */
  of(originId: string, limit = 256): DeliveryRecord[] {
    const out: DeliveryRecord[] = [];
    const n = this.ring.length;
    // Oldest first: from the slot the next delivery overwrites, round to the newest.
    for (let i = 0; i < n; i++) {
      const e = this.ring[(this.head + i) % n];
      if (e && e.origin === originId) out.push({ ...e.rec });
    }
    return out.slice(-limit);
  }

  /** Deliveries in flight that the history still remembers. */
  get openCount(): number {
    let n = 0;
    for (const byTopic of this.open.values())
      for (const byQueue of byTopic.values()) for (const slots of byQueue.values()) n += slots.size;
    return n;
  }

  private add(origin: string, rec: DeliveryRecord): Entry {
    const oldest = this.ring[this.head];
    if (oldest?.openIn && oldest.openIn.get(oldest.key) === oldest) oldest.openIn.delete(oldest.key);
    const e: Entry = { origin, rec, openIn: undefined, key: 0 };
    this.ring[this.head] = e;
    this.head = (this.head + 1) % this.capacity;
    return e;
  }
}
