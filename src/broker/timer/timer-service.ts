/**
 * The timer: delivers delay (scheduled) messages at their time, exactly (within a few milliseconds
 * when the broker is not overloaded), and remembers them across crashes without keeping them in
 * memory.
 *
 * A DELAY message is stored on the timer topic (schedule-records.ts); its due time and log position
 * go into the schedule index (store/schedule-index.ts), one file per slab of time. Only the slabs
 * about to fall due are loaded, into a heap; one timer is armed for the earliest entry. When entries
 * are due, a delivery marks them DISPATCHING in their slab (synced), appends their copies to the real
 * topics in one batch (one fsync), then marks them DONE. A crash between the two marks leaves
 * entries whose delivery may or may not have happened; loading their slab again asks the log (the
 * delivered copy carries the waiting record's position), so a message is never delivered twice and
 * never lost. A slab whose entries are all done is deleted.
 *
 * The index is written behind the log and rebuilt from it: the checkpoint names the timer-topic
 * offset up to which the index has every entry, and opening re-indexes the records after it.
 *
 * One file on purpose: the prepare and deliver stages, recall and recovery share one set of private
 * state (the loaded slabs, the ready list, the checkpoint) whose invariants are checked in one place;
 * the record formats (schedule-records.ts) and the on-disk index (store/schedule-index.ts) are apart.
 */
import type { FlushPolicy, TimerSettings } from '../../common/config.js';
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/logger.js';
import { VelaError } from '../../common/errors.js';
import { Timers } from '../../common/timers.js';
import {
  ScheduleIndex,
  ScheduleKind,
  type AppendResult,
  type MessageInput,
  type MessageStore,
  type ScheduleEntry,
  type StoredMessage,
} from '../../store/index.js';
import { TimerFigures } from './timer-figures.js';
import { SerialExecutor } from '../../common/serial-executor.js';
import type { TopicRegistry } from '../topic-registry.js';
import { ScheduleHeap, type HeapEntry } from './schedule-heap.js';
import { FailureLog } from './failure-log.js';
import { Stage } from './stage.js';
import { SlabTable, type Slab } from './slab-table.js';
import {
  REAL_TOPIC,
  SCHEDULE_POSITION,
  TIMER_TOPIC,
  decodeRecallHandle,
  deliveryRecord,
  encodeRecallHandle,
  realQueueOf,
  realTopicOf,
  scheduleRecord,
} from './schedule-records.js';

/** Most entries prepared in one batch (one synced write of marks, reads in parallel). */
const MAX_BATCH = 4096;
/**
 * How long before their time entries are prepared for delivery (marked and read): enough to absorb
 * a slow fsync of the marks on a busy disk, so that the append can happen at the due time. The
 * preparer runs when the earliest unprepared entry is PREPARE_MIN_LEAD_MS away and takes everything
 * due within PREPARE_AHEAD_MS: one synced write of marks per quarter second, not one per entry.
 */
const PREPARE_AHEAD_MS = 500;
const PREPARE_MIN_LEAD_MS = 250;
/** Most entries prepared and waiting for their time, and most bytes of their bodies. */
const MAX_READY = 8192;
const MAX_READY_BYTES = 64 * 1024 * 1024;
/** Loaded entries beyond which no further slab is loaded until some are delivered. */
const MAX_LOADED = 1_000_000;
/** How often the index is synced and its checkpoint written. */
const CHECKPOINT_MS = 1000;
/** After a failed delivery, the wait before trying again. */
const RETRY_MS = 1000;

interface Checkpoint {
  /** Timer-topic offset up to which every record is in the index. */
  offset: number;
  /** Log position just past the last record indexed. */
  position: number;
}

interface Taken extends HeapEntry {
  slab: Slab;
}

interface Ready extends Taken {
  /** The copy to append, or null when there is nothing to deliver. */
  input: MessageInput | null;
}

/** Two lists sorted by due time, merged. */
function mergeByDue<T extends { due: number }>(a: T[], b: T[]): T[] {
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(a[i]!.due <= b[j]!.due ? a[i++]! : b[j++]!);
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}

