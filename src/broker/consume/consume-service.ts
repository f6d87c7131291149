/**
 * Message-granularity consumption (RocketMQ's POP) for push and simple consumers: the delivery state
 * machine Ready → Inflight → Commit, or → WaitingRetry → Ready, or → DLQ. This is the facade the
 * protocol edge, the admin API and the broker call; each concept has its own module:
 *
 *   delivery.ts         the delivery state of a (consumer group, topic)
 *   pop.ts, fifo.ts     receive: due FIFO redeliveries, due retries, new messages; FIFO's held window
 *   ack.ts              ack, changeInvisibleDuration, ForwardMessageToDeadLetterQueue
 *   revive.ts           expiry, failing deliveries (retry topic, FIFO wait, DLQ)
 *   failure-marks.ts    a retry or dead letter written once, even when a crash cuts its settling short
 *   auto-renew.ts       push consumers' invisible time, and their departure
 *   progress.ts         consumer progress and backlogs
 *   consume-journal.ts  journal records and snapshots (shapes in ../state-records.ts)
 *   admin-changes.ts    admin resets, and what deleting a topic or group removes
 *   retry-migration.ts  retry topics carried over from the old `%RETRY%<group>_<topic>` names
 *   context.ts          what they share, and the rule that every change is serialized per (group, topic)
 *
 * A receive hands out messages from every queue of the topic, whatever queue the client named; each
 * is invisible to the whole group until acked or until its invisible time ends. Every change is
 * journalled before the client hears of it, so a restart loses nothing and fires nothing early.
 * Expiries use one deadline heap, not one timer per message.
 */
import type { CancelSignal } from '../../common/cancel-signal.js';
import { VelaError } from '../../common/errors.js';
import type { StateParticipant, StateRecord } from '../state-journal.js';
import type { StateJournal } from '../state-journal.js';
import { Perm, type GroupConfig, type TopicConfig } from '../metadata.js';
import type { TagFilter } from '../filter.js';
import type { ConsumeObserver } from '../consume-observer.js';
import { consumeSnapshotItems, decodeConsumeSnapshot, encodeConsumeSnapshot } from '../state-snapshots.js';
import { Acks } from './ack.js';
import { AdminChanges } from './admin-changes.js';
import { AutoRenew } from './auto-renew.js';
import { ConsumeContext, type ConsumeDeps } from './context.js';
import { ConsumeJournal } from './consume-journal.js';
import {
  DeliveryState,
  Source,
  baseGroupOf,
  deliveryKey,
  type DeliveryKey,
  type GroupTopicState,
} from './delivery.js';
import { settleWrittenFailures } from './failure-marks.js';
import { rebuildHeld } from './fifo.js';
import { Pop, type Delivered, type PopResult } from './pop.js';
import type { ParkingLot } from './long-poll.js';
import { Progress, type QueueProgress } from './progress.js';
import { receiptHandlesOf } from './receipt.js';
import { parseRetryTopic, retryTopicOf } from './retry-records.js';
import { settle, settledRecord } from './commit.js';
import type { RolledBackQueue } from '../../store/index.js';
import type { QueueNext } from '../state-records.js';
import { Revive } from './revive.js';
import { migrateRetryTopics } from './retry-migration.js';

export type { ConsumeDeps, ConsumeOptions } from './context.js';
export type { Delivered } from './pop.js';

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
  signal?: CancelSignal;
}

export class ConsumeService implements StateParticipant {
  readonly stateKey = 'consume';
  private readonly ctx: ConsumeContext;
  private readonly revive: Revive;
  private readonly popper: Pop;
  private readonly acks: Acks;
  private readonly autoRenew: AutoRenew;
  private readonly figures: Progress;
  private readonly records: ConsumeJournal;
  private readonly admin: AdminChanges;
  private stopped = false;

