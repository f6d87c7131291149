/**
 * POP: hand out up to a batch of messages of one (consumer group, topic) to one receive. In order:
 *
 *   1. FIFO deliveries due again (they go before anything else of their message group);
 *   2. non-FIFO retries that are due, from the group's retry topic;
 *   3. new messages, from every queue of the topic, starting at a rotating queue. For an orderly
 *      group a message whose key (message group in its queue) is blocked is held back in its queue's
 *      window (fifo.ts) and handed out, in storage order, once the key is free.
 *
 * Every hand-out arms a deadline (its invisible time) and is journalled with the read positions it
 * moved, in one record. Runs serialized for the (group, topic); returns the deliveries and the
 * promise of that record being durable (the caller answers the client once it is).
 *
 * A group that is not orderly reads new messages as soon as they are appended, before their records
 * are durable (`ReadOptions.appended`): the promise then also waits for them, so the message's write
 * and the hand-out's share one flush turn instead of following each other. If a failed write takes
 * them back, `takeBack` (consume-service.ts) undoes their hand-outs and read positions, and a pop
 * that read across it keeps only what the store still holds. Orderly groups, retries and held FIFO
 * messages are read once durable.
 */
import type { StoredMessage } from '../../store/index.js';
import type { GroupConfig, TopicConfig } from '../metadata.js';
import { newNonce } from '../receipt-handle.js';
import { journalSettled, settle } from './commit.js';
import type { ConsumeContext } from './context.js';
import type { ConsumeObserver } from '../consume-observer.js';
import { presentDelivered, readDelivered } from './delivered.js';
import {
  DeliveryState,
  Source,
  deliveryKey,
  freshDelivery,
  type Delivery,
  type GroupTopicState,
} from './delivery.js';
import { fifoKey, readHeld, type FifoQueue } from './fifo.js';
import { RETRY_QUEUES, retryTopicOf } from './retry-records.js';
import type { FifoLow, QueueNext } from '../state-records.js';
import type { TagFilter } from '../filter.js';

export interface PopRequest {
  filter: TagFilter;
  batch: number;
  invisibleMs: number;
  /** The server renews the invisible time while the client lives (push consumers). */
  autoRenew: boolean;
  clientId: string;
}

export interface Delivered {
  /** The message as the client sees it (topic, id and properties of this delivery). */
  message: StoredMessage;
  receiptHandle: string;
  /** 1 on the first delivery. */
  deliveryAttempt: number;
  invisibleMs: number;
}

export interface PopResult {
  delivered: Delivered[];
  /** Resolves once the hand-outs are durable. */
  durable: Promise<void>;
  /**
   * Something may be left for another receive of the group: the batch filled, the group is orderly
   * (held messages), or a queue still has messages past its read position. False only when this pop
   * read everything there was.
   */
  more: boolean;
  /**
   * Tell the observer about the hand-outs (see `observerOf`): the caller calls it once `durable`
   * has settled either way, before anything else runs (so a delivery is counted before its client
   * can ack it).
   */
  observe: () => void;
}

/** One pop in progress: what it handed out and which read positions it moved. */
class Batch {
  readonly delivered: Delivered[] = [];
  readonly changed: Delivery[] = [];
  readonly moved: QueueNext[] = [];
  readonly lows: FifoLow[] = [];
  /** FIFO keys handed out in this batch (one message per key per batch). */
  readonly taken = new Set<string>();
  /** The log position of the last message read with `appended` and handed out (-1: none). */
  appendedUpTo = -1;
  /** The store's rollback count when the pop began. */
  readonly rollbacks: number;

  constructor(
    private readonly ctx: ConsumeContext,
    readonly s: GroupTopicState,
    readonly req: PopRequest,
    readonly now: number,
  ) {
    this.rollbacks = ctx.store.rollbacks;
  }

  /** A rollback came while this pop read: what it read past the durable end may be gone. */
  get rolledBack(): boolean {
    return this.ctx.store.rollbacks !== this.rollbacks;
  }

  /**
   * After a rollback: keep only the hand-outs `takeBack` left in place (every one of them durable),
   * and journal the read positions as they now stand.
   */
  keepSurvivors(): void {
    const { s } = this;
    let n = 0;
    for (let i = 0; i < this.changed.length; i++) {
      const d = this.changed[i]!;
      if (s.deliveries.get(deliveryKey(d.source, d.queueId, d.offset)) !== d) continue;
      this.changed[n] = d;
      this.delivered[n++] = this.delivered[i]!;
    }
    this.changed.length = this.delivered.length = n;
    for (const m of this.moved) m.next = s.nextOffsets(m.source).get(m.queueId) ?? m.next;
    this.appendedUpTo = -1;
  }