export interface TimerOptions {
  /** Directory of the schedule index. */
  dir: string;
  flush: FlushPolicy;
  settings: TimerSettings;
}

export interface ScheduledTopic {
  topic: string;
  /** Delay messages waiting for their time. */
  scheduled: number;
  /** When the next of them is due (ms), or null when none waits. */
  nextDueAt: number | null;
}

export interface TimerStatus {
  scheduled: number;
  nextDueAt: number | null;
  topics: ScheduledTopic[];
}

export interface TimerRecovery {
  scheduled: number;
  slabs: number;
  reindexed: number;
  durationMs: number;
}

export class TimerService {
  private readonly slabs: SlabTable;
  private readonly slabOps = new SerialExecutor();
  private readonly timers = new Timers(() => new VelaError('STORE_CLOSED', 'the timer is closing'));
  private readonly preparer: Stage;
  private readonly deliverer: Stage;
  /** Failures that repeat every try (a read-only index, a full disk): logged once per change. */
  private readonly preparing: FailureLog;
  private readonly delivering: FailureLog;
  private readonly checkpoints: FailureLog;
  /** Entries prepared for delivery (marked DISPATCHING, copy built), by due time. */
  private ready: Ready[] = [];
  private readyBytes = 0;
  /** Appends of delivered copies not yet durable. */
  private readonly deliveries = new Set<Promise<void>>();
  /** After a failed append, deliveries pause until then. */
  private deliverBlockedUntil = 0;
  private closed = false;
  private indexed: Checkpoint = { offset: 0, position: 0 };
  private checkpointed: Checkpoint = { offset: 0, position: 0 };
  private checkpointing: Promise<void> | null = null;
  /** Deliveries since start (copies appended to real topics). */
  delivered = 0;
  /** Per-topic counts and latencies since start, for the metrics. */
  readonly figures = new TimerFigures();
  recovery: TimerRecovery = { scheduled: 0, slabs: 0, reindexed: 0, durationMs: 0 };

  private constructor(
    private readonly store: MessageStore,
    private readonly topics: TopicRegistry,
    private readonly index: ScheduleIndex,
    private readonly settings: TimerSettings,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.slabs = new SlabTable((due) => index.slabOf(due));
    const now = () => this.clock.now();
    this.preparing = new FailureLog(logger, 'preparing delay messages', now);
    this.delivering = new FailureLog(logger, 'delivering delay messages', now);
    this.checkpoints = new FailureLog(logger, 'the timer checkpoint', now);
    const stage = (step: () => Promise<boolean>, nextAt: () => number, log: FailureLog) =>
      new Stage({
        timers: this.timers,
        now,
        step,
        nextAt,
        retryMs: RETRY_MS,
        onError: (err, ms) => log.failed(err, ms),
        onSuccess: () => log.succeeded(),
      });
    this.preparer = stage(
      () => this.prepareStep(),
      () => this.nextPrepareAt(),
      this.preparing,
    );
    // Its appends fail apart from its runs (they are not awaited): `deliverStep` reports those.
    this.deliverer = stage(
      () => this.deliverStep(),
      () => this.ready[0]?.due ?? Infinity,
      new FailureLog(logger, "the timer's delivery stage", now),
    );
  }

  static async open(
    store: MessageStore,
    topics: TopicRegistry,
    options: TimerOptions,
    clock: Clock,
    logger: Logger,
  ): Promise<TimerService> {
    const index = await ScheduleIndex.open({
      dir: options.dir,
      sync: options.flush === 'sync',
      logger,
    });
    const timer = new TimerService(store, topics, index, options.settings, clock, logger);
    await timer.recover();
    return timer;
  }

  /** Start delivering. */
  start(): void {
    this.timers.interval(() => void this.checkpoint(), CHECKPOINT_MS, { unref: true });
    this.wake();
  }

  get maxDelayMs(): number {
    return this.settings.maxDelayMs;
  }

  // ---- the send path ---------------------------------------------------------------------------------

  /** Make sure the index knows the topic (durably), before its first delay message is stored. */
  async prepareTopic(topic: string): Promise<void> {
    await this.index.ensureLabel(topic);
  }