  constructor(deps: ConsumeDeps) {
    const ctx = new ConsumeContext(deps, (item, at) => this.revive.onDeadline(item, at));
    this.ctx = ctx;
    this.revive = new Revive(ctx);
    this.popper = new Pop(ctx, (s, ds) => receiptHandlesOf(ctx, s, ds));
    this.acks = new Acks(ctx, this.revive);
    this.autoRenew = new AutoRenew(ctx, this.revive);
    this.figures = new Progress(ctx);
    this.records = new ConsumeJournal(ctx);
    this.admin = new AdminChanges(ctx, this.records);
    // The store tells every queue that got messages in one write, one after the other: the topics
    // are woken once for all of them, after the last. A wake per queue woke as many competing
    // receives as the write touched queues, and all but the first found the messages taken.
    // Receives of groups that are not orderly read messages once appended (pop.ts) and are woken
    // then; pulls and orderly groups read durable ones and are woken when they are. Retries are
    // read once durable, by every receive.
    // Topic → whom to wake: true (receives that read appended messages), false (the others),
    // undefined (everyone).
    // Two arrays, not a Map cleared each time: a cleared Map's table stays reachable from the old
    // one until a full collection (kept-key-map.ts); a write wakes one topic or a few.
    const wakeTopics: string[] = [];
    const wakeEarly: (boolean | undefined)[] = [];
    const wake = (topic: string, early: boolean | undefined): void => {
      if (wakeTopics.length === 0) {
        queueMicrotask(() => {
          for (let i = 0; i < wakeTopics.length; i++)
            ctx.waiters.wake(wakeTopics[i]!, undefined, wakeEarly[i]);
          wakeTopics.length = 0;
          wakeEarly.length = 0;
        });
      }
      const i = wakeTopics.indexOf(topic);
      if (i < 0) {
        wakeTopics.push(topic);
        wakeEarly.push(early);
      } else if (wakeEarly[i] !== early) wakeEarly[i] = undefined;
    };
    deps.store.onAppend((topic) => {
      if (!topic.startsWith('%RETRY%')) wake(topic, true); // retries are read once durable
    });
    deps.store.onArrival((topic) => {
      if (topic.startsWith('%RETRY%')) wake(this.topicOfRetry(topic), undefined);
      else wake(topic, false);
    });
    deps.store.onRollback((queues) => this.takeBack(queues));
    deps.sessions.onGone(
      (clientId) =>
        void this.releaseClient(clientId).catch((err) => ctx.logger.error({ err }, 'release failed')),
    );
  }

  set journal(journal: StateJournal) {
    this.ctx.journal = journal;
  }

  get journal(): StateJournal {
    return this.ctx.journal;
  }

  /** Told of each delivery and how it ends (counters, delivery history); set by the broker. */
  set observer(observer: ConsumeObserver | undefined) {
    this.ctx.observer = observer;
  }

  get observer(): ConsumeObserver | undefined {
    return this.ctx.observer;
  }

  /** Where parked receives wait (the broker's pulls share it). */
  get parking(): ParkingLot {
    return this.ctx.waiters.lot;
  }

  /** Messages moved to a DLQ since start, per group. */
  get deadLettered(): Map<string, number> {
    return this.ctx.deadLettered;
  }

  /**
   * Carry retries over from old retry topic names (once), take back read positions and hand-outs
   * past the recovered end of their queues (`clampToStore`), settle the deliveries whose retry or
   * dead letter a crash left stored but not journalled (failure-marks.ts), arm timers for the state
   * replayed from the journal, rebuild FIFO windows, start auto-renewal.
   */
  async start(): Promise<void> {
    const ctx = this.ctx;
    await migrateRetryTopics(ctx);
    await this.clampToStore();
    await settleWrittenFailures(ctx);
    const now = ctx.now();
    for (const s of [...ctx.states.values()]) {
      if (ctx.groups.get(baseGroupOf(s.group))?.consumeMessageOrderly) await this.rebuildFifo(s);
      for (const [key, d] of s.deliveries) {
        if (d.fifoKey) s.blocked.set(d.fifoKey, key);
        if (d.state === DeliveryState.READY) s.ready.push(key);
        else if (d.deadline <= now) this.revive.onDeadline({ state: s, key, nonce: d.nonce }, d.deadline);
        else ctx.arm(s, key, d);
      }
    }
    this.autoRenew.start();
  }

  /** Stop timers and answer every parked long poll now (empty). */
  stop(): void {
    this.stopped = true;
    this.ctx.timers.clear();
    this.ctx.heap.close();
    this.ctx.waiters.wakeAll();
  }

  /** Resolves once every state change under way or queued has finished (after `stop`, before closing the journal). */
  drain(): Promise<void> {
    return this.ctx.drain();
  }

  /** Resolve a group for consumption: it must exist (or be auto-created) and be enabled. */
  async requireGroup(name: string): Promise<GroupConfig> {
    let g = this.ctx.groups.get(name);
    if (!g && this.ctx.options.autoCreateGroups) g = await this.ctx.groups.upsert(name, {});
    if (!g) throw new VelaError('CONSUMER_GROUP_NOT_FOUND', name);
    if (!g.consumeEnable) throw new VelaError('FORBIDDEN', `consumer group ${name} has consumption disabled`);
    return g;
  }