  get full(): boolean {
    return this.delivered.length >= this.req.batch;
  }

  get room(): number {
    return this.req.batch - this.delivered.length;
  }

  deliver(m: StoredMessage, d: Delivery): void {
    const { s, req } = this;
    d.nonce = newNonce();
    d.deadline = this.now + req.invisibleMs;
    d.autoRenew = req.autoRenew;
    d.clientId = req.clientId;
    d.state = DeliveryState.INFLIGHT;
    const key = deliveryKey(d.source, d.queueId, d.offset);
    s.deliveries.set(key, d);
    if (d.fifoKey) {
      s.blocked.set(d.fifoKey, key);
      this.taken.add(d.fifoKey);
    }
    this.changed.push(d);
    const message = presentDelivered(s, m, d);
    this.delivered.push({
      message,
      receiptHandle: '', // issued for the whole batch at its end (handOut)
      deliveryAttempt: d.attempt,
      invisibleMs: req.invisibleMs,
    });
    this.ctx.armUnlessRenewed(s, key, d, this.now);
  }

  advance(source: Source, queueId: number, next: number): void {
    const positions = this.s.nextOffsets(source);
    if (positions.get(queueId) !== next) {
      positions.set(queueId, next);
      this.moved.push({ source, queueId, next });
    }
  }
}

const nothing = (): void => {};

/**
 * What tells the observer (counters, delivery history) about a pop's hand-outs, once its writes are
 * done: not while it reads, for a failed write can still take a message read before it was durable
 * back, and a hand-out undone so (`takeBack`) must not count, nor stand in the history for the
 * message that takes its offset next. It tells only of hand-outs still in flight as handed out: one
 * settled while the writes took their time (its deadline passed, or its client left) has had its
 * settlement told already, and counted after it, it would stay open in the history.
 */
function observerOf(b: Batch, observer: ConsumeObserver | undefined): () => void {
  if (!observer || b.changed.length === 0) return nothing;
  const { s, changed, delivered } = b;
  const nonces = changed.map((d) => d.nonce);
  return () => {
    const slots: Delivery[] = [];
    const messages: StoredMessage[] = [];
    for (let i = 0; i < changed.length; i++) {
      const d = changed[i]!;
      if (d.nonce !== nonces[i] || d.state !== DeliveryState.INFLIGHT) continue;
      if (s.deliveries.get(deliveryKey(d.source, d.queueId, d.offset)) !== d) continue;
      slots.push(d);
      messages.push(delivered[i]!.message);
    }
    if (slots.length > 0) observer.delivered(s.group, s.topic, slots, messages, b.now);
  };
}

export class Pop {
  constructor(
    private readonly ctx: ConsumeContext,
    /** Receipt handles of deliveries of one (group, topic), in order. */
    private readonly receiptHandles: (s: GroupTopicState, ds: readonly Delivery[]) => string[],
  ) {}

  async pop(s: GroupTopicState, topic: TopicConfig, g: GroupConfig, req: PopRequest): Promise<PopResult> {
    // Forgotten while this receive waited its turn (its topic or group was deleted).
    if (!this.ctx.states.isLive(s))
      return { delivered: [], durable: Promise.resolve(), more: false, observe: nothing };
    const b = new Batch(this.ctx, s, req, this.ctx.now());
    // Each step is an async call only when it has something to read: a receive of a quiet topic (a
    // long poll's first look, or one woken for a message another receive took) reads nothing.
    if (s.ready.length > 0) await this.dueFifoRedeliveries(b);
    if (!g.consumeMessageOrderly) {
      const rt = retryTopicOf(s.group, s.topic);
      if (this.retriesMayBeDue(b, rt)) await this.dueRetries(b, rt);
    }
    await this.newMessages(b, topic, g.consumeMessageOrderly);
    if (b.rolledBack) b.keepSurvivors();
    // Every hand-out is in `changed`, in the order of `delivered`: one keyed computation for all.
    const handles = this.receiptHandles(s, b.changed);
    for (let i = 0; i < b.delivered.length; i++) b.delivered[i]!.receiptHandle = handles[i]!;
    let durable =
      b.changed.length > 0 || b.moved.length > 0
        ? this.ctx.journal.append({
            kind: 'deliveries',
            group: s.group,
            topic: s.topic,
            nextOffsets: b.moved,
            deliveries: b.changed,
            fifoLows: b.lows,
          })
        : Promise.resolve();
    if (b.appendedUpTo >= 0 && !this.ctx.store.isDurable(b.appendedUpTo)) {
      const messages = this.ctx.store.whenDurable(b.appendedUpTo, b.rollbacks);
      durable = Promise.all([durable, messages]).then(nothing);
    }
    const more = b.full || g.consumeMessageOrderly || this.unread(s, topic);
    return { delivered: b.delivered, durable, more, observe: observerOf(b, this.ctx.observer) };
  }