  /** The record to store for a delay message due at `due` (call `prepareTopic` first). */
  scheduleRecord(input: MessageInput, due: number): MessageInput {
    return scheduleRecord(input, due);
  }

  /**
   * Index records just stored on the timer topic (synchronously, as their append resolves, so the
   * checkpoint never claims a record that is not indexed). Returns each one's recall handle.
   */
  scheduled(records: readonly { input: MessageInput; result: AppendResult }[]): string[] {
    const entries: ScheduleEntry[] = [];
    const handles: string[] = [];
    let earliest = Infinity;
    const now = this.clock.now();
    for (const { input, result } of records) {
      const due = input.deliveryTimestamp ?? 0;
      const realTopic = input.properties?.[REAL_TOPIC] ?? '';
      const label = this.index.labelOf(realTopic);
      if (label === undefined) throw new Error(`timer: topic of ${input.messageId} was not prepared`);
      const e = { due, position: result.logPosition, label };
      entries.push(e);
      this.slabs.track(e);
      if (result.queueOffset + 1 > this.indexed.offset) {
        this.indexed = { offset: result.queueOffset + 1, position: result.logPosition + result.size };
      }
      if (due < earliest) earliest = due;
      this.figures.scheduled(realTopic, due - now);
      handles.push(encodeRecallHandle({ due, position: result.logPosition, messageId: input.messageId }));
    }
    this.index.add(entries);
    this.preparer.wakeBy(earliest - PREPARE_MIN_LEAD_MS);
    return handles;
  }

  // ---- recall ------------------------------------------------------------------------------------------

  /**
   * Cancel a delay message before it is delivered. Idempotent; refused with RECALL_TOO_LATE once its
   * delivery has begun. Resolves with the message id.
   */
  async recall(topic: string, handle: string): Promise<string> {
    const h = decodeRecallHandle(handle);
    if (!h) throw new VelaError('ILLEGAL_RECALL_HANDLE', 'not a recall handle this broker issued');
    const m = await this.store.getMessage(h.position).catch(() => null);
    if (!m || m.topic !== TIMER_TOPIC || m.messageId !== h.messageId || m.deliveryTimestamp !== h.due) {
      throw new VelaError('SCHEDULED_MESSAGE_NOT_FOUND', `message ${h.messageId} (it may have aged out)`);
    }
    if (realTopicOf(m) !== topic) {
      throw new VelaError(
        'ILLEGAL_RECALL_HANDLE',
        `the handle is for a message of ${realTopicOf(m)}, not ${topic}`,
      );
    }
    return this.slabOps.run(() => this.cancel(m));
  }

  private async cancel(m: StoredMessage): Promise<string> {
    const due = m.deliveryTimestamp;
    const position = m.logPosition;
    const label = this.index.labelOf(realTopicOf(m)) ?? 0;
    const entry = { due, position, label };
    const slab = this.slabs.of(due);
    if (!slab) {
      // The slab is gone: every entry in it was delivered or recalled.
      if (await this.wasDelivered(m)) throw new VelaError('RECALL_TOO_LATE', `message ${m.messageId}`);
      return m.messageId;
    }
    if (slab.state === 'loaded') {
      const s = slab.loaded!;
      if (s.cancelled.has(position)) return m.messageId;
      if (!s.heap.has(position)) {
        // Prepared but not yet due: it can still be taken back.
        const i = this.ready.findIndex((r) => r.position === position);
        if (i < 0) throw new VelaError('RECALL_TOO_LATE', `message ${m.messageId}`);
        this.readyBytes -= this.ready[i]!.input?.body.length ?? 0;
        this.ready.splice(i, 1);
        s.inflight--;
      }
      s.cancelled.add(position);
      this.slabs.untrack(slab, label);
      await this.index.mark(ScheduleKind.CANCELLED, [entry], true);
      return m.messageId;
    }
    // Not loaded (the slab ops are serial, so it is not being loaded either): read it to know.
    const st = await this.index.load(slab.start);
    if (st.cancelled.has(position)) return m.messageId;
    let pending = false;
    for (let i = 0; i < st.pending.length && !pending; i++) pending = st.pending.position[i] === position;
    if (!pending) {
      if (await this.wasDelivered(m)) throw new VelaError('RECALL_TOO_LATE', `message ${m.messageId}`);
      throw new VelaError('SCHEDULED_MESSAGE_NOT_FOUND', `message ${m.messageId}`);
    }
    await this.index.mark(ScheduleKind.CANCELLED, [entry], true);
    this.slabs.untrack(slab, label);
    return m.messageId;
  }

