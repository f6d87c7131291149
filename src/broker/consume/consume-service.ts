/**
 * Message-granularity consumption (RocketMQ's POP), for push and simple consumers.
 *
 * Per (consumer group, topic) the broker keeps the next offset to hand out on each queue and the
 * deliveries in flight. A receive takes waiting redeliveries first, then new messages from every
 * queue of the topic (whatever queue the client named), advancing the offsets at once; each message
 * handed out is invisible to the whole group until it is acked or its invisible time ends. Then it
 * is Ready again and the next delivery counts one more attempt. Acks and invisible-time changes are
 * judged against the live delivery, so stale, superseded or foreign receipt handles are refused.
 *
 * Every change is journalled (state-journal.ts) before the client hears of it, so in-flight state
 * survives a restart. Expiry uses one deadline heap (no per-message timers) and fires within a few
 * milliseconds of the deadline.
 */
import { VelaError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { MessageStore, StoredMessage } from '../../store/index.js';
import { SerialExecutor } from '../../store/serial-executor.js';
import { Perm, type GroupConfig, type TopicConfig } from '../metadata.js';
import type { TopicRegistry } from '../topic-registry.js';
import type { GroupRegistry } from '../group-registry.js';
import type { SessionRegistry } from '../sessions.js';
import type { StateJournal, StateParticipant, StateRecord } from '../state-journal.js';
import type { TagFilter } from '../filter.js';
import { newNonce, type ReceiptHandles } from '../receipt-handle.js';
import { DeadlineHeap } from './deadline-heap.js';
import { LongPollWaiters } from './long-poll.js';

export interface ConsumeOptions {
  /** Smallest invisible duration a receive may ask for. @defaultValue 10000 */
  minInvisibleMs: number;
  /** @defaultValue 43200000 (12 h) */
  maxInvisibleMs: number;
  /** Invisible time the server picks for auto-renewed (push) receives. @defaultValue 60000 */
  autoRenewInvisibleMs: number;
  /** Auto-renewed deliveries closer than this to their deadline are extended. @defaultValue 20000 */
  renewAheadMs: number;
  /** @defaultValue 5000 */
  renewIntervalMs: number;
  /** Longest long poll. @defaultValue 20000 */
  maxPollMs: number;
  /** Most messages per receive. @defaultValue 32 */
  maxBatch: number;
  autoCreateGroups: boolean;
}

export const DEFAULT_CONSUME_OPTIONS: ConsumeOptions = Object.freeze({
  minInvisibleMs: 10_000,
  maxInvisibleMs: 12 * 3600_000,
  autoRenewInvisibleMs: 60_000,
  renewAheadMs: 20_000,
  renewIntervalMs: 5_000,
  maxPollMs: 20_000,
  maxBatch: 32,
  autoCreateGroups: false,
});

export interface ReceiveRequest {
  group: string;
  topic: string;
  filter: TagFilter;
  /** 0 or absent: the server's maximum. Above it: lowered to it. */
  batchSize?: number;
  /** Absent with `autoRenew`: the server picks and renews while the client lives. */
  invisibleMs?: number;
  autoRenew: boolean;
  clientId: string;
  /** How long to wait for messages when there are none. */
  pollMs: number;
  signal?: AbortSignal;
}

export interface Delivered {
  message: StoredMessage;
  receiptHandle: string;
  /** 1 on the first delivery. */
  deliveryAttempt: number;
  invisibleMs: number;
}

interface Delivery {
  queueId: number;
  offset: number;
  nonce: number;
  /** Attempt number of the latest delivery. */
  attempt: number;
  deadline: number;
  autoRenew: boolean;
  clientId: string;
  /** Its invisible time ran out: waiting to be delivered again. */
  ready: boolean;
}

class GroupTopicState {
  /** Next offset to hand out, per queue (absent: start at the queue's first stored message). */
  readonly offsets = new Map<number, number>();
  readonly deliveries = new Map<string, Delivery>();
  /** Keys of deliveries that became ready, oldest first (may hold stale keys). */
  ready: string[] = [];
  readonly lock = new SerialExecutor();
  rr = 0;
  constructor(
    readonly group: string,
    readonly topic: string,
  ) {}
}

const dkey = (q: number, o: number) => `${q}:${o}`;
const skey = (g: string, t: string) => `${g}\u0000${t}`;
type PopItem = [
  q: number,
  o: number,
  nonce: number,
  attempt: number,
  deadline: number,
  auto: 0 | 1,
  client: string,
];

export class ConsumeService implements StateParticipant {
  readonly stateKey = 'consume';
  journal!: StateJournal;
  private readonly states = new Map<string, GroupTopicState>();
  private readonly heap: DeadlineHeap<{ s: GroupTopicState; key: string; nonce: number }>;
  private readonly waiters = new LongPollWaiters();
  private renewTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: MessageStore,
    private readonly topics: TopicRegistry,
    private readonly groups: GroupRegistry,
    private readonly sessions: SessionRegistry,
    private readonly handles: ReceiptHandles,
    private readonly o: ConsumeOptions,
    private readonly now: () => number,
    private readonly logger: Logger,
  ) {
    this.heap = new DeadlineHeap(now, ({ s, key, nonce }, at) => this.expire(s, key, nonce, at));
    store.onArrival((topic) => this.waiters.wake(topic));
    sessions.onGone((clientId) => void this.releaseClient(clientId));
  }

  /** Arm timers for the state replayed from the journal; start auto-renewal. */
  start(): void {
    const now = this.now();
    for (const s of this.states.values()) {
      for (const [key, d] of s.deliveries) {
        if (d.ready) continue;
        if (d.deadline <= now) this.markReady(s, key, d);
        else this.heap.push(d.deadline, { s, key, nonce: d.nonce });
      }
    }
    this.renewTimer = setInterval(
      () => void this.renew().catch((err) => this.logger.error({ err }, 'renew failed')),
      this.o.renewIntervalMs,
    );
    this.renewTimer.unref();
  }

  /** Stop timers and answer every parked long poll now (empty). */
  stop(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.heap.close();
    this.waiters.wakeAll();
  }

  /** Resolve a group for consumption: it must exist (or be auto-created) and be enabled. */
  async requireGroup(name: string): Promise<GroupConfig> {
    let g = this.groups.get(name);
    if (!g && this.o.autoCreateGroups) g = await this.groups.upsert(name, {});
    if (!g) throw new VelaError('CONSUMER_GROUP_NOT_FOUND', name);
    if (!g.consumeEnable) throw new VelaError('FORBIDDEN', `consumer group ${name} has consumption disabled`);
    return g;
  }

  requireReadableTopic(name: string): TopicConfig {
    const t = this.topics.require(name);
    if ((t.perm & Perm.READ) === 0) throw new VelaError('FORBIDDEN', `topic ${name} is not readable`);
    return t;
  }

  /** Check an invisible duration a simple consumer asked for. */
  checkInvisible(ms: number, forReceive: boolean): void {
    const min = forReceive ? this.o.minInvisibleMs : 0;
    if (!Number.isFinite(ms) || ms < min || ms > this.o.maxInvisibleMs) {
      throw new VelaError(
        'ILLEGAL_INVISIBLE_TIME',
        `${ms} ms is outside [${min}, ${this.o.maxInvisibleMs}] ms`,
      );
    }
  }

  /** Receive messages, long-polling up to `pollMs` when none are ready. */
  async receive(req: ReceiveRequest): Promise<Delivered[]> {
    await this.requireGroup(req.group);
    const topic = this.requireReadableTopic(req.topic);
    const invisibleMs = req.invisibleMs ?? (req.autoRenew ? this.o.autoRenewInvisibleMs : undefined);
    if (invisibleMs === undefined)
      throw new VelaError('ILLEGAL_INVISIBLE_TIME', 'an invisible duration is required');
    if (req.invisibleMs !== undefined) this.checkInvisible(req.invisibleMs, true);
    const batch = Math.min(
      this.o.maxBatch,
      req.batchSize && req.batchSize > 0 ? req.batchSize : this.o.maxBatch,
    );
    const pollUntil = this.now() + Math.max(0, Math.min(req.pollMs, this.o.maxPollMs));
    const s = this.stateFor(req.group, req.topic);
    for (;;) {
      // Register interest before looking, so an arrival during the pop is not missed.
      const wait = this.waiters.park(req.topic, pollUntil - this.now(), req.signal);
      const out = await s.lock.run(() => this.pop(s, topic, req, batch, invisibleMs));
      if (out.length > 0 || this.now() >= pollUntil || req.signal?.aborted) {
        wait.cancel();
        return out;
      }
      await wait.promise;
      if (this.now() >= pollUntil || req.signal?.aborted) return [];
    }
  }

  /** Acknowledge a delivery: the message is consumed for this group. */
  async ack(group: string, topic: string, receiptHandle: string): Promise<void> {
    const [refused] = await this.ackMany(group, topic, [receiptHandle]);
    if (refused) throw refused;
  }

  /**
   * Acknowledge several deliveries with one journal write (one fsync). Returns, per handle, null or
   * the error that refused it.
   */
  async ackMany(
    group: string,
    topic: string,
    receiptHandles: readonly string[],
  ): Promise<(VelaError | null)[]> {
    const results: (VelaError | null)[] = [];
    const acked: [number, number][] = [];
    for (const h of receiptHandles) {
      try {
        const { s, key } = this.liveDelivery(group, topic, h);
        const d = s.deliveries.get(key)!;
        s.deliveries.delete(key);
        acked.push([d.queueId, d.offset]);
        results.push(null);
      } catch (err) {
        if (!(err instanceof VelaError)) throw err;
        results.push(err);
      }
    }
    if (acked.length > 0) await this.journal.append({ k: 'acks', g: group, t: topic, items: acked });
    return results;
  }

  /**
   * Make a delivery invisible for `ms` from now (0: visible again at once). Returns the new receipt
   * handle; the old one is superseded.
   */
  async changeInvisibleDuration(
    group: string,
    topic: string,
    receiptHandle: string,
    ms: number,
  ): Promise<string> {
    this.checkInvisible(ms, false);
    const { s, key } = this.liveDelivery(group, topic, receiptHandle);
    const d = s.deliveries.get(key)!;
    d.nonce = newNonce();
    d.deadline = this.now() + ms;
    d.autoRenew = false;
    this.heap.push(d.deadline, { s, key, nonce: d.nonce });
    await this.journal.append({
      k: 'inv',
      g: group,
      t: topic,
      q: d.queueId,
      o: d.offset,
      n: d.nonce,
      d: d.deadline,
    });
    return this.handles.encode(topic, group, d);
  }

  /** A client left: its auto-renewed (push) deliveries become visible to the group now. */
  async releaseClient(clientId: string): Promise<number> {
    const now = this.now();
    let released = 0;
    for (const s of this.states.values()) {
      const items: [number, number, number][] = [];
      for (const [key, d] of s.deliveries) {
        if (d.ready || !d.autoRenew || d.clientId !== clientId) continue;
        d.deadline = now;
        this.markReady(s, key, d);
        items.push([d.queueId, d.offset, now]);
      }
      if (items.length > 0) {
        released += items.length;
        await this.journal.append({ k: 'renew', g: s.group, t: s.topic, items });
      }
    }
    if (released > 0)
      this.logger.info({ clientId, released }, 'released in-flight messages of a departed client');
    return released;
  }

  /** Per-queue figures for `consumerProgress`. */
  progress(
    group: string,
    topic: string,
  ): {
    queueId: number;
    brokerOffset: number;
    consumerOffset: number;
    inflight: number;
    ready: number;
    lag: number;
    lastStoreTimestamp: number;
  }[] {
    const t = this.topics.require(topic);
    const s = this.states.get(skey(group, topic));
    const out = [];
    for (let q = 0; q < t.readQueueNums; q++) {
      const qs = this.store.queueState(topic, q);
      const consumerOffset = s?.offsets.get(q) ?? qs.minOffset;
      let inflight = 0;
      let ready = 0;
      for (const d of s?.deliveries.values() ?? []) {
        if (d.queueId !== q) continue;
        if (d.ready) ready++;
        else inflight++;
      }
      out.push({
        queueId: q,
        brokerOffset: qs.maxOffset,
        consumerOffset,
        inflight,
        ready,
        lag: Math.max(0, qs.maxOffset - consumerOffset) + inflight + ready,
        lastStoreTimestamp: qs.lastStoreTimestamp,
      });
    }
    return out;
  }

  /** Groups that have consumed from a topic. */
  groupsOf(topic: string): string[] {
    return [...this.states.values()].filter((s) => s.topic === topic).map((s) => s.group);
  }

  /** Topics a group has consumed from. */
  topicsOf(group: string): string[] {
    return [...this.states.values()].filter((s) => s.group === group).map((s) => s.topic);
  }

  /** Forget the consumption state of a group (deleteSubGroup) or a topic (deleteTopic). */
  async forget(filter: { group?: string; topic?: string }): Promise<void> {
    for (const [k, s] of this.states) {
      if (
        (filter.group === undefined || s.group === filter.group) &&
        (filter.topic === undefined || s.topic === filter.topic)
      ) {
        this.states.delete(k);
        await this.journal.append({ k: 'forget', g: s.group, t: s.topic });
      }
    }
  }

  // --- state participant -------------------------------------------------------------------------

  apply(rec: StateRecord): boolean {
    switch (rec.k) {
      case 'pop': {
        const s = this.stateFor(rec.g as string, rec.t as string);
        for (const [q, next] of rec.offs as [number, number][]) s.offsets.set(q, next);
        for (const [q, o, n, a, d, auto, c] of rec.d as PopItem[]) {
          s.deliveries.set(dkey(q, o), {
            queueId: q,
            offset: o,
            nonce: n,
            attempt: a,
            deadline: d,
            autoRenew: auto === 1,
            clientId: c,
            ready: false,
          });
        }
        return true;
      }
      case 'ack': {
        const s = this.states.get(skey(rec.g as string, rec.t as string));
        s?.deliveries.delete(dkey(rec.q as number, rec.o as number));
        return true;
      }
      case 'acks': {
        const s = this.states.get(skey(rec.g as string, rec.t as string));
        for (const [q, o] of rec.items as [number, number][]) s?.deliveries.delete(dkey(q, o));
        return true;
      }
      case 'inv': {
        const d = this.states
          .get(skey(rec.g as string, rec.t as string))
          ?.deliveries.get(dkey(rec.q as number, rec.o as number));
        if (d) {
          d.nonce = rec.n as number;
          d.deadline = rec.d as number;
          d.autoRenew = false;
          d.ready = false;
        }
        return true;
      }
      case 'renew': {
        const s = this.states.get(skey(rec.g as string, rec.t as string));
        for (const [q, o, deadline] of rec.items as [number, number, number][]) {
          const d = s?.deliveries.get(dkey(q, o));
          if (d) d.deadline = deadline;
        }
        return true;
      }
      case 'forget':
        this.states.delete(skey(rec.g as string, rec.t as string));
        return true;
      default:
        return false;
    }
  }

  snapshot(): unknown {
    return [...this.states.values()].map((s) => ({
      g: s.group,
      t: s.topic,
      offs: [...s.offsets],
      d: [...s.deliveries.values()].map((d) => [
        d.queueId,
        d.offset,
        d.nonce,
        d.attempt,
        d.deadline,
        d.autoRenew ? 1 : 0,
        d.clientId,
        d.ready ? 1 : 0,
      ]),
    }));
  }

  restore(data: unknown): void {
    this.states.clear();
    for (const e of data as { g: string; t: string; offs: [number, number][]; d: (string | number)[][] }[]) {
      const s = this.stateFor(e.g, e.t);
      for (const [q, o] of e.offs) s.offsets.set(q, o);
      for (const [q, o, n, a, d, auto, c, ready] of e.d as [
        number,
        number,
        number,
        number,
        number,
        number,
        string,
        number,
      ][]) {
        s.deliveries.set(dkey(q, o), {
          queueId: q,
          offset: o,
          nonce: n,
          attempt: a,
          deadline: d,
          autoRenew: auto === 1,
          clientId: c,
          ready: ready === 1,
        });
        if (ready === 1) s.ready.push(dkey(q, o));
      }
    }
  }

  // --- internals ---------------------------------------------------------------------------------

  private stateFor(group: string, topic: string): GroupTopicState {
    const k = skey(group, topic);
    let s = this.states.get(k);
    if (!s) {
      s = new GroupTopicState(group, topic);
      this.states.set(k, s);
    }
    return s;
  }

  private liveDelivery(
    group: string,
    topic: string,
    receiptHandle: string,
  ): { s: GroupTopicState; key: string } {
    const f = this.handles.decode(receiptHandle, topic, group);
    const s = this.states.get(skey(group, topic));
    const key = dkey(f.queueId, f.offset);
    const d = s?.deliveries.get(key);
    if (!s || !d || d.nonce !== f.nonce) {
      throw new VelaError(
        'INVALID_RECEIPT_HANDLE',
        'the receipt handle was acked, superseded or never issued',
      );
    }
    if (d.ready || d.deadline <= this.now()) {
      throw new VelaError(
        'INVALID_RECEIPT_HANDLE',
        'the receipt handle has expired; the message will be delivered again',
      );
    }
    return { s, key };
  }

  private markReady(s: GroupTopicState, key: string, d: Delivery): void {
    d.ready = true;
    s.ready.push(key);
    this.waiters.wake(s.topic);
  }

  private expire(s: GroupTopicState, key: string, nonce: number, at: number): void {
    const d = s.deliveries.get(key);
    if (!d || d.ready || d.nonce !== nonce || d.deadline !== at) return; // acked or re-armed since
    if (this.states.get(skey(s.group, s.topic)) !== s) return;
    this.markReady(s, key, d);
  }

  private async pop(
    s: GroupTopicState,
    topic: TopicConfig,
    req: ReceiveRequest,
    batch: number,
    invisibleMs: number,
  ): Promise<Delivered[]> {
    const out: Delivered[] = [];
    const items: PopItem[] = [];
    const offs: [number, number][] = [];
    const now = this.now();
    const deliver = (m: StoredMessage, d: Delivery) => {
      items.push([d.queueId, d.offset, d.nonce, d.attempt, d.deadline, d.autoRenew ? 1 : 0, d.clientId]);
      out.push({
        message: m,
        receiptHandle: this.handles.encode(s.topic, s.group, d),
        deliveryAttempt: d.attempt,
        invisibleMs,
      });
      this.heap.push(d.deadline, { s, key: dkey(d.queueId, d.offset), nonce: d.nonce });
    };
    const arm = (d: Delivery) => {
      d.nonce = newNonce();
      d.deadline = now + invisibleMs;
      d.autoRenew = req.autoRenew && req.invisibleMs === undefined;
      d.clientId = req.clientId;
    };

    // 1. Deliveries whose invisible time ran out come back first.
    while (out.length < batch && s.ready.length > 0) {
      const key = s.ready.shift()!;
      const d = s.deliveries.get(key);
      if (!d || !d.ready) continue;
      const r = await this.store.read(s.topic, d.queueId, d.offset, { maxCount: 1 });
      const m = r.messages[0];
      if (s.deliveries.get(key) !== d || !d.ready) continue; // acked meanwhile
      if (!m || m.queueOffset !== d.offset) {
        s.deliveries.delete(key); // removed by retention: nothing left to deliver
        await this.journal.append({ k: 'ack', g: s.group, t: s.topic, q: d.queueId, o: d.offset });
        continue;
      }
      if (!req.filter.matches(m.tag)) {
        s.deliveries.delete(key); // the subscription no longer wants it: consumed, as RocketMQ does
        await this.journal.append({ k: 'ack', g: s.group, t: s.topic, q: d.queueId, o: d.offset });
        continue;
      }
      d.ready = false;
      d.attempt++;
      arm(d);
      deliver(m, d);
    }

    // 2. New messages, from every queue of the topic, starting at a rotating queue.
    const queues = topic.readQueueNums;
    const start = s.rr++ % queues;
    for (let i = 0; i < queues && out.length < batch; i++) {
      const q = (start + i) % queues;
      let offset = s.offsets.get(q) ?? this.store.queueState(s.topic, q).minOffset;
      let r = await this.store.read(s.topic, q, offset, {
        maxCount: batch - out.length,
        tagHashes: req.filter.hashes,
      });
      if (r.status === 'OFFSET_TOO_SMALL' || r.status === 'OFFSET_OVERFLOW') {
        offset = r.nextOffset;
        r = await this.store.read(s.topic, q, offset, {
          maxCount: batch - out.length,
          tagHashes: req.filter.hashes,
        });
      }
      if (r.status === 'FOUND') {
        for (const m of r.messages) {
          if (!req.filter.matches(m.tag)) continue; // a tag-hash collision: not for this subscription
          const d: Delivery = {
            queueId: q,
            offset: m.queueOffset,
            nonce: 0,
            attempt: 1,
            deadline: 0,
            autoRenew: false,
            clientId: '',
            ready: false,
          };
          arm(d);
          s.deliveries.set(dkey(q, m.queueOffset), d);
          deliver(m, d);
        }
      }
      if (s.offsets.get(q) !== r.nextOffset) {
        s.offsets.set(q, r.nextOffset);
        offs.push([q, r.nextOffset]);
      }
    }
    if (items.length > 0 || offs.length > 0) {
      await this.journal.append({ k: 'pop', g: s.group, t: s.topic, offs, d: items });
    }
    return out;
  }

  private async renew(): Promise<void> {
    const now = this.now();
    for (const s of this.states.values()) {
      const items: [number, number, number][] = [];
      for (const [key, d] of s.deliveries) {
        if (d.ready || !d.autoRenew || d.deadline - now > this.o.renewAheadMs) continue;
        if (!this.sessions.isAlive(d.clientId)) continue; // let it expire: the client is gone
        d.deadline = now + this.o.autoRenewInvisibleMs;
        this.heap.push(d.deadline, { s, key, nonce: d.nonce });
        items.push([d.queueId, d.offset, d.deadline]);
      }
      if (items.length > 0) await this.journal.append({ k: 'renew', g: s.group, t: s.topic, items });
    }
  }
}