  /** A queue of the topic holds messages past the group's read position. */
  private unread(s: GroupTopicState, topic: TopicConfig): boolean {
    for (let q = 0; q < topic.readQueueNums; q++) {
      const at = s.topicNext.get(q) ?? this.firstOffset(s, q);
      if (at < this.ctx.store.appendedOffset(s.topic, q)) return true;
    }
    return false;
  }

  /** 1. FIFO messages due again, first. */
  private async dueFifoRedeliveries(b: Batch): Promise<void> {
    const { s } = b;
    while (!b.full && s.ready.length > 0) {
      const key = s.ready.shift()!;
      const d = s.deliveries.get(key);
      if (!d || d.state !== DeliveryState.READY) continue;
      const m = await readDelivered(this.ctx.store, s, d);
      if (s.deliveries.get(key) !== d || d.state !== DeliveryState.READY) continue;
      if (!m) {
        await journalSettled(this.ctx, s, [settle(this.ctx, s, key)]); // removed by retention
        continue;
      }
      d.attempt++;
      b.deliver(m, d);
    }
  }

  /** Whether retry queue `q` of `rt` holds retries past the group's position that may be due now. */
  private retryQueueDue(s: GroupTopicState, rt: string, q: number, now: number): boolean {
    return this.ctx.store.maxOffset(rt, q) > (s.retryNext.get(q) ?? 0) && (s.retryDueHint.get(q) ?? 0) <= now;
  }

  /** Whether any retry queue may have retries due (`dueRetries` would read something). */
  private retriesMayBeDue(b: Batch, rt: string): boolean {
    for (let q = 0; q < RETRY_QUEUES; q++) if (this.retryQueueDue(b.s, rt, q, b.now)) return true;
    return false;
  }

  /** 2. Retries that are due (non-FIFO groups), from the group's retry topic `rt` for this topic. */
  private async dueRetries(b: Batch, rt: string): Promise<void> {
    const { s, req, now } = b;
    const store = this.ctx.store;
    for (let q = 0; q < RETRY_QUEUES && !b.full; q++) {
      if (!this.retryQueueDue(s, rt, q, now)) continue;
      const at = s.retryNext.get(q) ?? 0;
      const r = await store.read(rt, q, at, { maxCount: b.room });
      let next = r.status === 'FOUND' ? at : r.nextOffset;
      for (const m of r.messages) {
        if (m.deliveryTimestamp > now) {
          // Due times only grow within a retry queue: one wake-up for its head, no timer per retry.
          s.retryDueHint.set(q, m.deliveryTimestamp);
          this.ctx.heap.push(m.deliveryTimestamp, { wake: s.topic });
          break;
        }
        next = m.queueOffset + 1;
        if (!req.filter.matches(m.tag)) continue;
        b.deliver(m, freshDelivery(Source.RETRY, q, m.queueOffset, m.reconsumeTimes + 1, ''));
      }
      b.advance(Source.RETRY, q, next);
    }
  }

  /** 3. New messages, from every queue of the topic, starting at a rotating queue. */
  private async newMessages(b: Batch, topic: TopicConfig, orderly: boolean): Promise<void> {
    const { s } = b;
    const queues = topic.readQueueNums;
    const start = s.rr++ % queues;
    for (let i = 0; i < queues && !b.full; i++) {
      const q = (start + i) % queues;
      const first = this.firstOffset(s, q);
      const fq = orderly ? s.fifoQueue(q, s.topicNext.get(q) ?? first) : undefined;
      if (fq?.forgetBelow(first)) b.lows.push({ queueId: q, low: fq.low }); // retention removed the head
      if (fq) await this.heldMessages(b, q, fq);
      // Nothing new in the queue since the last read: no store read, and no async call either (a
      // receive looks at every queue).
      if (!fq && this.readUpTo(s, q)) continue;
      await this.readQueue(b, q, fq);
    }
  }

