/**
 * Queue-granularity consumption (pull consumers): each readable queue of a topic is owned by one live
 * consumer of the group (allocateAveragely over sorted queues and client ids), consumers read by
 * offset and commit offsets, which the broker keeps (offsets.ts). Broadcast groups: every consumer
 * owns every queue and commits under its own name.
 *
 * A pull below the queue's first stored offset (retention removed it) is answered with the offset to
 * continue from, not an error that stops the consumer; so is a pull after an admin reset.
 *
 * A message stored with a due time (a retry waiting in `%RETRY%<group>`) is handed out only once due:
 * a pull stops at the first message of the queue that is not, and long-polls until it is. Such
 * queues hold due times in storage order, so nothing behind a waiting message is ever due earlier.
 */
import type { CancelSignal } from '../common/cancel-signal.js';
import type { Clock } from '../common/clock.js';
import { VelaError } from '../common/errors.js';
import type { MessageStore, StoredMessage } from '../store/index.js';
import type { TagFilter } from './filter.js';
import { Perm } from './metadata.js';
import type { TopicRegistry } from './topic-registry.js';
import type { GroupRegistry } from './group-registry.js';
import type { SessionRegistry, ClientSession } from './sessions.js';
import type { OffsetStore } from './offsets.js';
import { allocateAveragely } from './assignment.js';
import type { ParkingLot } from './consume/long-poll.js';
import { LongPollWaiters, type Parker } from './consume/long-poll.js';
import type { PullObserver } from './consume-observer.js';

export interface PullRequest {
  group: string;
  topic: string;
  queueId: number;
  offset: number;
  /** @defaultValue 32; at most 1024 */
  batchSize?: number;
  filter: TagFilter;
  pollMs: number;
  clientId: string;
  /** Whom the parking limits count this pull against, when not the client id (a Remoting connection). */
  parker?: string;
  signal?: CancelSignal;
}

export type PullStatus =
  /** Messages (possibly none when the filter matched nothing in the range read). */
  | 'FOUND'
  /** Nothing after `offset` before the poll time ended. */
  | 'NO_NEW_MESSAGE'
  /** Continue from `nextOffset`: the requested offset was removed by retention, is past the end, or an admin reset moved the group. */
  | 'OFFSET_MOVED';

export interface PullResult {
  status: PullStatus;
  messages: StoredMessage[];
  nextOffset: number;
  minOffset: number;
  maxOffset: number;
  /** Why the offset moved. */
  reason?: string;
}

export const MAX_PULL_BATCH = 1024;
const PULL_MAX_BYTES = 8 * 1024 * 1024;

/** Client property by which a consumer declares broadcast consumption. */
export const CONSUME_MODE_PROPERTY = 'vela.consume.mode';
/** Client property naming a broadcast consumer across restarts (its offsets are kept under it). */
export const CONSUMER_NAME_PROPERTY = 'vela.consumer.name';

export class PullService {
  private readonly waiters: LongPollWaiters;
  /** Told of the messages each pull returns (counters, delivery history); set by the broker. */
  observer?: PullObserver;
  /** Told each time a broadcast consumer's state is used (broadcast-retention.ts); set by the broker. */
  onBroadcastUse?: (consumer: string) => void;

  constructor(
    private readonly store: MessageStore,
    private readonly topics: TopicRegistry,
    private readonly groups: GroupRegistry,
    private readonly sessions: SessionRegistry,
    private readonly offsets: OffsetStore,
    private readonly requireGroup: (name: string) => Promise<unknown>,
    private readonly maxPollMs: number,
    private readonly clock: Clock,
    /** Other members sharing the group's queues (queue-granularity clients registered by heartbeat). */
    private readonly otherMembers: (group: string) => readonly string[] = () => [],
    /** Where parked pulls wait: the lot the broker's receives share (unlimited when absent). */
    parking?: ParkingLot,
  ) {
    this.waiters = new LongPollWaiters(parking);
    // A pull reads one queue: it waits on that queue only, so an arrival wakes the pulls of its queue.
    store.onArrival((topic, queueId) => this.waiters.wake(parkedOn(topic, queueId)));
  }

  stop(): void {
    this.waiters.wakeAll();
  }