  // ---- status ------------------------------------------------------------------------------------------

  /** How many delay messages wait, per topic, and when the next is due. */
  async status(topic?: string): Promise<TimerStatus> {
    const rows: ScheduledTopic[] = [];
    const labels =
      topic !== undefined
        ? [this.index.labelOf(topic)].filter((l): l is number => l !== undefined)
        : [...this.slabs.totals.keys()];
    for (const label of labels) {
      const scheduled = this.slabs.totals.get(label) ?? 0;
      if (scheduled === 0 && topic === undefined) continue;
      rows.push({
        topic: this.index.nameOf(label) ?? `#${label}`,
        scheduled,
        nextDueAt: scheduled > 0 ? await this.nextDueOf(label) : null,
      });
    }
    if (topic !== undefined && rows.length === 0) rows.push({ topic, scheduled: 0, nextDueAt: null });
    rows.sort((a, b) => a.topic.localeCompare(b.topic));
    const next = rows.reduce<number | null>(
      (n, r) => (r.nextDueAt !== null && (n === null || r.nextDueAt < n) ? r.nextDueAt : n),
      null,
    );
    return { scheduled: rows.reduce((n, r) => n + r.scheduled, 0), nextDueAt: next, topics: rows };
  }

  /** Timer-topic offset up to which the index is synced and checkpointed (and how far it is written). */
  get indexProgress(): { checkpointed: number; indexed: number } {
    return { checkpointed: this.checkpointed.offset, indexed: this.indexed.offset };
  }

  /** Delay messages waiting, all topics. */
  get size(): number {
    return this.slabs.size;
  }

  private async nextDueOf(label: number): Promise<number | null> {
    // Prepared for delivery (the earliest, unless one was scheduled just after), then the slabs.
    let best = this.ready.find((r) => r.label === label)?.due ?? Infinity;
    for (const start of this.slabs.order) {
      if (start > best) break;
      const slab = this.slabs.get(start)!;
      if ((slab.counts.get(label) ?? 0) === 0) continue;
      if (slab.state === 'loaded') {
        best = Math.min(best, slab.loaded!.heap.earliestOf(label, slab.loaded!.cancelled));
        continue;
      }
      const st = await this.slabOps.run(() => this.index.load(start));
      for (const a of [st.pending, st.uncertain]) {
        for (let i = 0; i < a.length; i++) if (a.label[i] === label && a.due[i]! < best) best = a.due[i]!;
      }
    }
    return best === Infinity ? null : best;
  }

  // ---- delivery ----------------------------------------------------------------------------------------
  //
  // Two stages, so that the fsync of the DISPATCHING marks is not on the critical path: `prepare`
  // takes entries due within PREPARE_AHEAD_MS, marks them (synced) and reads their records; `deliver`
  // appends each prepared copy when its time comes (one append, one fsync, per batch).

  /** Look for due entries now (also after the clock was moved by hand in tests). */
  wake(): void {
    this.preparer.wake();
    this.deliverer.wake();
  }

  private async prepareStep(): Promise<boolean> {
    await this.loadDue();
    if (this.readyFull()) return false;
    const batch = this.takeDue(this.clock.now() + PREPARE_AHEAD_MS, MAX_BATCH);
    if (batch.length === 0) return false;
    let records: (StoredMessage | null)[];
    try {
      await this.index.mark(ScheduleKind.DISPATCHING, batch, true);
      records = await Promise.all(batch.map((e) => this.store.getMessage(e.position).catch(() => null)));
    } catch (err) {
      for (const e of batch) this.giveBack(e);
      throw err;
    }
    // Literals, not `{ ...e, more }`: spread copies get a V8 map each, and the schedule index's
    // reads of due, label and position then miss their inline caches (found with `--log-ic`).
    const prepared: Ready[] = batch.map((e, i) => ({
      due: e.due,
      position: e.position,
      label: e.label,
      slab: e.slab,
      input: this.copyOf(e, records[i] ?? null),
    }));
    for (const r of prepared) this.readyBytes += r.input?.body.length ?? 0;
    this.ready = this.ready.length === 0 ? prepared : mergeByDue(this.ready, prepared);
    this.deliverer.wakeBy(this.ready[0]!.due);
    // Run again at once only if there is more than one batch's worth; else when the next is near.
    return batch.length >= MAX_BATCH;
  }

