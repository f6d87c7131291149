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
 * (bench/broker-cpu.ts). The columns are allocated whole up front, and message ids in RocketMQ's
 * form (upper-case hex) are kept as bytes: a string kept per delivery would outlive the young
 * generation and fill the old one, whose collections are the broker's longest pauses. A delivery
 * in flight carries the sequence number of its record (`historySeq` of the consumption state's
 * delivery), so its outcome finds the record without a lookup structure; finding a message's
 * deliveries scans the ring, which only the console does. Nothing here is persisted: after a restart
 * the history starts empty.
 */

import type { DeliveryNext, DeliveryOutcome, DeliveryRecord } from '../common/admin-api.js';
export type { DeliveryNext, DeliveryOutcome, DeliveryRecord };

/** A delivery of the consumption state, as the history sees it. */
export interface DeliverySlot {
  /** 1: the group's retry topic. */
  source: number;
  queueId: number;
  offset: number;
  /**
   * The sequence number of the history's record of this delivery while it is open (set by
   * `delivered`); -1 when the history holds none (cleared by `settled`, never set after a restart).
   */
  historySeq: number;
}

/** A delivery being handed out. */
export interface DeliveredSlot extends DeliverySlot {
  attempt: number;
  clientId: string;
}

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
const VIA_POP = code(VIAS, 'POP');
/** Flag bits: a delivery of the retry topic; a POP delivery not yet settled. */
const RETRY = 1 << 8;
const OPEN = 1 << 9;

/** Longest message id kept as bytes (hex digits); RocketMQ's ids have 32 (Remoting) or 34 (5.x). */
const MAX_HEX_ID = 40;
const HEX = '0123456789ABCDEF';
/** Upper-case hex digit → its value; -1 for anything else. */
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX_VALUE[HEX.charCodeAt(i)] = i;

export class DeliveryHistory {
  /** Sequence number of the next record; record `seq` lives in slot `seq % capacity`. */
  private next = 0;
  /** The original id where it differs from the message id (retries); undefined otherwise. */
  private readonly origin: (string | undefined)[];
  private readonly group: string[];
  private readonly topic: string[];
  /** Message ids not kept as bytes (any other form); undefined where `idLength` is set. */
  private readonly messageId: (string | undefined)[];
  /** Message ids as bytes, MAX_HEX_ID / 2 per slot, and their length in hex digits (0: see `messageId`). */
  private readonly idBytes: Uint8Array;
  private readonly idLength: Uint8Array;
  private readonly clientId: string[];
  private readonly seq: Float64Array;
  private readonly attempt: Int32Array;
  private readonly queueId: Int32Array;
  private readonly queueOffset: Float64Array;
  private readonly at: Float64Array;
  private readonly settledAt: Float64Array;
  /** outcome | next << 4 | via << 6 | retry << 8 | open << 9 */
  private readonly flags: Uint16Array;

  constructor(
    /** Deliveries remembered; 0 turns the history off. */
    readonly capacity: number,
  ) {
    this.origin = new Array<string | undefined>(capacity);
    this.group = new Array<string>(capacity);
    this.topic = new Array<string>(capacity);
    this.messageId = new Array<string | undefined>(capacity);
    this.clientId = new Array<string>(capacity);
    this.idBytes = new Uint8Array(capacity * (MAX_HEX_ID / 2));
    this.idLength = new Uint8Array(capacity);
    this.seq = new Float64Array(capacity);
    this.attempt = new Int32Array(capacity);
    this.queueId = new Int32Array(capacity);
    this.queueOffset = new Float64Array(capacity);
    this.at = new Float64Array(capacity);
    this.settledAt = new Float64Array(capacity);
    this.flags = new Uint16Array(capacity);
  }

  get enabled(): boolean {
    return this.capacity > 0;
  }

  /** Deliveries remembered now. */
  get size(): number {
    return Math.min(this.next, this.capacity);
  }

  /**
   * A message was handed to a push or simple consumer (POP): `slot` is the consumption state's
   * delivery, which keeps the record's sequence number until `settled`.
   */
  delivered(
    originId: string,
    messageId: string,
    group: string,
    topic: string,
    slot: DeliveredSlot,
    at: number,
  ): void {
    if (!this.enabled) return;
    const seq = this.next++;
    const i = seq % this.capacity;
    this.seq[i] = seq;
    this.origin[i] = originId === messageId ? undefined : originId;
    this.group[i] = group;
    this.topic[i] = topic;
    this.keepId(i, messageId);
    this.clientId[i] = slot.clientId;
    this.attempt[i] = slot.attempt;
    this.queueId[i] = slot.queueId;
    this.queueOffset[i] = slot.offset;
    this.at[i] = at;
    this.settledAt[i] = 0;
    this.flags[i] = OPEN | (VIA_POP << 6) | (slot.source === 1 ? RETRY : 0); // outcome IN_FLIGHT
    // The counter, not the value read back from the Float64Array: that read made the field a double
    // in the in-flight deliveries, and V8 replaced their hidden class while the broker warmed up.
    slot.historySeq = seq;
  }

  /** Messages read by a pull consumer, or an operator's action on a message. */
  noted(originId: string, rec: DeliveryRecord): void {
    if (this.enabled) this.add(originId, rec);
  }

