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
 * One registered request. Registering costs an object and a set entry; the timer, the abort listener
 * and the promise come only when the request looked, found nothing and holds a place (`hold`) — most
 * requests under load find messages and never wait.
 */
class Entry {
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

  constructor(
    readonly topic: string,
    readonly key: string,
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

  get promise(): Promise<WakeReason> {
    if (!this.waiting && !this.settled) this.arm();
    return this.waiting ?? Promise.resolve(this.reason);
  }
}

/** The places parked requests take, shared by every `LongPollWaiters` of a broker. */
export class ParkingLot {
  private total = 0;
  /** Counted entries per client, oldest first. */
  private readonly byClient = new Map<string, Set<Entry>>();
  private readonly byGroup = new Map<string, number>();

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
      let victim: Set<Entry> | undefined;
      for (const set of this.byClient.values()) if (!victim || set.size > victim.size) victim = set;
      if (!victim || victim.size <= mine + 1) {
        return new VelaError(
          'TOO_MANY_REQUESTS',
          `${this.total} requests are already waiting (at most ${this.limits.total})`,
        );
      }
      victim.values().next().value!.finish('displaced');
    }
    e.counted = true;
    this.total++;
    let set = this.byClient.get(client);
    if (!set) this.byClient.set(client, (set = new Set()));
    set.add(e);
    this.byGroup.set(group, ofGroup + 1);
    return undefined;
  }

  leave(e: Entry): void {
    if (!e.counted) return;
    e.counted = false;
    this.total--;
    const { client, group } = e.parker;
    const set = this.byClient.get(client);
    set?.delete(e);
    if (set?.size === 0) this.byClient.delete(client);
    const n = (this.byGroup.get(group) ?? 1) - 1;
    if (n > 0) this.byGroup.set(group, n);
    else this.byGroup.delete(group);
  }
}

/** Empty wake-key sets kept for reuse before they are all pruned. */
const MAX_EMPTY_SETS = 1024;

const UNLIMITED: ParkingLimits = { total: Infinity, perClient: Infinity, perGroup: Infinity };

export class LongPollWaiters {
  /** topic → wake key → entries, oldest first. */
  private readonly byTopic = new Map<string, Map<string, Set<Entry>>>();
  private stopped = false;
  private seq = 0;
  /** Empty sets kept in `byTopic` (at most MAX_EMPTY_SETS). */
  private empties = 0;

  constructor(readonly lot: ParkingLot = new ParkingLot(UNLIMITED)) {}

  park(topic: string, ms: number, parker: Parker, signal?: CancelSignal): Parking {
    const key = parker.wakeKey ?? `\u0000${++this.seq}`;
    const entry = new Entry(topic, key, parker, this, ms, signal);
    if (this.stopped) entry.finish('stopped');
    else if (signal?.aborted) entry.finish('aborted');
    else if (ms <= 0) entry.finish('timeout');
    else this.add(entry);
    return {
      get promise() {
        return entry.promise;
      },
      hold: () => {
        if (entry.settled || entry.counted) return undefined;
        const refused = this.lot.enter(entry);
        if (!refused) entry.arm();
        return refused;
      },
      cancel: () => entry.finish('timeout'),
      passOn: () => this.wakeOne(topic, key),
      get woken() {
        return entry.woken;
      },
    };
  }

  /**
   * Something arrived on `topic` (for `group` only, when given): wake the oldest request of each key.
   * With `early`, only the requests that read appended messages (true: the messages were appended)
   * or only the others (false: they became durable).
   */
  wake(topic: string, group?: string, early?: boolean): void {
    const keys = this.byTopic.get(topic);
    if (!keys) return;
    for (const set of [...keys.values()]) {
      // One key is one group; its requests differ in `early` only across a change of the group's
      // kind: the oldest that matches.
      for (const e of set) {
        if (group !== undefined && e.parker.group !== group) break;
        if (early !== undefined && (e.parker.early === true) !== early) continue;
        e.finish('woken');
        break;
      }
    }
  }

  /** Wake the oldest request of one key. */
  wakeOne(topic: string, key: string): void {
    this.byTopic.get(topic)?.get(key)?.values().next().value?.finish('woken');
  }

  /** Answer everyone (shutdown). */
  wakeAll(): void {
    this.stopped = true;
    for (const keys of [...this.byTopic.values()])
      for (const set of [...keys.values()]) for (const e of [...set]) e.finish('stopped');
  }

  /** Requests registered here (parked, or looking for messages before parking). */
  get parked(): number {
    let n = 0;
    for (const keys of this.byTopic.values()) for (const s of keys.values()) n += s.size;
    return n;
  }

  /** @internal an entry settled: out of its set and out of the lot. */
  forget(e: Entry): void {
    this.lot.leave(e);
    const keys = this.byTopic.get(e.topic);
    const set = keys?.get(e.key);
    if (!set?.delete(e) || set.size > 0) return;
    if (e.parker.wakeKey === undefined) {
      // A key of its own (pulls): never used again.
      keys!.delete(e.key);
      if (keys!.size === 0) this.byTopic.delete(e.topic);
      return;
    }
    // A shared key's empty set stays for its next request (one receive after another would
    // otherwise build and drop a set and a map each time); empties are pruned once there are many.
    if (++this.empties > MAX_EMPTY_SETS) this.pruneEmpty();
  }

  private add(e: Entry): void {
    let keys = this.byTopic.get(e.topic);
    if (!keys) this.byTopic.set(e.topic, (keys = new Map()));
    let set = keys.get(e.key);
    if (!set) keys.set(e.key, (set = new Set()));
    else if (set.size === 0) this.empties--;
    set.add(e);
  }

  private pruneEmpty(): void {
    for (const [topic, keys] of this.byTopic) {
      for (const [key, set] of keys) if (set.size === 0) keys.delete(key);
      if (keys.size === 0) this.byTopic.delete(topic);
    }
    this.empties = 0;
  }
}