  /**
   * Append the prepared copies that are due now. The append is not awaited: it takes its place in
   * the log (and its store time) at once, so the next due entries need not wait for this batch's
   * fsync; its completion is handled when it is durable.
   */
  private async deliverStep(): Promise<boolean> {
    const now = this.clock.now();
    if (now < this.deliverBlockedUntil) return false;
    let n = 0;
    while (n < this.ready.length && this.ready[n]!.due <= now) n++;
    if (n === 0) return false;
    const batch = this.ready.splice(0, n);
    const inputs = batch.map((r) => r.input).filter((i): i is MessageInput => i !== null);
    for (const i of inputs) this.readyBytes -= i.body.length;
    const appended = inputs.length > 0 ? this.store.append(inputs) : Promise.resolve([]);
    const done = appended.then(
      () => {
        this.delivering.succeeded();
        for (const r of batch) if (r.input) this.figures.delivered(r.input.topic, now - r.due);
        return this.settleDelivery(batch, inputs.length);
      },
      (err: unknown) => {
        // Nothing of the batch is stored: try again a little later.
        this.ready = mergeByDue(batch, this.ready);
        for (const i of inputs) this.readyBytes += i.body.length;
        this.deliverBlockedUntil = this.clock.now() + RETRY_MS;
        if (!this.closed) this.delivering.failed(err, RETRY_MS);
        this.deliverer.wakeBy(this.deliverBlockedUntil);
      },
    );
    this.deliveries.add(done);
    void done.finally(() => this.deliveries.delete(done));
    return true;
  }

  /** A batch is durable in its topics: mark it done, and retire slabs it emptied. */
  private async settleDelivery(batch: Ready[], count: number): Promise<void> {
    this.delivered += count;
    // Written with the next flush: a restart that misses them finds the DISPATCHING marks and asks
    // the log, which says they were delivered.
    this.index.markLater(ScheduleKind.DONE, batch);
    const touched = new Set<Slab>();
    for (const e of batch) {
      e.slab.loaded!.inflight--;
      this.slabs.untrack(e.slab, e.label);
      touched.add(e.slab);
    }
    for (const slab of touched) await this.retireIfDone(slab);
    this.preparer.wake(); // room in `ready`
  }

  /** The copy to append for a waiting record, or null when there is nothing to deliver (logged). */
  private copyOf(e: HeapEntry, m: StoredMessage | null): MessageInput | null {
    if (!m || m.topic !== TIMER_TOPIC) {
      this.logger.error(
        { position: e.position, due: e.due },
        'a scheduled message is no longer in the log (removed by retention before its time): not delivered',
      );
      return null;
    }
    const topic = this.topics.get(realTopicOf(m));
    if (!topic) {
      this.logger.warn(
        { topic: realTopicOf(m), messageId: m.messageId },
        'scheduled message dropped: its topic no longer exists',
      );
      return null;
    }
    return deliveryRecord(m, realQueueOf(m, topic.writeQueueNums));
  }

  /** Put an entry taken for delivery back (its delivery failed before anything was stored). */
  private giveBack(e: Taken): void {
    e.slab.loaded!.inflight--;
    e.slab.loaded!.heap.push(e.due, e.position, e.label);
  }

  private readyFull(): boolean {
    return this.ready.length >= MAX_READY || this.readyBytes >= MAX_READY_BYTES;
  }