  /** Whether a session declared broadcast consumption (and its group allows it). */
  isBroadcast(session: ClientSession | undefined, group: string): boolean {
    return (
      session?.properties?.[CONSUME_MODE_PROPERTY]?.toUpperCase() === 'BROADCASTING' &&
      this.groups.get(group)?.consumeBroadcastEnable !== false
    );
  }

  /**
   * The name offsets and consumption state are kept under: the group itself, or for a broadcast
   * consumer `group%BROADCAST%<consumer name>`.
   */
  effectiveGroup(group: string, clientId: string): string {
    const s = this.sessions.get(clientId);
    if (!this.isBroadcast(s, group)) return group;
    const name = s?.properties?.[CONSUMER_NAME_PROPERTY] || clientId;
    const consumer = `${group}%BROADCAST%${name}`;
    this.onBroadcastUse?.(consumer);
    return consumer;
  }

  /** The broadcast consumers (`group%BROADCAST%<name>`) that live sessions stand for. */
  liveBroadcastConsumers(): string[] {
    return this.sessions
      .list()
      .filter((s) => s.group && this.sessions.isAlive(s.clientId) && this.isBroadcast(s, s.group))
      .map((s) => `${s.group}%BROADCAST%${s.properties?.[CONSUMER_NAME_PROPERTY] || s.clientId}`);
  }

  /** The queues of `topic` this client owns in its group. */
  async assignment(group: string, topic: string, clientId: string): Promise<number[]> {
    await this.requireGroup(group);
    const t = this.topics.require(topic);
    if ((t.perm & Perm.READ) === 0) throw new VelaError('FORBIDDEN', `no readable queue in ${topic}`);
    const queues = Array.from({ length: t.readQueueNums }, (_, i) => i);
    if (this.isBroadcast(this.sessions.get(clientId), group)) return queues;
    const live = this.sessions
      .list({ group })
      .filter(
        (s) =>
          s.clientType === 'PULL_CONSUMER' &&
          this.sessions.isAlive(s.clientId) &&
          !this.isBroadcast(s, group),
      )
      .map((s) => s.clientId);
    for (const id of this.otherMembers(group)) if (!live.includes(id)) live.push(id);
    if (!live.includes(clientId)) live.push(clientId);
    return allocateAveragely(queues, live, clientId);
  }

