/**
 * Parked receives and pulls, by topic. A request that found nothing parks until a message arrives on
 * its topic (or a delivery of it becomes ready again), its poll time ends, or its caller gives up.
 *
 * A request registers before it looks for messages (so an arrival during the look is not missed) but
 * takes a place in the `ParkingLot` only once it found none: a request with messages waiting is never
 * refused for lack of room. The lot bounds parked requests per client, per group and broker-wide;
 * when it is full, the client holding the most gives up its oldest (answered empty) for a client that
 * holds fewer, so one client parking thousands of receives cannot lock out the others.
 *
 * Requests that compete for the same messages (the receives of one group with one filter) share a
 * wake key: an arrival wakes the oldest of them only, and a woken request that took messages (or
 * left without looking) passes the wake on to the next. One message no longer wakes a thousand
 * receives to find it gone. Requests without a key (pulls, which read without taking) are all woken.
 */
import { VelaError } from '../../common/errors.js';
import type { CancelSignal } from '../../common/cancel-signal.js';
import { MAX_TIMER_MS } from '../../common/timers.js';
import { KeptKeyMap } from '../../common/kept-key-map.js';
import { OrderedList, type ListNode } from '../../common/ordered-list.js';

/** Why a parked request stopped waiting. */
export type WakeReason = 'woken' | 'timeout' | 'aborted' | 'displaced' | 'stopped';

export interface ParkingLimits {
  /** Requests parked at once, broker-wide. */
  readonly total: number;
  /** Requests parked at once by one client. */
  readonly perClient: number;
  /** Requests parked at once for one consumer group. */
  readonly perGroup: number;
}

/** Who parks: the limits count by client and group; the wake key groups requests competing for the same messages. */
export interface Parker {
  client: string;
  group: string;
  /** Absent: woken by every arrival on the topic. */
  wakeKey?: string;
  /**
   * The request reads messages as soon as they are appended (a receive of a group that is not
   * orderly): woken by appends, not by the same messages becoming durable.
   */
  early?: boolean;
}

export interface Parking {
  /** Resolves with why the wait ended. */
  readonly promise: Promise<WakeReason>;
  /**
   * Take a place in the lot (the request looked and found nothing): undefined, or the error to
   * answer with when the client or its group already has its share parked. May displace another
   * client's oldest request to make room.
   */
  hold(): VelaError | undefined;
  /** Stop waiting (the request is answered). */
  cancel(): void;
  /** Wake the next request of the same key (this one took messages, or was woken and left without looking). */
  passOn(): void;
  /** An arrival (or a delivery ready again) woke this wait: a request that looked before it may have missed it. */
  readonly woken: boolean;
}

/**
 * One registered request, and the `Parking` its caller holds. Registering costs this object and a list
 * node; the timer, the abort listener and the promise come only when the request looked, found nothing
 * and holds a place (`hold`) — most requests under load find messages and never wait.
 *
 * The caller's handle is the entry itself, not an object literal with getters: V8 gives an object
 * whose accessors are new closures a hidden class of its own, allocated in the old generation, and
 * that class kept the closures — and through them the request, its call and everything it read —
 * alive past young-generation collections until the next full one. A broker parking a request per
 * receive and per pull promoted most of what those requests allocated (`docs/benchmarks.md`,
 * twenty-third session).
 */
class Entry implements Parking {
  settled = false;
  counted = false;
  woken = false;
  /** Set once settled. */
  reason: WakeReason = 'timeout';
  private timer: NodeJS.Timeout | undefined;
  private resolve: ((why: WakeReason) => void) | undefined;
  private waiting: Promise<WakeReason> | undefined;
  private onAbort: (() => void) | undefined;
  /** When the registration was made (performance.now()), for the time left when it starts waiting. */
  private readonly since = performance.now();
  /** Its places in its key's list and in its client's (ordered-list.ts: not Sets). */
  keyNode: ListNode<Entry> | undefined;
  clientNode: ListNode<Entry> | undefined;

  constructor(
    readonly topic: string,
    /** The wake key; none for a request every arrival wakes (pulls). */
    readonly key: string | undefined,
    readonly parker: Parker,
    private readonly owner: LongPollWaiters,
    private readonly ms: number,
    private readonly signal: CancelSignal | undefined,
  ) {}

