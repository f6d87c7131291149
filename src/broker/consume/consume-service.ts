/**
 * Message-granularity consumption (RocketMQ's POP) for push and simple consumers: the delivery state
 * machine Ready → Inflight → Commit, or → WaitingRetry → Ready, or → DLQ.
 *
 * Per (consumer group, topic) the broker keeps the next offset to read on each queue (of the topic
 * and of the group's retry topic) and the deliveries in flight. A receive hands out messages from
 * every queue of the topic, whatever queue the client named; each is invisible to the whole group
 * until acked or until its invisible time ends.
 *
 * Failure (non-FIFO): the message becomes a new message in the group's retry topic, due after the
 * retry interval (push: the group's policy for that attempt, never less, whatever the client asked;
 * simple: at once, the invisible duration having been the wait), or goes to the DLQ once it has had
 * retryMaxTimes + 1 deliveries. Waiting retries thus live on disk (retry-records.ts).
 * Failure (FIFO group): the same message is delivered again after the group's fixed interval, and
 * no later message of its message group goes out meanwhile (fifo.ts).
 *
 * Every change is journalled before the client hears of it, so a restart loses nothing and fires
 * nothing early. Expiries use one deadline heap, not one timer per message.
 */
import { createHash } from 'node:crypto';
import { VelaError } from '../../common/errors.js';
import type { ConsumeSettings } from '../../common/config.js';
import type { Logger } from '../../common/logger.js';
import type { MessageStore, StoredMessage } from '../../store/index.js';
import { SerialExecutor } from '../../store/serial-executor.js';
import { Perm, type GroupConfig, type TopicConfig } from '../metadata.js';
import type { TopicRegistry } from '../topic-registry.js';
import type { GroupRegistry } from '../group-registry.js';
import type { SessionRegistry } from '../sessions.js';
import type { StateJournal, StateParticipant, StateRecord } from '../state-journal.js';
import type { TagFilter } from '../filter.js';
import type { ConsumeObserver } from '../consume-observer.js';
import type { DeliveryOutcome } from '../delivery-history.js';
import { retryDelayMs } from '../retry-policy.js';
import { newNonce, type ReceiptHandles } from '../receipt-handle.js';
import { DeadlineHeap } from './deadline-heap.js';
import { LongPollWaiters } from './long-poll.js';
import { FifoQueue, fifoKey, type HeldMessage } from './fifo.js';
import {
  dlqRecord,
  dlqTopicOf,
  ORIGIN_MESSAGE_ID,
  originIdOf,
  retryRecord,
  retryTopicOf,
  RETRY_QUEUES,
} from './retry-records.js';

/** Consumption settings (defaults and meanings in common/config.ts) and the group auto-creation switch. */
export type ConsumeOptions = ConsumeSettings & { readonly autoCreateGroups: boolean };

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
  /** The message as the client sees it (topic, id and properties of this delivery). */
  message: StoredMessage;
  receiptHandle: string;
  /** 1 on the first delivery. */
  deliveryAttempt: number;
  invisibleMs: number;
}

/** Where a delivery's message is stored: the topic's queue, or the group's retry topic. */
const enum Source {
  TOPIC = 0,
  RETRY = 1,
}

const enum DeliveryState {
  INFLIGHT = 0,
  /** FIFO only: failed, waiting for its fixed retry interval (deadline = when it is due). */
  WAITING_RETRY = 1,
  /** FIFO only: due again, to be delivered before anything else. */
  READY = 2,
}

interface Delivery {
  source: Source;
  queueId: number;
  offset: number;
  nonce: number;
  /** Attempt number of the latest delivery. */
  attempt: number;
  deadline: number;
  autoRenew: boolean;
  clientId: string;
  state: DeliveryState;
  /** FIFO groups: the key this delivery blocks. */
  fifoKey: string;
}

/** A failed delivery to turn into a retry, a FIFO wait or a dead letter. */
interface Failure {
  key: string;
  d: Delivery;
  requestedMs: number;
  immediate: boolean;
  /** Why the delivery failed (for the delivery history). */
  why: DeliveryOutcome;
}

const FAIL_CHUNK = 512;

class GroupTopicState {
  /** Next offset to read per queue: TOPIC queues under `t:q`, RETRY queues under `r:q`. */
  readonly offsets = new Map<string, number>();
  readonly deliveries = new Map<string, Delivery>();
  /** FIFO redeliveries that are due, oldest first (may hold stale keys). */
  ready: string[] = [];
  /** FIFO: key → the delivery blocking it. */
  readonly blocked = new Map<string, string>();
  readonly fifo = new Map<number, FifoQueue>();
  /** Retry queues whose head is not due before this time. */
  readonly retryDueHint = new Map<number, number>();
  readonly lock = new SerialExecutor();
  /** Deliveries whose invisible time ran out, waiting to be failed in one batch. */
  expiring: Failure[] = [];
  rr = 0;
  constructor(
    readonly group: string,
    readonly topic: string,
  ) {}
}

