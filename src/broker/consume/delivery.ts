/**
 * Delivery state (RocketMQ's POP state) of one consumer group on one topic: the next offset to read
 * on each queue of the topic and of the group's retry topic, and every delivery not yet settled.
 *
 * A delivery is one message handed out to the group: Inflight until acked, failed or expired; FIFO
 * deliveries that failed wait in place (WaitingRetry, then Ready) so that nothing later of their
 * message group overtakes them. Non-FIFO failures leave this state: they become retry messages
 * (revive.ts).
 */
import type { DeliveryOutcome } from '../delivery-history.js';
import { FifoQueue } from './fifo.js';
import { KeptKeyMap } from '../../common/kept-key-map.js';
import { NumberMap } from '../../common/number-map.js';

/** Where a delivery's message is stored: the topic's queue, or the group's retry topic. */
export const Source = { TOPIC: 0, RETRY: 1 } as const;
export type Source = (typeof Source)[keyof typeof Source];

export const DeliveryState = {
  INFLIGHT: 0,
  /** FIFO only: failed, waiting for its fixed retry interval (deadline = when it is due). */
  WAITING_RETRY: 1,
  /** FIFO only: due again, to be delivered before anything else. */
  READY: 2,
} as const;
export type DeliveryState = (typeof DeliveryState)[keyof typeof DeliveryState];

export interface Delivery {
  source: Source;
  queueId: number;
  offset: number;
  /** Changes with every hand-out and invisible-time change: older receipt handles stop working. */
  nonce: number;
  /** Attempt number of the latest delivery (1 on the first). */
  attempt: number;
  deadline: number;
  /** Push consumers: the server picked the invisible time and renews it while the client lives. */
  autoRenew: boolean;
  clientId: string;
  state: DeliveryState;
  /** FIFO groups: the key (queue and message group) this delivery blocks; '' otherwise. */
  fifoKey: string;
  /** The delivery history's record of the latest hand-out while it is open; -1: none (not journalled). */
  historySeq: number;
  /**
   * An item of the deadline heap stands for this delivery's nonce and deadline (`ConsumeContext.arm`).
   * False for an auto-renewed delivery left to the renewal scan (`armUnlessRenewed`). Not journalled.
   */
  armed: boolean;
}

/** A delivery about to be handed out (the hand-out arms its nonce, deadline and owner). */
export function freshDelivery(
  source: Source,
  queueId: number,
  offset: number,
  attempt: number,
  fifoKey: string,
): Delivery {
  return {
    source,
    queueId,
    offset,
    nonce: 0,
    attempt,
    deadline: 0,
    autoRenew: false,
    clientId: '',
    state: DeliveryState.INFLIGHT,
    fifoKey,
    historySeq: -1,
    armed: false,
  };
}

/**
 * A delivery's key in `GroupTopicState.deliveries`: a number while the queue id and the offset fit one
 * exactly (offsets below 2^42, queue ids below 1,024: always, in practice), else a string. A key is a
 * function of its three parts, so a number and a string never stand for the same delivery. A number is
 * cheaper to make and to hash than a string, and every delivery's key is made and looked up several
 * times between its hand-out and its ack.
 */
export type DeliveryKey = number | string;

const NUMERIC_KEY_OFFSETS = 2 ** 42;
const NUMERIC_KEY_QUEUES = 1024;

export const deliveryKey = (source: Source, queueId: number, offset: number): DeliveryKey =>
  offset < NUMERIC_KEY_OFFSETS && queueId < NUMERIC_KEY_QUEUES
    ? offset * (2 * NUMERIC_KEY_QUEUES) + queueId * 2 + source
    : `${source}:${queueId}:${offset}`;

/** The key of a (consumer group, topic) in maps and in the keyed executor. */
export const stateKey = (group: string, topic: string): string => `${group}\u0000${topic}`;

/** Broadcast consumers keep their own state under `group%BROADCAST%<name>`; policies come from the group. */
export const BROADCAST_SEPARATOR = '%BROADCAST%';
export const baseGroupOf = (group: string): string => group.split(BROADCAST_SEPARATOR)[0]!;

/** A failed delivery to turn into a retry, a FIFO wait or a dead letter (revive.ts). */
export interface Failure {
  key: DeliveryKey;
  delivery: Delivery;
  /** The client's wish (push nack), in ms. */
  requestedMs: number;
  /** A non-FIFO retry due at once (simple consumers, departed push consumers). */
  immediate: boolean;
  /** Why the delivery failed (for the delivery history). */
  why: DeliveryOutcome;
}