  requireReadableTopic(name: string): TopicConfig {
    const t = this.ctx.topics.require(name);
    if ((t.perm & Perm.READ) === 0) throw new VelaError('FORBIDDEN', `topic ${name} is not readable`);
    return t;
  }

  checkInvisible(ms: number, forReceive: boolean): void {
    const { minInvisibleMs, maxInvisibleMs } = this.ctx.options;
    const min = forReceive ? minInvisibleMs : 0;
    if (!Number.isFinite(ms) || ms < min || ms > maxInvisibleMs) {
      throw new VelaError('ILLEGAL_INVISIBLE_TIME', `${ms} ms is outside [${min}, ${maxInvisibleMs}] ms`);
    }
  }

  /** Receive messages, long-polling up to `pollMs` when none are ready. */
  async receive(req: ReceiveRequest): Promise<Delivered[]> {
    const ctx = this.ctx;
    const o = ctx.options;
    const group = await this.requireGroup(baseGroupOf(req.group));
    const topic = this.requireReadableTopic(req.topic);
    const invisibleMs = req.invisibleMs ?? (req.autoRenew ? o.autoRenewInvisibleMs : undefined);
    if (invisibleMs === undefined)
      throw new VelaError('ILLEGAL_INVISIBLE_TIME', 'an invisible duration is required');
    if (req.invisibleMs !== undefined) this.checkInvisible(req.invisibleMs, true);
    // Push consumers (the server renews their messages) may take more per receive than simple ones.
    const cap =
      req.autoRenew && req.invisibleMs === undefined ? Math.max(o.maxBatch, o.maxPushBatch) : o.maxBatch;
    const batch = Math.min(cap, req.batchSize && req.batchSize > 0 ? req.batchSize : o.maxBatch);
    const pollUntil = ctx.now() + Math.max(0, Math.min(req.pollMs, o.maxPollMs));
    const s = ctx.states.getOrCreate(req.group, req.topic);
    if (s.deliveries.size >= o.maxInflightPerGroup) {
      throw new VelaError(
        'TOO_MANY_REQUESTS',
        `${s.deliveries.size} messages of ${req.topic} are in flight for ${req.group}`,
      );
    }
    const popRequest = {
      filter: req.filter,
      batch,
      invisibleMs,
      autoRenew: req.autoRenew && req.invisibleMs === undefined,
      clientId: req.clientId,
    };
    // Receives of one group with one filter compete for the same messages: woken one at a time.
    const parker = {
      client: req.clientId,
      group: req.group,
      wakeKey: `${req.group}\u0000${req.filter.expression}`,
      early: !group.consumeMessageOrderly,
    };
    for (;;) {
      // Register interest before looking, so an arrival during the pop is not missed.
      const wait = ctx.waiters.park(req.topic, pollUntil - ctx.now(), parker, req.signal);
      let out: Delivered[];
      let more: boolean;
      let popped: PopResult | undefined;
      try {
        popped = await ctx.serialized(s, () => this.popper.pop(s, topic, group, popRequest));
        await popped.durable;
        popped.observe();
        out = popped.delivered;
        more = popped.more;
      } catch (err) {
        popped?.observe();
        wait.cancel();
        throw err;
      }
      if (out.length > 0) {
        // The next receive of the group looks only when there may be more: the pop left some, or
        // something arrived while it looked (the wake it took may be for messages it did not see).
        // Passing on every time woke a second receive per arrival to find nothing.
        const woken = wait.woken;
        wait.cancel();
        if (more || woken) wait.passOn();
        return out;
      }
      const gone = !ctx.states.isLive(s); // the topic or group was deleted meanwhile
      if (gone || ctx.now() >= pollUntil || req.signal?.aborted || this.stopped) {
        wait.cancel();
        return out;
      }
      // Nothing ready: only now does the receive need a place to wait.
      const refused = wait.hold();
      if (refused) {
        wait.cancel();
        throw refused;
      }
      const why = await wait.promise;
      if (why === 'displaced' || why === 'stopped') return [];
      if (req.signal?.aborted || this.stopped) {
        if (why === 'woken') wait.passOn(); // leaving without looking: the next one looks
        return [];
      }
      if (why !== 'woken' && ctx.now() >= pollUntil) return [];
    }
  }