const off = (src: Source, q: number) => `${src === Source.TOPIC ? 't' : 'r'}:${q}`;
const dkey = (src: Source, q: number, o: number) => `${src}:${q}:${o}`;
/** Broadcast consumers keep their own state under `group%BROADCAST%<name>`; policies come from the group. */
const baseGroupOf = (g: string) => g.split('%BROADCAST%')[0]!;
const skey = (g: string, t: string) => `${g}\u0000${t}`;
/** Handles carry the source in the queue id's top bit. */
const RETRY_BIT = 0x8000_0000;

/** Journal tuple of a delivery. */
type Tuple = [
  src: number,
  q: number,
  o: number,
  nonce: number,
  attempt: number,
  deadline: number,
  auto: 0 | 1,
  client: string,
  state: number,
  key: string,
];
const toTuple = (d: Delivery): Tuple => [
  d.source,
  d.queueId,
  d.offset,
  d.nonce,
  d.attempt,
  d.deadline,
  d.autoRenew ? 1 : 0,
  d.clientId,
  d.state,
  d.fifoKey,
];
const fromTuple = (t: Tuple): Delivery => ({
  source: t[0] as Source,
  queueId: t[1],
  offset: t[2],
  nonce: t[3],
  attempt: t[4],
  deadline: t[5],
  autoRenew: t[6] === 1,
  clientId: t[7],
  state: t[8] as DeliveryState,
  fifoKey: t[9] ?? '',
});

/** A delivery about to be handed out (`deliver` arms its nonce, deadline and owner). */
function freshDelivery(
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
  };
}

/** A presented id for the n-th delivery of a FIFO message: new per retry, stable for a given attempt. */
function retryMessageId(origin: string, attempt: number): string {
  return `01${createHash('md5').update(`${origin}#${attempt}`).digest('hex').toUpperCase()}`;
}