  /** The group (not orderly) has read queue `q` of its topic up to its newest message (and knows it). */
  private readUpTo(s: GroupTopicState, q: number): boolean {
    const known = s.topicNext.get(q);
    return known !== undefined && this.ctx.store.appendedOffset(s.topic, q) === known;
  }

  private firstOffset(s: GroupTopicState, q: number): number {
    return this.ctx.store.minOffset(s.topic, q);
  }

  /**
   * Held messages whose key is free go first, in storage order (the first held one of each key): take
   * them, then read them with as few store reads as their spread allows.
   */
  private async heldMessages(b: Batch, q: number, fq: FifoQueue): Promise<void> {
    const { s } = b;
    const chosen = fq.release(b.room, (key) => !s.blocked.has(key) && !b.taken.has(key));
    if (chosen.length === 0) return;
    for (const [e, m] of await readHeld(this.ctx.store, s.topic, q, chosen)) {
      if (!m) {
        // Removed by retention meanwhile: nothing to deliver, nothing to wait for.
        fq.settle(e.offset, s.topicNext.get(q) ?? e.offset + 1, (o) =>
          s.deliveries.has(deliveryKey(Source.TOPIC, q, o)),
        );
        continue;
      }
      b.deliver(m, freshDelivery(Source.TOPIC, q, e.offset, 1, e.key));
    }
  }

  /** Read a queue from its read position: deliver, or (FIFO) hold back behind a blocked key. */
  private async readQueue(b: Batch, q: number, fq: FifoQueue | undefined): Promise<void> {
    const { s, req } = b;
    const store = this.ctx.store;
    const known = s.topicNext.get(q);
    let at = known ?? this.firstOffset(s, q);
    if (fq && !fq.canRead(at)) return;
    const want = fq ? Math.max(b.room, 64) : b.room;
    // Orderly groups read durable messages only; the others read appended ones too (see the header).
    const opts = { maxCount: want, tagHashes: req.filter.hashes, appended: !fq };
    let r = await store.read(s.topic, q, at, opts);
    if (r.status === 'OFFSET_OVERFLOW' && fq && at <= store.appendedOffset(s.topic, q)) {
      return; // read past the durable end before the group became orderly: wait for it
    }
    if (r.status === 'OFFSET_TOO_SMALL' || r.status === 'OFFSET_OVERFLOW') {
      at = r.nextOffset;
      r = await store.read(s.topic, q, at, opts);
    }
    // A rollback while it read: what it read may be gone, and the read position has been put back.
    if (b.rolledBack) return;
    let next = r.nextOffset;
    for (const m of r.messages) {
      if (!req.filter.matches(m.tag)) {
        fq?.settled.add(m.queueOffset);
        continue;
      }
      if (fq) {
        const key = fifoKey(q, m.messageGroup);
        // Behind an earlier message of its group: in flight, waiting for retry, handed out in this
        // batch, or held.
        if (s.blocked.has(key) || b.taken.has(key) || fq.holds(key) || b.full) {
          if (!fq.canRead(m.queueOffset)) {
            next = m.queueOffset;
            break;
          }
          fq.hold({ offset: m.queueOffset, key });
          continue;
        }
        b.deliver(m, freshDelivery(Source.TOPIC, q, m.queueOffset, 1, key));
      } else {
        b.deliver(m, freshDelivery(Source.TOPIC, q, m.queueOffset, 1, ''));
        if (m.logPosition > b.appendedUpTo) b.appendedUpTo = m.logPosition;
      }
    }
    if (r.status !== 'FOUND' && r.status !== 'NO_NEW_MESSAGE') next = r.nextOffset;
    b.advance(Source.TOPIC, q, next);
    if (fq) {
      // Offsets the store's tag pre-filter skipped are settled too (only then is there a gap).
      if (r.messages.length < next - at) {
        const held = new Set(fq.held.map((h) => h.offset));
        for (let o = at; o < next; o++) {
          if (!s.deliveries.has(deliveryKey(Source.TOPIC, q, o)) && !held.has(o)) fq.settled.add(o);
        }
      }
      fq.advance(next, (o) => s.deliveries.has(deliveryKey(Source.TOPIC, q, o)));
      b.lows.push({ queueId: q, low: fq.low });
    }
  }
}