  /** When `prepare` will next have work. */
  private nextPrepareAt(): number {
    if (this.readyFull()) return Infinity; // `deliver` wakes it
    let next = Infinity;
    const lookahead = this.index.slabMs;
    const mayLoad = this.loadedEntries() <= MAX_LOADED;
    let sawUnloaded = false;
    for (const start of this.slabs.order) {
      // A slab's entries are due at or after its start (and it is loaded a span earlier).
      if (start - lookahead > next) break;
      const slab = this.slabs.get(start)!;
      if (slab.state === 'loaded') next = Math.min(next, slab.loaded!.heap.peekDue() - PREPARE_MIN_LEAD_MS);
      else if (!sawUnloaded) {
        sawUnloaded = true;
        if (mayLoad) next = Math.min(next, start - lookahead);
      }
    }
    return next;
  }

  /** Load every slab that starts within a slab's span from now (as memory allows). */
  private async loadDue(): Promise<void> {
    const horizon = this.clock.now() + this.index.slabMs;
    for (;;) {
      if (this.closed || this.loadedEntries() > MAX_LOADED) return;
      let target: Slab | undefined;
      for (const start of this.slabs.order) {
        if (start > horizon) break;
        const slab = this.slabs.get(start)!;
        if (slab.state === 'unloaded') {
          target = slab;
          break;
        }
      }
      if (!target) return;
      const slab = target;
      await this.slabOps.run(() => this.load(slab));
    }
  }

  /** Entries held in memory (the loaded slabs): bounded, whatever the number scheduled. */
  loadedEntries(): number {
    return this.slabs.loadedEntries();
  }

  private async load(slab: Slab): Promise<void> {
    if (slab.state !== 'unloaded' || this.slabs.get(slab.start) !== slab) return;
    slab.state = 'loading';
    slab.lateAdds = [];
    try {
      const st = await this.index.load(slab.start);
      const heap = ScheduleHeap.from(st.pending);
      // Deliveries a crash (or a close) interrupted: the log says whether each completed.
      const done: ScheduleEntry[] = [];
      for (let i = 0; i < st.uncertain.length; i++) {
        const e = {
          due: st.uncertain.due[i]!,
          position: st.uncertain.position[i]!,
          label: st.uncertain.label[i]!,
        };
        const m = await this.store.getMessage(e.position).catch(() => null);
        if (m && !(await this.wasDelivered(m))) heap.push(e.due, e.position, e.label);
        else done.push(e);
      }
      if (done.length > 0) {
        await this.index.mark(ScheduleKind.DONE, done, false);
        for (const e of done) this.slabs.untrack(slab, e.label);
        this.logger.info(
          { slab: slab.start, completed: done.length },
          'deliveries interrupted by a crash had completed',
        );
      }
      const late = slab.lateAdds;
      if (late.length > 0) {
        const known = new Set<number>();
        for (let i = 0; i < st.pending.length; i++) known.add(st.pending.position[i]!);
        for (const e of late) if (!known.has(e.position)) heap.push(e.due, e.position, e.label);
      }
      slab.maxPosition = Math.max(slab.maxPosition, st.maxPosition);
      this.slabs.markLoaded(slab, { heap, cancelled: st.cancelled, inflight: 0 });
    } catch (err) {
      slab.state = 'unloaded';
      throw err;
    } finally {
      delete slab.lateAdds;
    }
  }

  /** Take up to `max` entries due by `until`, earliest first. */
  private takeDue(until: number, max: number): Taken[] {
    const batch: Taken[] = [];
    for (const start of this.slabs.order) {
      if (start > until || batch.length >= max) break;
      const slab = this.slabs.get(start)!;
      const s = slab.loaded;
      if (!s) continue;
      while (batch.length < max && s.heap.peekDue() <= until) {
        const e = s.heap.pop()!;
        if (s.cancelled.has(e.position)) continue;
        s.inflight++;
        batch.push({ due: e.due, position: e.position, label: e.label, slab });
      }
    }
    return batch;
  }

  /** Whether the waiting record `m` was delivered (its copy is in the real topic). */
  private async wasDelivered(m: StoredMessage): Promise<boolean> {
    const copies = await this.store.findById(m.messageId, { topic: realTopicOf(m), limit: 64 });
    const pos = String(m.logPosition);
    return copies.some((c) => c.properties[SCHEDULE_POSITION] === pos);
  }