/**
 * The deliveries in flight of a (group, topic), by key. Not a Map: one is handed out and settled per
 * message, and a Map's replaced tables would keep every delivery (and, through the chain of tables,
 * every later one) alive until a full collection (number-map.ts). Numeric keys go in a `NumberMap`,
 * the rare string keys in a `KeptKeyMap`. Iterating gives a copy: callers may settle as they go.
 */
export class DeliveryTable {
  private readonly byNumber = new NumberMap<Delivery>();
  /** String keys, and any number a NumberMap does not take. */
  private readonly other = new KeptKeyMap<DeliveryKey, Delivery>();

  get size(): number {
    return this.byNumber.size + this.other.size;
  }

  get(key: DeliveryKey): Delivery | undefined {
    return numeric(key) ? this.byNumber.get(key) : this.other.get(key);
  }

  has(key: DeliveryKey): boolean {
    return numeric(key) ? this.byNumber.has(key) : this.other.has(key);
  }

  set(key: DeliveryKey, d: Delivery): this {
    if (numeric(key)) this.byNumber.set(key, d);
    else this.other.set(key, d);
    return this;
  }

  delete(key: DeliveryKey): boolean {
    return numeric(key) ? this.byNumber.delete(key) : this.other.delete(key);
  }

  values(): Delivery[] {
    const out = this.byNumber.values();
    if (this.other.size > 0) out.push(...this.other.values());
    return out;
  }

  [Symbol.iterator](): IterableIterator<[DeliveryKey, Delivery]> {
    const out: [DeliveryKey, Delivery][] = this.byNumber.entries();
    if (this.other.size > 0) out.push(...this.other.entries());
    return out[Symbol.iterator]();
  }
}

const numeric = (key: DeliveryKey): key is number => typeof key === 'number' && NumberMap.accepts(key);

export class GroupTopicState {
  readonly key: string;
  /** Next offset to read per queue of the topic. */
  readonly topicNext = new Map<number, number>();
  /** Next offset to read per queue of the group's retry topic for this topic. */
  readonly retryNext = new Map<number, number>();
  readonly deliveries = new DeliveryTable();
  /** FIFO redeliveries that are due, oldest first (may hold stale keys). */
  ready: DeliveryKey[] = [];
  /** FIFO: key → the delivery blocking it. */
  readonly blocked = new Map<string, DeliveryKey>();
  readonly fifo = new Map<number, FifoQueue>();
  /** Retry queues whose head is not due before this time. */
  readonly retryDueHint = new Map<number, number>();
  /** Deliveries whose invisible time ran out, waiting to be failed in one batch. */
  expiring: Failure[] = [];
  /** Where the next receive starts its round over the topic's queues. */
  rr = 0;

  constructor(
    readonly group: string,
    readonly topic: string,
  ) {
    this.key = stateKey(group, topic);
  }

  nextOffsets(source: Source): Map<number, number> {
    return source === Source.TOPIC ? this.topicNext : this.retryNext;
  }

  fifoQueue(queueId: number, low: number): FifoQueue {
    let f = this.fifo.get(queueId);
    if (!f) this.fifo.set(queueId, (f = new FifoQueue(low)));
    return f;
  }
}

/** Every (consumer group, topic) with delivery state. */
export class ConsumeStates {
  private readonly byKey = new Map<string, GroupTopicState>();

  get(group: string, topic: string): GroupTopicState | undefined {
    return this.byKey.get(stateKey(group, topic));
  }

  /** Whether `s` is still the live state of its (group, topic) (not forgotten meanwhile). */
  isLive(s: GroupTopicState): boolean {
    return this.byKey.get(s.key) === s;
  }

  getOrCreate(group: string, topic: string): GroupTopicState {
    const k = stateKey(group, topic);
    let s = this.byKey.get(k);
    if (!s) this.byKey.set(k, (s = new GroupTopicState(group, topic)));
    return s;
  }

  delete(group: string, topic: string): void {
    this.byKey.delete(stateKey(group, topic));
  }

  clear(): void {
    this.byKey.clear();
  }

  values(): IterableIterator<GroupTopicState> {
    return this.byKey.values();
  }

  get size(): number {
    return this.byKey.size;
  }
}