  /** POP deliveries ended: how, and what follows. */
  settled(slots: readonly DeliverySlot[], outcome: DeliveryOutcome, at: number, next?: DeliveryNext): void {
    if (!this.enabled) return;
    const o = code(OUTCOMES, outcome);
    const n = next ? code(NEXTS, next) : 0;
    for (const d of slots) {
      const seq = d.historySeq;
      if (seq < 0) continue;
      d.historySeq = -1;
      const i = seq % this.capacity;
      const f = this.flags[i]!;
      if (this.seq[i] !== seq || (f & OPEN) === 0) continue; // overwritten meanwhile
      // Keep via and retry, set the outcome, keep an earlier `next` unless a new one is given; no longer open.
      this.flags[i] = (f & ((0b11 << 6) | RETRY)) | o | ((n || (f >> 4) & 0b11) << 4);
      this.settledAt[i] = at;
    }
  }

  /** Every remembered delivery of a message (by its original id), oldest first, at most `limit`. */
  of(originId: string, limit = 256): DeliveryRecord[] {
    const out: DeliveryRecord[] = [];
    const first = Math.max(0, this.next - this.capacity);
    const want = this.hexBytes(originId);
    for (let s = first; s < this.next; s++) {
      const i = s % this.capacity;
      if (this.originIs(i, originId, want)) out.push(this.record(i));
    }
    return out.slice(-limit);
  }

  /** Deliveries in flight that the history still remembers. */
  get openCount(): number {
    let n = 0;
    for (let i = 0; i < this.size; i++) if (this.flags[i]! & OPEN) n++;
    return n;
  }

  private record(i: number): DeliveryRecord {
    const f = this.flags[i]!;
    const next = NEXTS[(f >> 4) & 0b11];
    const settledAt = this.settledAt[i]!;
    return {
      group: this.group[i]!,
      topic: this.topic[i]!,
      messageId: this.idOf(i),
      attempt: this.attempt[i]!,
      clientId: this.clientId[i]!,
      via: VIAS[(f >> 6) & 0b11]!,
      retry: (f & RETRY) !== 0,
      queueId: this.queueId[i]!,
      queueOffset: this.queueOffset[i]!,
      at: this.at[i]!,
      outcome: OUTCOMES[f & 0b1111]!,
      ...(settledAt ? { settledAt } : {}),
      ...(next ? { next } : {}),
    };
  }

  /** Store a record in the next slot, forgetting the oldest. */
  private add(origin: string, rec: DeliveryRecord): number {
    const i = this.next % this.capacity;
    this.seq[i] = this.next++;
    this.origin[i] = origin === rec.messageId ? undefined : origin;
    this.group[i] = rec.group;
    this.topic[i] = rec.topic;
    this.keepId(i, rec.messageId);
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
      (rec.retry ? RETRY : 0);
    return i;
  }

  /** Keep slot `i`'s message id: as bytes when it is upper-case hex of a kept length, else the string. */
  private keepId(i: number, id: string): void {
    const n = this.hexInto(id, this.idBytes, i * (MAX_HEX_ID / 2));
    this.idLength[i] = n;
    this.messageId[i] = n === 0 ? id : undefined;
  }

  /** Write `id` as bytes at `to[at]` if it is upper-case hex of an even length up to MAX_HEX_ID: its length, else 0. */
  private hexInto(id: string, to: Uint8Array, at: number): number {
    const n = id.length;
    if (n === 0 || n > MAX_HEX_ID || (n & 1) === 1) return 0;
    for (let k = 0; k < n; k += 2) {
      const c1 = id.charCodeAt(k);
      const c2 = id.charCodeAt(k + 1);
      const hi = c1 < 128 ? HEX_VALUE[c1]! : -1;
      const lo = c2 < 128 ? HEX_VALUE[c2]! : -1;
      if (hi < 0 || lo < 0) return 0;
      to[at++] = (hi << 4) | lo;
    }
    return n;
  }

  private hexBytes(id: string): Uint8Array | null {
    const bytes = new Uint8Array(MAX_HEX_ID / 2);
    return this.hexInto(id, bytes, 0) > 0 ? bytes : null;
  }

  /** Whether slot `i` is a delivery of the message whose original id is `id` (`want`: its bytes, if hex). */
  private originIs(i: number, id: string, want: Uint8Array | null): boolean {
    const origin = this.origin[i];
    if (origin !== undefined) return origin === id;
    const n = this.idLength[i]!;
    if (n === 0) return this.messageId[i] === id;
    if (!want || n !== id.length) return false;
    const bytes = this.idBytes;
    const at = i * (MAX_HEX_ID / 2);
    for (let k = 0; k < n / 2; k++) if (bytes[at + k] !== want[k]) return false;
    return true;
  }

  private idOf(i: number): string {
    const n = this.idLength[i]!;
    if (n === 0) return this.messageId[i]!;
    const at = i * (MAX_HEX_ID / 2);
    return Buffer.from(this.idBytes.buffer, this.idBytes.byteOffset + at, n / 2)
      .toString('hex')
      .toUpperCase();
  }
}
