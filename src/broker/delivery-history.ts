/**
 * The recent deliveries of messages, for the console's message view: each attempt (to which group and
 * client, when), and how it ended (acked, nacked, invisible time expired, released when its client
 * left, forwarded to the DLQ) and what came next (a retry, the DLQ). Pull consumers' reads are noted
 * as reads; whether they are consumed is what their committed offset says.
 *
 * Bounded in memory: the newest `capacity` deliveries are remembered, in a ring (the oldest is
 * forgotten as a new one comes). The ring is a set of columns (typed arrays, and arrays of references
 * to strings the broker holds anyway), not an object per delivery: tens of thousands of long-lived
 * small objects made the garbage collector's old-generation work the largest cost of a delivery
 * (bench/broker-cpu.ts). A delivery in flight also has an entry in a map of the deliveries not yet
 * settled (as large as what is in flight); finding a message's deliveries scans the ring, which only
 * the console does. Nothing here is persisted: after a restart the history starts empty.
 */

import type { DeliveryNext, DeliveryOutcome, DeliveryRecord } from '../common/admin-api.js';
export type { DeliveryNext, DeliveryOutcome, DeliveryRecord };

/** Where a delivery is kept by the consumption state (its source, queue and offset). */
export interface DeliverySlot {
  /** 1: the group's retry topic. */
  source: number;
  queueId: number;
  offset: number;
}

/** A queue (of the topic, or of the retry topic) as one small integer: no string built per delivery. */
const queueKey = (d: DeliverySlot) => d.queueId * 2 + (d.source & 1);

const OUTCOMES: readonly DeliveryOutcome[] = [
  'IN_FLIGHT',
  'ACKED',
  'NACKED',
  'EXPIRED',
  'RELEASED',
  'FORWARDED_TO_DLQ',
  'PULLED',
  'RESENT_FROM_DLQ',
];
const NEXTS: readonly (DeliveryNext | undefined)[] = [undefined, 'RETRY', 'FIFO_RETRY', 'DLQ'];
const VIAS: readonly DeliveryRecord['via'][] = ['POP', 'PULL', 'ADMIN'];
const code = <T>(table: readonly T[], v: T): number => table.indexOf(v);

/** Open deliveries of one (group, topic): queue key → offset → the sequence number of its record. */
type OpenSlots = Map<number, Map<number, number>>;

export class DeliveryHistory {
  /** Sequence number of the next record; record `seq` lives in slot `seq % capacity`. */
  private next = 0;
  private readonly origin: (string | undefined)[] = [];
  private readonly group: string[] = [];
  private readonly topic: string[] = [];
  private readonly messageId: string[] = [];
  private readonly clientId: string[] = [];
  private readonly seq: Float64Array;
  private readonly attempt: Int32Array;
  private readonly queueId: Int32Array;
  private readonly queueOffset: Float64Array;
  private readonly at: Float64Array;
  private readonly settledAt: Float64Array;
  /** outcome | next << 4 | via << 6 | retry << 8 | open << 9 */
  private readonly flags: Uint16Array;
  /** Where each slot's POP delivery is open (its queue key and offset in the open map). */
  private readonly queueKeys: Int32Array;
  private readonly offsets: Float64Array;
  /** Deliveries not yet settled, by group, topic, queue and offset, to attach their outcome. */
  private readonly open = new Map<string, Map<string, OpenSlots>>();

  constructor(
    /** Deliveries remembered; 0 turns the history off. */
    readonly capacity: number,
  ) {
    this.seq = new Float64Array(capacity);
    this.attempt = new Int32Array(capacity);
    this.queueId = new Int32Array(capacity);
    this.queueOffset = new Float64Array(capacity);
    this.at = new Float64Array(capacity);
    this.settledAt = new Float64Array(capacity);
    this.flags = new Uint16Array(capacity);
    this.queueKeys = new Int32Array(capacity);
    this.offsets = new Float64Array(capacity);
  }

  get enabled(): boolean {
    return this.capacity > 0;
  }

  /** Deliveries remembered now. */
  get size(): number {
    return Math.min(this.next, this.capacity);
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
    const i = this.add(originId, rec);
    this.flags[i]! |= 1 << 9;
    this.queueKeys[i] = q;
    this.offsets[i] = slot.offset;
    slots.set(slot.offset, this.seq[i]!);
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
    const o = code(OUTCOMES, outcome);
    const n = next ? code(NEXTS, next) : 0;
    for (const d of slots) {
      const open = byQueue.get(queueKey(d));
      const seq = open?.get(d.offset);
      if (seq === undefined) continue;
      open!.delete(d.offset);
      const i = seq % this.capacity;
      if (this.seq[i] !== seq) continue; // overwritten meanwhile
      const f = this.flags[i]!;
      // Keep via and retry, set the outcome, keep an earlier `next` unless a new one is given; no longer open.
      this.flags[i] = (f & ((0b11 << 6) | (1 << 8))) | o | ((n || (f >> 4) & 0b11) << 4);
      this.settledAt[i] = at;
    }
  }

  /** Every remembered delivery of a message (by its original id), oldest first, at most `limit`. */
  of(originId: string, limit = 256): DeliveryRecord[] {
    const out: DeliveryRecord[] = [];
    const first = Math.max(0, this.next - this.capacity);
    for (let s = first; s < this.next; s++) {
      const i = s % this.capacity;
      if (this.origin[i] === originId) out.push(this.record(i));
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

  private record(i: number): DeliveryRecord {
    const f = this.flags[i]!;
    const next = NEXTS[(f >> 4) & 0b11];
    const settledAt = this.settledAt[i]!;
    return {
      group: this.group[i]!,
      topic: this.topic[i]!,
      messageId: this.messageId[i]!,
      attempt: this.attempt[i]!,
      clientId: this.clientId[i]!,
      via: VIAS[(f >> 6) & 0b11]!,
      retry: (f & (1 << 8)) !== 0,
      queueId: this.queueId[i]!,
      queueOffset: this.queueOffset[i]!,
      at: this.at[i]!,
      outcome: OUTCOMES[f & 0b1111]!,
      ...(settledAt ? { settledAt } : {}),
      ...(next ? { next } : {}),
    };
  }

  /** Store a record in the next slot, forgetting the oldest (and its open entry). */
  private add(origin: string, rec: DeliveryRecord): number {
    const i = this.next % this.capacity;
    if (this.next >= this.capacity && this.flags[i]! & (1 << 9)) this.forgetOpen(i);
    this.seq[i] = this.next++;
    this.origin[i] = origin;
    this.group[i] = rec.group;
    this.topic[i] = rec.topic;
    this.messageId[i] = rec.messageId;
    this.clientId[i] = rec.clientId;
    this.attempt[i] = rec.attempt;
    this.queueId[i] = rec.queueId;
    this.queueOffset[i] = rec.queueOffset;
    this.at[i] = rec.at;
    this.settledAt[i] = rec.settledAt ?? 0;
    this.flags[i] =
      code(OUTCOMES, rec.outcome) |
      ((rec.next ? code(NEXTS, rec.next) : 0) << 4) |
      (code(VIAS, rec.via) << 6) |
      ((rec.retry ? 1 : 0) << 8);
    return i;
  }

  /** The slot's delivery leaves the ring while still open: drop it from the open map. */
  private forgetOpen(i: number): void {
    const slots = this.open.get(this.group[i]!)?.get(this.topic[i]!)?.get(this.queueKeys[i]!);
    if (slots?.get(this.offsets[i]!) === this.seq[i]) slots!.delete(this.offsets[i]!);
  }
}