  finish(why: WakeReason): void {
    if (this.settled) return;
    this.settled = true;
    this.reason = why;
    this.woken = why === 'woken';
    if (this.timer) clearTimeout(this.timer);
    if (this.onAbort) this.signal?.removeEventListener('abort', this.onAbort);
    this.owner.forget(this);
    const resolve = this.resolve;
    this.resolve = undefined;
    resolve?.(why);
  }

  /** Start waiting: the poll time left, and the caller's abort. */
  arm(): void {
    if (this.settled || this.resolve) return;
    this.waiting = new Promise<WakeReason>((resolve) => (this.resolve = resolve));
    if (this.signal?.aborted) return this.finish('aborted');
    const left = this.ms - (performance.now() - this.since);
    if (left <= 0) return this.finish('timeout');
    // Callers look again when a wait ends early, so a wait past one timer's range is cut to it.
    this.timer = setTimeout(() => this.finish('timeout'), Math.min(left, MAX_TIMER_MS));
    if (this.signal) {
      this.onAbort = () => this.finish('aborted');
      this.signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  hold(): VelaError | undefined {
    if (this.settled || this.counted) return undefined;
    const refused = this.owner.lot.enter(this);
    if (!refused) this.arm();
    return refused;
  }

  cancel(): void {
    this.finish('timeout');
  }

  passOn(): void {
    if (this.key !== undefined) this.owner.wakeOne(this.topic, this.key);
  }

  get promise(): Promise<WakeReason> {
    if (!this.waiting && !this.settled) this.arm();
    return this.waiting ?? Promise.resolve(this.reason);
  }
}

/** The places parked requests take, shared by every `LongPollWaiters` of a broker. */
export class ParkingLot {
  private total = 0;
  /** Counted entries per client, oldest first. */
  private readonly byClient = new KeptKeyMap<string, OrderedList<Entry>>();
  private readonly byGroup = new KeptKeyMap<string, number>();

  constructor(readonly limits: ParkingLimits) {}

  /** Requests holding a place. */
  get parked(): number {
    return this.total;
  }

  /** Places held by one client. */
  parkedBy(client: string): number {
    return this.byClient.get(client)?.size ?? 0;
  }

  /** Count `e`, or say why it may not park. */
  enter(e: Entry): VelaError | undefined {
    const { client, group } = e.parker;
    const mine = this.parkedBy(client);
    if (mine >= this.limits.perClient) {
      return new VelaError(
        'TOO_MANY_REQUESTS',
        `client ${client} already has ${mine} requests waiting (at most ${this.limits.perClient})`,
      );
    }
    const ofGroup = this.byGroup.get(group) ?? 0;
    if (ofGroup >= this.limits.perGroup) {
      return new VelaError(
        'TOO_MANY_REQUESTS',
        `group ${group} already has ${ofGroup} requests waiting (at most ${this.limits.perGroup})`,
      );
    }
    if (this.total >= this.limits.total) {
      // Full: the client holding the most gives up its oldest, if that makes the shares more even.
      let victim: OrderedList<Entry> | undefined;
      for (const list of this.byClient.values()) if (!victim || list.size > victim.size) victim = list;
      if (!victim || victim.size <= mine + 1) {
        return new VelaError(
          'TOO_MANY_REQUESTS',
          `${this.total} requests are already waiting (at most ${this.limits.total})`,
        );
      }
      victim.first()!.finish('displaced');
    }
    e.counted = true;
    this.total++;
    let list = this.byClient.get(client);
    if (!list) this.byClient.set(client, (list = new OrderedList()));
    e.clientNode = list.push(e);
    this.byGroup.set(group, ofGroup + 1);
    return undefined;
  }

  leave(e: Entry): void {
    if (!e.counted) return;
    e.counted = false;
    this.total--;
    const { client, group } = e.parker;
    const list = this.byClient.get(client);
    if (list && e.clientNode) list.remove(e.clientNode);
    e.clientNode = undefined;
    if (list?.size === 0) this.byClient.delete(client);
    const n = (this.byGroup.get(group) ?? 1) - 1;
    if (n > 0) this.byGroup.set(group, n);
    else this.byGroup.delete(group);
  }
}

/** Empty wake-key sets kept for reuse before they are all pruned. */
const MAX_EMPTY_SETS = 1024;

const UNLIMITED: ParkingLimits = { total: Infinity, perClient: Infinity, perGroup: Infinity };

/** A topic's parked requests: by wake key (receives), and those without one (pulls), oldest first. */
class TopicWaiters {
  readonly keyed = new KeptKeyMap<string, OrderedList<Entry>>();
  readonly unkeyed = new OrderedList<Entry>();
}

export class LongPollWaiters {
  /**
   * topic → its waiters. No map entry per request: a pull's entry goes in its topic's list of
   * requests without a key (a key of its own per pull made a map churn at the pull rate, and a
   * churning map keeps what it held alive: kept-key-map.ts).
   */
  private readonly byTopic = new KeptKeyMap<string, TopicWaiters>();
  private stopped = false;
  /** Empty key lists kept in `byTopic` (at most MAX_EMPTY_SETS). */
  private empties = 0;

  constructor(readonly lot: ParkingLot = new ParkingLot(UNLIMITED)) {}

  park(topic: string, ms: number, parker: Parker, signal?: CancelSignal): Parking {
    const key = parker.wakeKey;
    const entry = new Entry(topic, key, parker, this, ms, signal);
    if (this.stopped) entry.finish('stopped');
    else if (signal?.aborted) entry.finish('aborted');
    else if (ms <= 0) entry.finish('timeout');
    else this.add(entry);
    return entry;
  }

  /**
   * Something arrived on `topic` (for `group` only, when given): wake the oldest request of each key,
   * and every request without one. With `early`, only the requests that read appended messages
   * (true: the messages were appended) or only the others (false: they became durable).
   */
  wake(topic: string, group?: string, early?: boolean): void {
    const t = this.byTopic.get(topic);
    if (!t) return;
    const fits = (x: Entry): boolean =>
      (early === undefined || (x.parker.early === true) === early) &&
      (group === undefined || x.parker.group === group);
    for (const list of t.keyed.values()) {
      // One key is one group; its requests differ in `early` only across a change of the group's
      // kind: the oldest that matches.
      const e = list.find((x) => early === undefined || (x.parker.early === true) === early);
      if (e && (group === undefined || e.parker.group === group)) e.finish('woken');
    }
    if (t.unkeyed.size > 0) for (const e of t.unkeyed.values()) if (fits(e)) e.finish('woken');
  }

  /** Wake the oldest request of one key. */
  wakeOne(topic: string, key: string): void {
    this.byTopic.get(topic)?.keyed.get(key)?.first()?.finish('woken');
  }

  /** Answer everyone (shutdown). */
  wakeAll(): void {
    this.stopped = true;
    for (const t of this.byTopic.values()) {
      for (const list of t.keyed.values()) for (const e of list.values()) e.finish('stopped');
      for (const e of t.unkeyed.values()) e.finish('stopped');
    }
  }

  /** Requests registered here (parked, or looking for messages before parking). */
  get parked(): number {
    let n = 0;
    for (const t of this.byTopic.values()) {
      n += t.unkeyed.size;
      for (const list of t.keyed.values()) n += list.size;
    }
    return n;
  }

  /** @internal an entry settled: out of its list and out of the lot. */
  forget(e: Entry): void {
    this.lot.leave(e);
    const t = this.byTopic.get(e.topic);
    const node = e.keyNode;
    e.keyNode = undefined;
    if (!t || !node) return;
    if (e.key === undefined) {
      t.unkeyed.remove(node);
      return;
    }
    const list = t.keyed.get(e.key);
    if (!list || !list.remove(node) || list.size > 0) return;
    // A key's empty list stays for its next request (one receive after another would otherwise
    // build and drop a list each time); empties are pruned once there are many.
    if (++this.empties > MAX_EMPTY_SETS) this.pruneEmpty();
  }

  private add(e: Entry): void {
    let t = this.byTopic.get(e.topic);
    if (!t) this.byTopic.set(e.topic, (t = new TopicWaiters()));
    if (e.key === undefined) {
      e.keyNode = t.unkeyed.push(e);
      return;
    }
    let list = t.keyed.get(e.key);
    if (!list) t.keyed.set(e.key, (list = new OrderedList()));
    else if (list.size === 0) this.empties--;
    e.keyNode = list.push(e);
  }

  private pruneEmpty(): void {
    for (const topic of this.byTopic.keys()) {
      const t = this.byTopic.get(topic)!;
      for (const key of t.keyed.keys()) if (t.keyed.get(key)!.size === 0) t.keyed.delete(key);
      if (t.keyed.size === 0 && t.unkeyed.size === 0) this.byTopic.delete(topic);
    }
    this.empties = 0;
  }
}