  /** Acknowledge a delivery: the message is consumed for this group. */
  async ack(group: string, topic: string, receiptHandle: string): Promise<void> {
    const [refused] = await this.ackMany(group, topic, [receiptHandle]);
    if (refused) throw refused;
  }

  /** Acknowledge several deliveries with one journal write. Per handle: null, or why it was refused. */
  ackMany(group: string, topic: string, receiptHandles: readonly string[]): Promise<(VelaError | null)[]> {
    return this.acks.ackMany(group, topic, receiptHandles);
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
    return this.acks.changeInvisibleDuration(group, topic, receiptHandle, ms);
  }

  /** ForwardMessageToDeadLetterQueue: the client gives up on the message. */
  forwardToDeadLetter(group: string, topic: string, receiptHandle: string): Promise<void> {
    return this.acks.forwardToDeadLetter(group, topic, receiptHandle);
  }

  /** A client left: its auto-renewed (push) deliveries go back to the group at once. */
  releaseClient(clientId: string): Promise<number> {
    return this.autoRenew.releaseClient(clientId);
  }

  /** Read-only per-queue figures of a group on a topic, for metrics and the console (null without state). */
  queueFigures(group: string, topic: string) {
    return this.figures.queueFigures(group, topic);
  }

  /** Per-queue figures for `consumerProgress`. */
  progress(group: string, topic: string): QueueProgress[] {
    return this.figures.progress(group, topic);
  }

  /** Messages of a group waiting in its retry topic for `topic`. */
  retryBacklog(group: string, topic: string): number {
    return this.figures.retryBacklog(group, topic);
  }

  /** Messages not yet handed out to `group` from `topic` (flow control). */
  readyBacklog(group: string, topic: string): number {
    return this.figures.readyBacklog(group, topic);
  }

  /**
   * Rewind or advance a group on one queue (admin reset): the next message handed out is `offset`;
   * its in-flight messages on that queue, held FIFO messages and waiting retries are discarded.
   * Applies to the group and to its broadcast consumers. Resolves with the group's old position.
   */
  resetQueue(group: string, topic: string, queueId: number, offset: number): Promise<number | undefined> {
    return this.admin.resetQueue(group, topic, queueId, offset);
  }

  /** Every (group, topic) with consumption state. */
  groupTopics(): { group: string; topic: string }[] {
    return this.figures.groupTopics();
  }

  groupsOf(topic: string): string[] {
    return this.figures.groupsOf(topic);
  }

  topicsOf(group: string): string[] {
    return this.figures.topicsOf(group);
  }

  /**
   * A topic was deleted (or is created again under a deleted one's name): forget every group's
   * consumption state for it, and delete its queues and every retry topic for it from the store.
   */
  purgeTopic(topic: string): Promise<void> {
    return this.admin.purgeTopic(topic);
  }

  /**
   * A consumer group was deleted (or is created again under a deleted one's name): forget its and its
   * broadcast consumers' consumption state, and delete its retry topics from the store.
   */
  purgeGroup(group: string): Promise<void> {
    return this.admin.purgeGroup(group);
  }

  /** Forget the consumption state of a topic, of a group and its broadcast consumers, or of a pair. */
  forget(filter: { group?: string; topic?: string }): Promise<void> {
    return this.admin.forget(filter);
  }

  // --- state participant -------------------------------------------------------------------------

  apply(rec: StateRecord): boolean {
    return this.records.apply(rec);
  }

  snapshot(): unknown {
    return encodeConsumeSnapshot(this.records.snapshot());
  }

  /**
   * The snapshot the journal writes: walked a piece at a time, so that a large state (many deliveries
   * in flight) never blocks the event loop for long (bench/snapshot-stall.ts).
   */
  snapshotItems(): Iterable<unknown> {
    return consumeSnapshotItems(this.ctx.retryTopicsRenamed, this.records.walk());
  }

  restore(data: unknown): void {
    this.records.restore(decodeConsumeSnapshot(data));
  }

  // --- internals ---------------------------------------------------------------------------------