  /** Read a queue from an offset, long-polling at the end. */
  async pull(req: PullRequest): Promise<PullResult> {
    await this.requireGroup(req.group);
    const t = this.topics.require(req.topic);
    if ((t.perm & Perm.READ) === 0) throw new VelaError('FORBIDDEN', `topic ${req.topic} is not readable`);
    if (!Number.isInteger(req.queueId) || req.queueId < 0 || req.queueId >= t.readQueueNums) {
      throw new VelaError(
        'BAD_REQUEST',
        `queue ${req.queueId} is not a readable queue of ${req.topic} (0…${t.readQueueNums - 1})`,
      );
    }
    if (!Number.isInteger(req.offset) || req.offset < 0)
      throw new VelaError('ILLEGAL_OFFSET', `offset ${req.offset}`);
    const group = this.effectiveGroup(req.group, req.clientId);
    const reset = this.offsets.takeReset(group, req.topic, req.queueId);
    const q = () => this.store.queueState(req.topic, req.queueId);
    if (reset !== undefined && reset !== req.offset) {
      return {
        status: 'OFFSET_MOVED',
        messages: [],
        nextOffset: reset,
        minOffset: q().minOffset,
        maxOffset: q().maxOffset,
        reason: `the offset of ${req.group} was reset to ${reset}`,
      };
    }
    const batch = Math.min(MAX_PULL_BATCH, Math.max(1, req.batchSize ?? 32));
    const until = this.clock.now() + Math.max(0, Math.min(req.pollMs, this.maxPollMs));
    // Pulls read without taking: every parked pull of the queue is woken (no wake key).
    const parker: Parker = { client: req.parker ?? req.clientId, group };
    for (;;) {
      // Register interest before looking, so an arrival during the read is not missed.
      let wait = this.waiters.park(
        parkedOn(req.topic, req.queueId),
        until - this.clock.now(),
        parker,
        req.signal,
      );
      let r;
      try {
        r = await this.store.read(req.topic, req.queueId, req.offset, {
          maxCount: batch,
          maxBytes: PULL_MAX_BYTES,
          tagHashes: req.filter.hashes,
        });
      } catch (err) {
        wait.cancel();
        throw err;
      }
      const base = { minOffset: r.minOffset, maxOffset: r.maxOffset };
      if (r.status === 'OFFSET_TOO_SMALL' || r.status === 'OFFSET_OVERFLOW') {
        wait.cancel();
        return {
          status: 'OFFSET_MOVED',
          messages: [],
          nextOffset: r.nextOffset,
          ...base,
          reason:
            r.status === 'OFFSET_TOO_SMALL'
              ? `offset ${req.offset} was removed by retention; the queue now starts at ${r.nextOffset}`
              : `offset ${req.offset} is past the end of the queue (${r.nextOffset})`,
        };
      }
      const now = this.clock.now();
      if (r.status === 'FOUND') {
        const notDue = r.messages.findIndex((m) => m.deliveryTimestamp > now);
        if (notDue !== 0) {
          wait.cancel();
          const due = notDue < 0 ? r.messages : r.messages.slice(0, notDue);
          const messages = due.filter((m) => req.filter.matches(m.tag));
          if (messages.length > 0)
            this.observer?.pulled(group, req.topic, req.queueId, req.clientId, messages);
          return {
            status: 'FOUND',
            messages,
            nextOffset: notDue < 0 ? r.nextOffset : r.messages[notDue]!.queueOffset,
            ...base,
          };
        }
        // The head is not due yet: wait for it (or for the poll to end).
        wait.cancel();
        if (now < until && !req.signal?.aborted) {
          wait = this.waiters.park(
            parkedOn(req.topic, req.queueId),
            Math.min(until, r.messages[0]!.deliveryTimestamp) - now,
            parker,
            req.signal,
          );
        }
      }
      if (now >= until || req.signal?.aborted) {
        wait.cancel();
        return { status: 'NO_NEW_MESSAGE', messages: [], nextOffset: req.offset, ...base };
      }
      // Nothing to hand out: only now does the pull need a place to wait.
      const refused = wait.hold();
      if (refused) {
        wait.cancel();
        throw refused;
      }
      const why = await wait.promise;
      if (why === 'displaced' || why === 'stopped') {
        return { status: 'NO_NEW_MESSAGE', messages: [], nextOffset: req.offset, ...base };
      }
    }
  }

  async commit(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
    clientId: string,
  ): Promise<void> {
    await this.requireGroup(group);
    const t = this.topics.require(topic);
    if (!Number.isInteger(queueId) || queueId < 0 || queueId >= Math.max(t.readQueueNums, t.writeQueueNums)) {
      throw new VelaError('BAD_REQUEST', `queue ${queueId} of ${topic}`);
    }
    if (!Number.isInteger(offset) || offset < 0) throw new VelaError('ILLEGAL_OFFSET', `offset ${offset}`);
    this.sessions.touch(clientId);
    await this.offsets.commit(this.effectiveGroup(group, clientId), topic, queueId, offset);
  }

  /** The committed offset, or OFFSET_NOT_FOUND when the group never committed one for the queue. */
  async committed(group: string, topic: string, queueId: number, clientId: string): Promise<number> {
    await this.requireGroup(group);
    this.topics.require(topic);
    const o = this.offsets.get(this.effectiveGroup(group, clientId), topic, queueId);
    if (!o)
      throw new VelaError(
        'OFFSET_NOT_FOUND',
        `${group} has no committed offset for ${topic} queue ${queueId}`,
      );
    return o.offset;
  }

  /** QueryOffset: the first stored offset, the end, or the first offset stored at or after a time. */
  async queryOffset(
    topic: string,
    queueId: number,
    policy: 'BEGINNING' | 'END' | 'TIMESTAMP',
    timestamp?: number,
  ): Promise<number> {
    this.topics.require(topic);
    const q = this.store.queueState(topic, queueId);
    if (policy === 'BEGINNING') return q.minOffset;
    if (policy === 'END') return q.maxOffset;
    if (timestamp === undefined) throw new VelaError('BAD_REQUEST', 'a TIMESTAMP query needs a timestamp');
    return this.store.offsetForTimestamp(topic, queueId, timestamp);
  }
}

/** Where a pull of one queue waits (the waiters' topic key). */
function parkedOn(topic: string, queueId: number): string {
  return `${topic}\u0000${queueId}`;
}