  /** Delete a slab that is over, fully delivered and covered by the checkpoint. */
  private async retireIfDone(slab: Slab): Promise<void> {
    const s = slab.loaded;
    if (!s || s.heap.size > 0 || s.inflight > 0) return;
    if (slab.start + this.index.slabMs > this.clock.now()) return;
    // Until the checkpoint covers every entry, a crash would re-index some of them.
    if (slab.maxPosition >= this.checkpointed.position) return;
    if (this.slabs.get(slab.start) !== slab) return;
    // An entry scheduled from now on for this slab's time makes a new slab; the file stays for it.
    const generation = this.index.generation(slab.start);
    this.slabs.remove(slab);
    await this.index.delete(slab.start, generation);
  }

  // ---- recovery and checkpoints ------------------------------------------------------------------------

  private async recover(): Promise<void> {
    const t0 = performance.now();
    const ckpt = (await this.index.readCheckpoint<Checkpoint>()) ?? { offset: 0, position: 0 };
    this.indexed = { ...ckpt };
    // Index what the log has beyond the checkpoint (an entry indexed twice counts once).
    let reindexed = 0;
    let offset = ckpt.offset;
    for (;;) {
      const r = await this.store.read(TIMER_TOPIC, 0, offset, { maxCount: 1024, maxBytes: 64 << 20 });
      if (r.status === 'OFFSET_TOO_SMALL') {
        offset = r.nextOffset;
        continue;
      }
      if (r.messages.length === 0) break;
      const entries: ScheduleEntry[] = [];
      for (const m of r.messages) {
        const topic = realTopicOf(m);
        const label = this.index.labelOf(topic) ?? (await this.index.ensureLabel(topic));
        entries.push({ due: m.deliveryTimestamp, position: m.logPosition, label });
        this.indexed = { offset: m.queueOffset + 1, position: m.logPosition + m.size };
      }
      this.index.add(entries);
      reindexed += entries.length;
      offset = r.nextOffset;
    }
    await this.index.sync();
    await this.index.writeCheckpoint(this.indexed);
    this.checkpointed = { ...this.indexed };
    for (const s of await this.index.summarize()) {
      this.slabs.ensure(s.start).maxPosition = s.maxPosition;
      for (const [label, n] of s.counts) this.slabs.restore(s.start, label, n);
    }
    this.recovery = {
      scheduled: this.size,
      slabs: this.slabs.count,
      reindexed,
      durationMs: Math.round(performance.now() - t0),
    };
    this.logger.info({ timer: this.recovery }, 'timer opened');
  }

  /** Sync the index and record how far it is complete; then retire slabs that waited for it. */
  checkpoint(): Promise<void> {
    if (this.checkpointing) return this.checkpointing;
    // Cleared in a `.finally`, which always runs after this assignment (even when nothing awaits).
    const run = this.checkpointNow().finally(() => {
      if (this.checkpointing === run) this.checkpointing = null;
    });
    this.checkpointing = run;
    return run;
  }

  private async checkpointNow(): Promise<void> {
    try {
      const target = { ...this.indexed };
      if (target.offset !== this.checkpointed.offset) {
        await this.index.sync();
        await this.index.writeCheckpoint(target);
        this.checkpointed = target;
      } else if (this.index.hasBuffered) await this.index.flush(); // DONE marks
      for (const slab of [...this.slabs.loaded]) await this.retireIfDone(slab);
      this.checkpoints.succeeded();
    } catch (err) {
      if (!this.closed) this.checkpoints.failed(err, CHECKPOINT_MS);
    }
  }

  /** Stop delivering, finish the delivery under way, write the index and its checkpoint. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.preparer.stop(), this.deliverer.stop()]);
    await Promise.all([...this.deliveries]);
    this.timers.clear();
    await this.checkpointing;
    for (const log of [this.preparing, this.delivering, this.checkpoints]) log.close();
    const target = { ...this.indexed };
    await this.index.sync();
    await this.index.writeCheckpoint(target);
    await this.index.close();
  }
}