  /**
   * Messages were taken back (a failed write: see `RollbackListener`): read positions past their
   * queue's new end come back to it and hand-outs of taken-back offsets are dropped, so that the
   * messages that take those offsets next are read. Synchronous, before any later append; the
   * returned promise resolves once that is journalled, and appends wait for it.
   */
  private takeBack(queues: readonly RolledBackQueue[]): Promise<void> | undefined {
    if (queues.length === 0) return undefined;
    const ends = new Map<string, Map<number, number>>();
    for (const q of queues) {
      let m = ends.get(q.topic);
      if (!m) ends.set(q.topic, (m = new Map()));
      m.set(q.queueId, q.end);
    }
    const records: StateRecord[] = [];
    for (const s of this.ctx.states.values()) {
      const topicEnds = ends.get(s.topic);
      if (topicEnds) records.push(...this.clampState(s, Source.TOPIC, topicEnds));
    }
    for (const topic of ends.keys()) this.ctx.waiters.wake(topic);
    if (records.length === 0) return undefined;
    this.ctx.logger.warn({ queues }, 'messages not yet durable were taken back; their hand-outs are undone');
    return this.journalUntilDurable(records);
  }

  /**
   * Append records until they are durable. The disk that refused the messages' write may refuse the
   * journal's too: sends stay refused meanwhile, as they are while the disk is full. Rejects once
   * consumption stops (the store then goes read-only; a restart takes the positions back again).
   */
  private async journalUntilDurable(records: readonly StateRecord[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await Promise.all(records.map((r) => this.ctx.journal.append(r)));
        return;
      } catch (err) {
        if (attempt === 1 || attempt % 60 === 0)
          this.ctx.logger.warn({ err, attempt }, 'could not journal the undone hand-outs; trying again');
        await this.ctx.timers.sleep(1000);
      }
    }
  }

  /**
   * After a restart: a hand-out record can be durable while its message's record is not (a power cut
   * between the two writes). Read positions and hand-outs past each queue's recovered end come back
   * to it, durably, before anything is served.
   */
  private async clampToStore(): Promise<void> {
    const store = this.ctx.store;
    const records: StateRecord[] = [];
    for (const s of [...this.ctx.states.values()]) {
      for (const source of [Source.TOPIC, Source.RETRY]) {
        const topic = source === Source.TOPIC ? s.topic : retryTopicOf(s.group, s.topic);
        const ends = new Map<number, number>();
        for (const [q, next] of s.nextOffsets(source)) {
          const end = store.appendedOffset(topic, q);
          if (next > end) ends.set(q, end);
        }
        if (ends.size === 0) continue;
        this.ctx.logger.warn(
          { group: s.group, topic, queues: [...ends].map(([queueId, end]) => ({ queueId, end })) },
          'read positions past the recovered end of their queues were taken back',
        );
        records.push(...this.clampState(s, source, ends));
      }
    }
    await Promise.all(records.map((r) => this.ctx.journal.append(r)));
  }

  /**
   * Bring a (group, topic)'s read positions of `source` back to `ends` (queue → end) and drop its
   * hand-outs there and past; returns the records that say so.
   */
  private clampState(s: GroupTopicState, source: Source, ends: ReadonlyMap<number, number>): StateRecord[] {
    const positions = s.nextOffsets(source);
    const moved: QueueNext[] = [];
    for (const [queueId, end] of ends) {
      const next = positions.get(queueId);
      if (next !== undefined && next > end) {
        positions.set(queueId, end);
        moved.push({ source, queueId, next: end });
      }
    }
    const dropped: DeliveryKey[] = [];
    for (const [key, d] of s.deliveries) {
      const end = d.source === source ? ends.get(d.queueId) : undefined;
      if (end !== undefined && d.offset >= end) dropped.push(key);
    }
    const records: StateRecord[] = [];
    if (dropped.length > 0)
      records.push(
        settledRecord(
          s,
          dropped.map((k) => settle(this.ctx, s, k)),
        ),
      );
    if (moved.length > 0) {
      const { group, topic } = s;
      records.push({ kind: 'deliveries', group, topic, nextOffsets: moved, deliveries: [], fifoLows: [] });
    }
    return records;
  }

  /** After a restart: each FIFO queue's window holds again what was read but neither settled nor in flight. */
  private async rebuildFifo(s: GroupTopicState): Promise<void> {
    for (const [q, fq] of s.fifo) {
      await rebuildHeld(this.ctx.store, s.topic, q, fq, s.topicNext.get(q) ?? fq.low, (o) =>
        s.deliveries.has(deliveryKey(Source.TOPIC, q, o)),
      );
    }
  }

  /** Receives wait on the topic a retry topic is for. */
  private topicOfRetry(retryTopic: string): string {
    return parseRetryTopic(retryTopic)?.topic ?? retryTopic;
  }
}