export class ConsumeService implements StateParticipant {
  readonly stateKey = 'consume';
  journal!: StateJournal;
  /** Told of each delivery and how it ends (counters, delivery history); set by the broker. */
  observer?: ConsumeObserver;
  private readonly states = new Map<string, GroupTopicState>();
  private readonly heap: DeadlineHeap<{ s: GroupTopicState; key: string; nonce: number } | { wake: string }>;
  private readonly waiters = new LongPollWaiters();
  private renewTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Messages moved to a DLQ since start, per group. */
  readonly deadLettered = new Map<string, number>();

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
    this.heap = new DeadlineHeap(now, (item, at) => {
      if ('wake' in item) this.waiters.wake(item.wake);
      else this.onDeadline(item.s, item.key, item.nonce, at);
    });
    store.onArrival((topic) =>
      this.waiters.wake(topic.startsWith('%RETRY%') ? this.topicOfRetry(topic) : topic),
    );
    sessions.onGone(
      (clientId) =>
        void this.releaseClient(clientId).catch((err) => this.logger.error({ err }, 'release failed')),
    );
  }

  /** Arm timers for the state replayed from the journal, rebuild FIFO windows, start auto-renewal. */
  async start(): Promise<void> {
    const now = this.now();
    for (const s of this.states.values()) {
      const g = this.groups.get(baseGroupOf(s.group));
      if (g?.consumeMessageOrderly) await this.rebuildFifo(s);
      for (const [key, d] of s.deliveries) {
        if (d.fifoKey) s.blocked.set(d.fifoKey, key);
        if (d.state === DeliveryState.READY) s.ready.push(key);
        else if (d.deadline <= now) this.onDeadline(s, key, d.nonce, d.deadline);
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
    this.stopped = true;
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
    const group = await this.requireGroup(baseGroupOf(req.group));
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
    if (s.deliveries.size >= this.o.maxInflightPerGroup) {
      throw new VelaError(
        'TOO_MANY_REQUESTS',
        `${s.deliveries.size} messages of ${req.topic} are in flight for ${req.group}`,
      );
    }
    for (;;) {
      if (this.waiters.parked >= this.o.maxParkedReceives) {
        throw new VelaError('TOO_MANY_REQUESTS', `${this.waiters.parked} receives are already waiting`);
      }
      // Register interest before looking, so an arrival during the pop is not missed.
      const wait = this.waiters.park(req.topic, pollUntil - this.now(), req.signal);
      const out = await s.lock.run(() => this.pop(s, topic, group, req, batch, invisibleMs));
      if (out.length > 0 || this.now() >= pollUntil || req.signal?.aborted || this.stopped) {
        wait.cancel();
        return out;
      }
      await wait.promise;
      if (this.now() >= pollUntil || req.signal?.aborted || this.stopped) return [];
    }
  }

  /** Acknowledge a delivery: the message is consumed for this group. */
  async ack(group: string, topic: string, receiptHandle: string): Promise<void> {
    const [refused] = await this.ackMany(group, topic, [receiptHandle]);
    if (refused) throw refused;
  }

  /** Acknowledge several deliveries with one journal write. Per handle: null, or why it was refused. */
  async ackMany(
    group: string,
    topic: string,
    receiptHandles: readonly string[],
  ): Promise<(VelaError | null)[]> {
    const results: (VelaError | null)[] = [];
    const done: Delivery[] = [];
    let s: GroupTopicState | undefined;
    for (const h of receiptHandles) {
      try {
        const live = this.liveDelivery(group, topic, h);
        s = live.s;
        done.push(this.settle(live.s, live.key));
        results.push(null);
      } catch (err) {
        if (!(err instanceof VelaError)) throw err;
        results.push(err);
      }
    }
    if (s && done.length > 0) {
      await this.journalSettled(s, done);
      this.observer?.settled(group, topic, done, 'ACKED');
    }
    return results;
  }

  /**
   * ChangeInvisibleDuration. For a simple consumer: invisible for `ms` from now (0: visible again at
   * once); returns the new receipt handle. For a push consumer this is its nack: the message waits
   * for the group's retry interval (never less) or goes to the DLQ.
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
    if (d.autoRenew) {
      await s.lock.run(() =>
        this.failMany(s, [{ key, d, requestedMs: ms, immediate: false, why: 'NACKED' }]),
      );
      return receiptHandle;
    }
    d.nonce = newNonce();
    d.deadline = this.now() + ms;
    this.heap.push(d.deadline, { s, key, nonce: d.nonce });
    await this.journal.append({ k: 'dlv', g: group, t: topic, d: [toTuple(d)] });
    return this.handle(s, d);
  }

  /** ForwardMessageToDeadLetterQueue: the client gives up on the message. */
  async forwardToDeadLetter(group: string, topic: string, receiptHandle: string): Promise<void> {
    const { s, key } = this.liveDelivery(group, topic, receiptHandle);
    const d = s.deliveries.get(key)!;
    await s.lock.run(async () => {
      if (s.deliveries.get(key) !== d) return;
      const m = await this.readDelivered(s, d);
      if (m) await this.deadLetter(s, [{ m, attempts: d.attempt }]);
      await this.journalSettled(s, [this.settle(s, key)]);
      this.observer?.settled(s.group, s.topic, [d], 'FORWARDED_TO_DLQ', 'DLQ');
    });
  }

  /** A client left: its auto-renewed (push) deliveries go back to the group at once. */
  async releaseClient(clientId: string): Promise<number> {
    let released = 0;
    for (const s of this.states.values()) {
      const mine: Failure[] = [];
      for (const [key, d] of s.deliveries) {
        if (d.state === DeliveryState.INFLIGHT && d.autoRenew && d.clientId === clientId)
          mine.push({ key, d, requestedMs: 0, immediate: true, why: 'RELEASED' });
      }
      if (mine.length === 0) continue;
      released += mine.length;
      await s.lock.run(() => this.failMany(s, mine));
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
      const consumerOffset = s?.offsets.get(off(Source.TOPIC, q)) ?? qs.minOffset;
      let inflight = 0;
      let ready = 0;
      for (const d of s?.deliveries.values() ?? []) {
        if (d.source !== Source.TOPIC || d.queueId !== q) continue;
        if (d.state === DeliveryState.INFLIGHT) inflight++;
        else ready++;
      }
      const held = s?.fifo.get(q)?.held.length ?? 0;
      out.push({
        queueId: q,
        brokerOffset: qs.maxOffset,
        consumerOffset,
        inflight,
        ready,
        lag: Math.max(0, qs.maxOffset - consumerOffset) + inflight + ready + held,
        lastStoreTimestamp: qs.lastStoreTimestamp,
      });
    }
    return out;
  }

  /**
   * Read-only figures of a group on a topic, for metrics and the console: per queue of the topic the
   * next offset to hand out, deliveries in flight, FIFO deliveries waiting for or due for their retry,
   * held FIFO messages and the lowest offset not yet settled; for the group's retry topic the
   * deliveries in flight and, per retry queue, the next offset to read. Null without state.
   */
  figures(
    group: string,
    topic: string,
  ): {
    queues: Map<
      number,
      { next: number; inflight: number; waiting: number; due: number; held: number; lowest: number }
    >;
    retryInflight: number;
    retryNext: number[];
  } | null {
    const s = this.states.get(skey(group, topic));
    if (!s) return null;
    const queues = new Map<
      number,
      { next: number; inflight: number; waiting: number; due: number; held: number; lowest: number }
    >();
    const q = (id: number) => {
      let f = queues.get(id);
      if (!f) {
        const next = s.offsets.get(off(Source.TOPIC, id)) ?? this.store.queueState(topic, id).minOffset;
        const held = s.fifo.get(id)?.held ?? [];
        let lowest = next;
        for (const h of held) lowest = Math.min(lowest, h.offset);
        f = { next, inflight: 0, waiting: 0, due: 0, held: held.length, lowest };
        queues.set(id, f);
      }
      return f;
    };
    let retryInflight = 0;
    for (const d of s.deliveries.values()) {
      if (d.source === Source.RETRY) {
        retryInflight++;
        continue;
      }
      const f = q(d.queueId);
      if (d.state === DeliveryState.INFLIGHT) f.inflight++;
      else if (d.state === DeliveryState.WAITING_RETRY) f.waiting++;
      else f.due++;
      f.lowest = Math.min(f.lowest, d.offset);
    }
    const t = this.topics.get(topic);
    for (let id = 0; id < (t?.readQueueNums ?? 0); id++) q(id);
    const retryNext = Array.from(
      { length: RETRY_QUEUES },
      (_, i) => s.offsets.get(off(Source.RETRY, i)) ?? 0,
    );
    return { queues, retryInflight, retryNext };
  }

  /** Messages of a group waiting in its retry topic for `topic`. */
  retryBacklog(group: string, topic: string): number {
    const s = this.states.get(skey(group, topic));
    const rt = retryTopicOf(group, topic);
    let n = 0;
    for (let q = 0; q < RETRY_QUEUES; q++)
      n += Math.max(0, this.store.queueState(rt, q).maxOffset - (s?.offsets.get(off(Source.RETRY, q)) ?? 0));
    return n;
  }

  /** Messages not yet handed out to `group` from `topic` (flow control). */
  readyBacklog(group: string, topic: string): number {
    const t = this.topics.get(topic);
    const s = this.states.get(skey(group, topic));
    if (!t || !s) return 0;
    let n = 0;
    for (let q = 0; q < t.readQueueNums; q++) {
      n += Math.max(
        0,
        this.store.queueState(topic, q).maxOffset - (s.offsets.get(off(Source.TOPIC, q)) ?? 0),
      );
    }
    return n;
  }

  /**
   * Rewind or advance a group on one queue (admin reset): the next message handed out is `offset`;
   * its in-flight messages on that queue, held FIFO messages and waiting retries are discarded.
   * Applies to the group and to its broadcast consumers.
   */
  async resetQueue(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
  ): Promise<number | undefined> {
    let old: number | undefined;
    for (const s of this.states.values()) {
      if (s.topic !== topic || (s.group !== group && !s.group.startsWith(`${group}%BROADCAST%`))) continue;
      await s.lock.run(async () => {
        if (s.group === group) old = s.offsets.get(off(Source.TOPIC, queueId));
        const rt = retryTopicOf(s.group, s.topic);
        const retry: [number, number][] = [];
        for (let q = 0; q < RETRY_QUEUES; q++) retry.push([q, this.store.queueState(rt, q).maxOffset]);
        const rec = { k: 'rst', g: s.group, t: s.topic, q: queueId, o: offset, retry };
        this.apply(rec);
        await this.journal.append(rec);
      });
    }
    return old;
  }

  /** Every (group, topic) with consumption state. */
  groupTopics(): { group: string; topic: string }[] {
    return [...this.states.values()].map((s) => ({ group: s.group, topic: s.topic }));
  }

  groupsOf(topic: string): string[] {
    return [...this.states.values()].filter((s) => s.topic === topic).map((s) => s.group);
  }

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
    const s = () => this.stateFor(rec.g as string, rec.t as string);
    switch (rec.k) {
      case 'dlv': {
        const st = s();
        for (const [src, q, next] of (rec.offs ?? []) as [Source, number, number][])
          st.offsets.set(off(src, q), next);
        for (const t of rec.d as Tuple[]) st.deliveries.set(dkey(t[0], t[1], t[2]), fromTuple(t));
        for (const [q, low] of (rec.lows ?? []) as [number, number][]) this.fifoQueue(st, q, low).low = low;
        return true;
      }
      case 'done': {
        const st = s();
        for (const [src, q, o] of rec.items as [Source, number, number][]) {
          st.deliveries.delete(dkey(src, q, o));
          if (rec.fifo && src === Source.TOPIC) this.fifoQueue(st, q, o).settled.add(o);
        }
        for (const [q, low] of (rec.lows ?? []) as [number, number][]) {
          const fq = this.fifoQueue(st, q, low);
          fq.low = low;
          for (const o of fq.settled) if (o < low) fq.settled.delete(o);
        }
        return true;
      }
      case 'forget':
        this.states.delete(skey(rec.g as string, rec.t as string));
        return true;
      case 'rst': {
        const st = s();
        const q = rec.q as number;
        st.offsets.set(off(Source.TOPIC, q), rec.o as number);
        for (const [rq, next] of rec.retry as [number, number][]) st.offsets.set(off(Source.RETRY, rq), next);
        st.retryDueHint.clear();
        for (const [k, d] of [...st.deliveries]) {
          if (d.source === Source.RETRY || (d.source === Source.TOPIC && d.queueId === q)) {
            st.deliveries.delete(k);
            if (d.fifoKey && st.blocked.get(d.fifoKey) === k) st.blocked.delete(d.fifoKey);
          }
        }
        st.fifo.delete(q);
        this.waiters.wake(st.topic);
        return true;
      }
      default:
        return false;
    }
  }

  snapshot(): unknown {
    return [...this.states.values()].map((s) => ({
      g: s.group,
      t: s.topic,
      offs: [...s.offsets],
      d: [...s.deliveries.values()].map(toTuple),
      fifo: [...s.fifo].map(([q, f]) => [q, f.low, [...f.settled]]),
    }));
  }

  restore(data: unknown): void {
    this.states.clear();
    for (const e of data as {
      g: string;
      t: string;
      offs: [string, number][];
      d: Tuple[];
      fifo: [number, number, number[]][];
    }[]) {
      const s = this.stateFor(e.g, e.t);
      for (const [k, o] of e.offs) s.offsets.set(k, o);
      for (const t of e.d) s.deliveries.set(dkey(t[0], t[1], t[2]), fromTuple(t));
      for (const [q, low, settled] of e.fifo ?? []) {
        const fq = this.fifoQueue(s, q, low);
        for (const o of settled) fq.settled.add(o);
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

  private fifoQueue(s: GroupTopicState, q: number, low: number): FifoQueue {
    let f = s.fifo.get(q);
    if (!f) s.fifo.set(q, (f = new FifoQueue(low)));
    return f;
  }

  private topicOfRetry(retryTopic: string): string {
    for (const s of this.states.values()) if (retryTopicOf(s.group, s.topic) === retryTopic) return s.topic;
    return retryTopic;
  }

  private handle(s: GroupTopicState, d: Delivery): string {
    return this.handles.encode(s.topic, s.group, {
      queueId: d.source === Source.RETRY ? (d.queueId | RETRY_BIT) >>> 0 : d.queueId,
      offset: d.offset,
      nonce: d.nonce,
    });
  }

  private liveDelivery(
    group: string,
    topic: string,
    receiptHandle: string,
  ): { s: GroupTopicState; key: string } {
    const f = this.handles.decode(receiptHandle, topic, group);
    const source = f.queueId & RETRY_BIT ? Source.RETRY : Source.TOPIC;
    const key = dkey(source, f.queueId & ~RETRY_BIT, f.offset);
    const s = this.states.get(skey(group, topic));
    const d = s?.deliveries.get(key);
    if (!s || !d || d.nonce !== f.nonce) {
      throw new VelaError(
        'INVALID_RECEIPT_HANDLE',
        'the receipt handle was acked, superseded or never issued',
      );
    }
    if (d.state !== DeliveryState.INFLIGHT || d.deadline <= this.now()) {
      throw new VelaError(
        'INVALID_RECEIPT_HANDLE',
        'the receipt handle has expired; the message will be delivered again',
      );
    }
    return { s, key };
  }

  /** Remove a delivery from memory (its journal record is the caller's). */
  private settle(s: GroupTopicState, key: string): Delivery {
    const d = s.deliveries.get(key)!;
    s.deliveries.delete(key);
    if (d.fifoKey && s.blocked.get(d.fifoKey) === key) {
      s.blocked.delete(d.fifoKey);
      this.waiters.wake(s.topic);
    }
    if (d.fifoKey && d.source === Source.TOPIC) {
      this.fifoQueue(s, d.queueId, d.offset).settle(
        d.offset,
        s.offsets.get(off(Source.TOPIC, d.queueId)) ?? 0,
        (o) => s.deliveries.has(dkey(Source.TOPIC, d.queueId, o)),
      );
    }
    return d;
  }

  private journalSettled(s: GroupTopicState, done: Delivery[]): Promise<void> {
    const fifo = done.some((d) => d.fifoKey);
    const lows = fifo
      ? [...new Set(done.filter((d) => d.fifoKey).map((d) => d.queueId))].map((q) => [
          q,
          s.fifo.get(q)?.low ?? 0,
        ])
      : undefined;
    return this.journal.append({
      k: 'done',
      g: s.group,
      t: s.topic,
      items: done.map((d) => [d.source, d.queueId, d.offset]),
      ...(fifo ? { fifo: 1, lows } : {}),
    });
  }

  private onDeadline(s: GroupTopicState, key: string, nonce: number, at: number): void {
    const d = s.deliveries.get(key);
    if (!d || d.nonce !== nonce || d.deadline !== at || this.states.get(skey(s.group, s.topic)) !== s) return;
    if (d.state === DeliveryState.WAITING_RETRY) {
      d.state = DeliveryState.READY;
      s.ready.push(key);
      this.waiters.wake(s.topic);
      void this.journal
        .append({ k: 'dlv', g: s.group, t: s.topic, d: [toTuple(d)] })
        .catch((err) => this.logger.error({ err }, 'journal failed'));
      return;
    }
    if (d.state !== DeliveryState.INFLIGHT) return;
    // Invisible time over without an ack: a failed attempt. A push consumer that is still alive is
    // renewed before this happens, so here the consumer is gone or timed out. Expiries are handled
    // in batches (one store append, one journal write for many).
    s.expiring.push({ key, d, requestedMs: 0, immediate: !d.autoRenew, why: 'EXPIRED' });
    if (s.expiring.length === 1) {
      setImmediate(() => {
        const due = s.expiring.splice(0);
        void s.lock
          .run(() => this.failMany(s, due))
          .catch((err) =>
            this.logger.error({ err, group: s.group, topic: s.topic }, 'could not schedule retries'),
          );
      });
    }
  }

  /**
   * Deliveries failed. Per failure, `requestedMs` is the client's wish (push nack) and `immediate`
   * makes a non-FIFO retry due at once (simple consumers, departed push consumers). FIFO deliveries
   * wait their fixed interval in place; the others become retry messages or dead letters, written
   * with one store append per kind and one journal write. Runs under the state lock.
   */
  private async failMany(s: GroupTopicState, failures: readonly Failure[]): Promise<void> {
    for (let i = 0; i < failures.length; i += FAIL_CHUNK)
      await this.failChunk(s, failures.slice(i, i + FAIL_CHUNK));
  }

  private async failChunk(s: GroupTopicState, failures: readonly Failure[]): Promise<void> {
    const g = this.groups.get(baseGroupOf(s.group));
    const maxAttempts = (g?.retryMaxTimes ?? 16) + 1;
    const now = this.now();
    const waits: Tuple[] = [];
    const waiting: Failure[] = [];
    const rest: Failure[] = [];
    for (const f of failures) {
      const { key, d } = f;
      if (s.deliveries.get(key) !== d || d.state !== DeliveryState.INFLIGHT) continue; // acked or failed meanwhile
      if (d.fifoKey && g && d.attempt < maxAttempts) {
        d.state = DeliveryState.WAITING_RETRY;
        d.nonce = newNonce();
        // Simple consumers already waited their invisible time; push consumers wait the fixed interval.
        d.deadline = now + (f.immediate ? 0 : Math.max(f.requestedMs, g.fifoRetryIntervalMs));
        this.heap.push(d.deadline, { s, key, nonce: d.nonce });
        waits.push(toTuple(d));
        waiting.push(f);
      } else {
        rest.push(f);
      }
    }
    if (waits.length > 0) await this.journal.append({ k: 'dlv', g: s.group, t: s.topic, d: waits });
    for (const f of waiting) this.observer?.settled(s.group, s.topic, [f.d], f.why, 'FIFO_RETRY');
    if (rest.length === 0) return;
    const policy = g?.retryPolicy ?? { type: 'CUSTOMIZED' as const, next: [] };
    const messages = await Promise.all(rest.map((f) => this.readDelivered(s, f.d)));
    const retries = [];
    const dead: { m: StoredMessage; attempts: number }[] = [];
    for (let i = 0; i < rest.length; i++) {
      const m = messages[i];
      const { d, requestedMs, immediate } = rest[i]!;
      if (!m) continue; // removed by retention: nothing left to retry
      if (d.attempt >= maxAttempts) {
        dead.push({ m, attempts: d.attempt });
        continue;
      }
      const delay = immediate ? 0 : Math.max(requestedMs, retryDelayMs(policy, d.attempt));
      // No timer per retry (memory would grow with the backlog): a consumer that finds the head of a
      // retry queue not yet due schedules one wake-up for it (see pop).
      retries.push(retryRecord(m, s.group, s.topic, d.attempt, now + delay, delay));
    }
    if (dead.length > 0) await this.deadLetter(s, dead);
    if (retries.length > 0) await this.store.append(retries);
    const settled = rest.filter((f) => s.deliveries.get(f.key) === f.d);
    const done = settled.map((f) => this.settle(s, f.key));
    if (done.length > 0) await this.journalSettled(s, done);
    if (this.observer) {
      for (const f of settled) {
        const next = f.d.attempt >= maxAttempts ? 'DLQ' : 'RETRY';
        this.observer.settled(s.group, s.topic, [f.d], f.why, next);
      }
    }
  }

  private async deadLetter(
    s: GroupTopicState,
    dead: readonly { m: StoredMessage; attempts: number }[],
  ): Promise<void> {
    const dlq = dlqTopicOf(baseGroupOf(s.group));
    if (!this.topics.get(dlq))
      await this.topics.upsert(dlq, { readQueueNums: 1, writeQueueNums: 1 }, { system: true });
    await this.store.append(dead.map(({ m, attempts }) => dlqRecord(m, s.group, s.topic, attempts)));
    this.observer?.deadLettered(baseGroupOf(s.group), s.topic, dead.length);
    this.deadLettered.set(
      baseGroupOf(s.group),
      (this.deadLettered.get(baseGroupOf(s.group)) ?? 0) + dead.length,
    );
    for (const { m, attempts } of dead) {
      this.logger.warn(
        { group: s.group, topic: s.topic, messageId: originIdOf(m), attempts, dlq },
        'message moved to the dead-letter queue',
      );
    }
  }

  /** The stored message a delivery stands for, or null if retention removed it. */
  private async readDelivered(s: GroupTopicState, d: Delivery): Promise<StoredMessage | null> {
    const topic = d.source === Source.RETRY ? retryTopicOf(s.group, s.topic) : s.topic;
    const r = await this.store.read(topic, d.queueId, d.offset, { maxCount: 1 });
    const m = r.messages[0];
    return m && m.queueOffset === d.offset ? m : null;
  }

  /** The message as this delivery presents it to the client. */
  private present(s: GroupTopicState, m: StoredMessage, d: Delivery): StoredMessage {
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

  private async pop(
    s: GroupTopicState,
    topic: TopicConfig,
    g: GroupConfig,
    req: ReceiveRequest,
    batch: number,
    invisibleMs: number,
  ): Promise<Delivered[]> {
    const out: Delivered[] = [];
    const tuples: Tuple[] = [];
    const offs: [Source, number, number][] = [];
    const lows = new Map<number, number>();
    const now = this.now();
    const orderly = g.consumeMessageOrderly;
    const taken = new Set<string>();
    const deliver = (m: StoredMessage, d: Delivery) => {
      d.nonce = newNonce();
      d.deadline = now + invisibleMs;
      d.autoRenew = req.autoRenew && req.invisibleMs === undefined;
      d.clientId = req.clientId;
      d.state = DeliveryState.INFLIGHT;
      const key = dkey(d.source, d.queueId, d.offset);
      s.deliveries.set(key, d);
      if (d.fifoKey) {
        s.blocked.set(d.fifoKey, key);
        taken.add(d.fifoKey);
      }
      tuples.push(toTuple(d));
      const message = this.present(s, m, d);
      out.push({ message, receiptHandle: this.handle(s, d), deliveryAttempt: d.attempt, invisibleMs });
      this.observer?.delivered(s.group, s.topic, d, message);
      this.heap.push(d.deadline, { s, key, nonce: d.nonce });
    };
    const advance = (src: Source, q: number, next: number) => {
      if (s.offsets.get(off(src, q)) !== next) {
        s.offsets.set(off(src, q), next);
        offs.push([src, q, next]);
      }
    };

    // 1. FIFO messages due again, first.
    while (out.length < batch && s.ready.length > 0) {
      const key = s.ready.shift()!;
      const d = s.deliveries.get(key);
      if (!d || d.state !== DeliveryState.READY) continue;
      const m = await this.readDelivered(s, d);
      if (s.deliveries.get(key) !== d || d.state !== DeliveryState.READY) continue;
      if (!m) {
        await this.journalSettled(s, [this.settle(s, key)]); // removed by retention
        continue;
      }
      d.attempt++;
      deliver(m, d);
    }

    // 2. Retries that are due (non-FIFO groups), from the group's retry topic for this topic.
    if (!orderly) {
      const rt = retryTopicOf(s.group, s.topic);
      for (let q = 0; q < RETRY_QUEUES && out.length < batch; q++) {
        const at = s.offsets.get(off(Source.RETRY, q)) ?? 0;
        if (this.store.queueState(rt, q).maxOffset <= at || (s.retryDueHint.get(q) ?? 0) > now) continue;
        const r = await this.store.read(rt, q, at, { maxCount: batch - out.length });
        let next = r.status === 'FOUND' ? at : r.nextOffset;
        for (const m of r.messages) {
          if (m.deliveryTimestamp > now) {
            s.retryDueHint.set(q, m.deliveryTimestamp);
            this.heap.push(m.deliveryTimestamp, { wake: s.topic });
            break;
          }
          next = m.queueOffset + 1;
          if (!req.filter.matches(m.tag)) continue;
          deliver(m, freshDelivery(Source.RETRY, q, m.queueOffset, m.reconsumeTimes + 1, ''));
        }
        advance(Source.RETRY, q, next);
      }
    }

    // 3. New messages, from every queue of the topic, starting at a rotating queue.
    const queues = topic.readQueueNums;
    const start = s.rr++ % queues;
    for (let i = 0; i < queues && out.length < batch; i++) {
      const q = (start + i) % queues;
      const fq = orderly
        ? this.fifoQueue(
            s,
            q,
            s.offsets.get(off(Source.TOPIC, q)) ?? this.store.queueState(s.topic, q).minOffset,
          )
        : undefined;
      if (fq) {
        // Held messages whose key is free go first, in storage order: choose them, then read them
        // with as few store reads as their spread allows.
        const chosen: HeldMessage[] = [];
        const rest: HeldMessage[] = [];
        for (const e of fq.held) {
          if (out.length + chosen.length < batch && !s.blocked.has(e.key) && !taken.has(e.key)) {
            chosen.push(e);
            taken.add(e.key);
          } else rest.push(e);
        }
        if (chosen.length > 0) {
          fq.held = rest;
          for (const e of chosen) taken.delete(e.key);
          for (const [e, m] of await this.readHeld(s.topic, q, chosen)) {
            if (!m) continue; // removed by retention
            deliver(m, freshDelivery(Source.TOPIC, q, e.offset, 1, e.key));
          }
        }
      }
      let at = s.offsets.get(off(Source.TOPIC, q)) ?? this.store.queueState(s.topic, q).minOffset;
      if (fq && !fq.canRead(at)) continue;
      const want = fq ? Math.max(batch - out.length, 64) : batch - out.length;
      let r = await this.store.read(s.topic, q, at, { maxCount: want, tagHashes: req.filter.hashes });
      if (r.status === 'OFFSET_TOO_SMALL' || r.status === 'OFFSET_OVERFLOW') {
        at = r.nextOffset;
        r = await this.store.read(s.topic, q, at, { maxCount: want, tagHashes: req.filter.hashes });
      }
      let next = r.nextOffset;
      for (const m of r.messages) {
        if (!req.filter.matches(m.tag)) {
          fq?.settled.add(m.queueOffset);
          continue;
        }
        if (fq) {
          const key = fifoKey(q, m.messageGroup);
          if (s.blocked.has(key) || taken.has(key) || out.length >= batch) {
            if (!fq.canRead(m.queueOffset)) {
              next = m.queueOffset;
              break;
            }
            fq.held.push({ offset: m.queueOffset, key });
            continue;
          }
          deliver(m, freshDelivery(Source.TOPIC, q, m.queueOffset, 1, key));
        } else {
          deliver(m, freshDelivery(Source.TOPIC, q, m.queueOffset, 1, ''));
        }
      }
      if (r.status !== 'FOUND' && r.status !== 'NO_NEW_MESSAGE') next = r.nextOffset;
      advance(Source.TOPIC, q, next);
      if (fq) {
        // Offsets the store's tag pre-filter skipped are settled too (only then is there a gap).
        if (r.messages.length < next - at) {
          const held = new Set(fq.held.map((h) => h.offset));
          for (let o = at; o < next; o++) {
            if (!s.deliveries.has(dkey(Source.TOPIC, q, o)) && !held.has(o)) fq.settled.add(o);
          }
        }
        fq.advance(next, (o) => s.deliveries.has(dkey(Source.TOPIC, q, o)));
        lows.set(q, fq.low);
      }
    }
    if (tuples.length > 0 || offs.length > 0) {
      await this.journal.append({
        k: 'dlv',
        g: s.group,
        t: s.topic,
        offs,
        d: tuples,
        ...(lows.size ? { lows: [...lows] } : {}),
      });
    }
    return out;
  }

  /** Read held messages (ascending offsets): one range read when they are close together. */
  private async readHeld(
    topic: string,
    q: number,
    chosen: readonly HeldMessage[],
  ): Promise<[HeldMessage, StoredMessage | undefined][]> {
    const first = chosen[0]!.offset;
    const span = chosen.at(-1)!.offset - first + 1;
    if (span <= 4 * chosen.length + 64) {
      const r = await this.store.read(topic, q, first, { maxCount: span, maxBytes: 64 * 1024 * 1024 });
      const byOffset = new Map(r.messages.map((m) => [m.queueOffset, m]));
      return chosen.map((e) => [e, byOffset.get(e.offset)]);
    }
    const out: [HeldMessage, StoredMessage | undefined][] = [];
    for (const e of chosen) {
      const r = await this.store.read(topic, q, e.offset, { maxCount: 1 });
      out.push([e, r.messages[0]?.queueOffset === e.offset ? r.messages[0] : undefined]);
    }
    return out;
  }

  /** After a restart: everything in [low, scan) that is neither settled nor in flight is held again. */
  private async rebuildFifo(s: GroupTopicState): Promise<void> {
    for (const [q, fq] of s.fifo) {
      const scan = s.offsets.get(off(Source.TOPIC, q)) ?? fq.low;
      fq.held = [];
      for (let at = fq.low; at < scan;) {
        const r = await this.store.read(s.topic, q, at, { maxCount: 256 });
        if (r.messages.length === 0) break;
        for (const m of r.messages) {
          if (m.queueOffset >= scan) break;
          if (fq.settled.has(m.queueOffset) || s.deliveries.has(dkey(Source.TOPIC, q, m.queueOffset)))
            continue;
          fq.held.push({ offset: m.queueOffset, key: fifoKey(q, m.messageGroup) });
        }
        at = r.nextOffset;
      }
    }
  }

  private async renew(): Promise<void> {
    const now = this.now();
    for (const s of this.states.values()) {
      const renewed: Tuple[] = [];
      for (const [key, d] of s.deliveries) {
        if (d.state !== DeliveryState.INFLIGHT || !d.autoRenew || d.deadline - now > this.o.renewAheadMs)
          continue;
        if (!this.sessions.isAlive(d.clientId)) continue; // let it expire: the client is gone
        d.deadline = now + this.o.autoRenewInvisibleMs;
        this.heap.push(d.deadline, { s, key, nonce: d.nonce });
        renewed.push(toTuple(d));
      }
      if (renewed.length > 0) await this.journal.append({ k: 'dlv', g: s.group, t: s.topic, d: renewed });
    }
  }
}
