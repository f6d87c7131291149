/**
 * What every part of the consumption core shares: the broker services it reads, the delivery state,
 * the executor that serializes each (group, topic), the deadline heap and the parked receives.
 *
 * Rule: every change to the state of a (group, topic) runs inside `serialized(state, …)`, so no
 * decision about a delivery or a message group is ever split by an `await` of another change.
 * Journal records are appended inside (the journal fixes their order at once); waiting for them to
 * be durable happens outside, so one fsync covers many changes.
 */
import type { Clock } from '../../common/clock.js';
import type { ConsumeSettings } from '../../common/config.js';
import { VelaError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { KeyedExecutor } from '../../common/serial-executor.js';
import { Timers } from '../../common/timers.js';
import type { MessageStore } from '../../store/index.js';
import type { GroupRegistry } from '../group-registry.js';
import type { ReceiptHandles } from '../receipt-handle.js';
import type { ConsumeObserver } from '../consume-observer.js';
import type { SessionRegistry } from '../sessions.js';
import type { StateJournal } from '../state-journal.js';
import type { TopicRegistry } from '../topic-registry.js';
import { DeadlineHeap } from './deadline-heap.js';
import { ConsumeStates, type Delivery, type DeliveryKey, type GroupTopicState } from './delivery.js';
import { LongPollWaiters, ParkingLot } from './long-poll.js';

/** Consumption settings (defaults and meanings in common/config.ts) and the group auto-creation switch. */
export type ConsumeOptions = ConsumeSettings & { readonly autoCreateGroups: boolean };

export interface ConsumeDeps {
  store: MessageStore;
  topics: TopicRegistry;
  groups: GroupRegistry;
  sessions: SessionRegistry;
  handles: ReceiptHandles;
  options: ConsumeOptions;
  clock: Clock;
  logger: Logger;
}

/** A delivery's invisible time or FIFO retry wait ends (stale when the nonce has changed since). */
export interface DeliveryDeadline {
  state: GroupTopicState;
  key: DeliveryKey;
  nonce: number;
}

/** A deadline in the heap: a delivery's, or a wake-up for the receives parked on a topic. */
export type DeadlineItem = DeliveryDeadline | { wake: string };

export class ConsumeContext {
  readonly store: MessageStore;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly sessions: SessionRegistry;
  readonly handles: ReceiptHandles;
  readonly options: ConsumeOptions;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Set once the broker has opened the journal (it replays into the state first). */
  journal!: StateJournal;
  readonly states = new ConsumeStates();
  /** Parked receives; their lot is shared with the broker's pulls. */
  readonly waiters: LongPollWaiters;
  /** Every timer of the consumption core (besides the heap's and the parked receives'): cleared on stop. */
  readonly timers = new Timers(() => new VelaError('STORE_CLOSED', 'consumption has stopped'));
  readonly heap: DeadlineHeap<DeadlineItem>;
  /** Retry topics have the `+` form (set when the journal says so; retry-migration.ts). */
  retryTopicsRenamed = false;
  /** Told of each delivery and how it ends (counters, delivery history); set by the broker. */
  observer?: ConsumeObserver;
  /** Messages moved to a DLQ since start, per group. */
  readonly deadLettered = new Map<string, number>();
  private readonly executor = new KeyedExecutor<string>();

  constructor(deps: ConsumeDeps, onDeadline: (item: DeliveryDeadline, at: number) => void) {
    this.store = deps.store;
    this.topics = deps.topics;
    this.groups = deps.groups;
    this.sessions = deps.sessions;
    this.handles = deps.handles;
    this.options = deps.options;
    this.clock = deps.clock;
    this.logger = deps.logger;
    this.waiters = new LongPollWaiters(
      new ParkingLot({
        total: deps.options.maxParkedReceives,
        perClient: deps.options.maxParkedPerClient,
        perGroup: deps.options.maxParkedPerGroup,
      }),
    );
    this.heap = new DeadlineHeap(
      () => this.clock.now(),
      (item, at) => {
        if ('wake' in item) this.waiters.wake(item.wake);
        else onDeadline(item, at);
      },
      (item, at) => !('wake' in item) && !this.isCurrent(item, at),
    );
  }

  now(): number {
    return this.clock.now();
  }

  /** Run `task` alone with the state of its (group, topic): after what was queued before, before what comes after. */
  serialized<T>(state: GroupTopicState | string, task: () => T | Promise<T>): Promise<T> {
    return this.executor.run(typeof state === 'string' ? state : state.key, task);
  }

  /** Resolves once every serialized task submitted so far has finished. */
  drain(): Promise<void> {
    return this.executor.drain();
  }

  /**
   * Auto-renewal scans run (`AutoRenew.start`): an auto-renewed delivery far enough from its deadline
   * needs no heap item (`armUnlessRenewed`).
   */
  renewing = false;

  /** Whether a deadline in the heap is still its delivery's (neither settled, re-armed nor forgotten since). */
  isCurrent({ state, key, nonce }: DeliveryDeadline, at: number): boolean {
    const d = state.deliveries.get(key);
    return d !== undefined && d.nonce === nonce && d.deadline === at && this.states.isLive(state);
  }

  /** Expire (or make due) delivery `d` (`key` of `state`) at its deadline, for its current nonce. */
  arm(state: GroupTopicState, key: DeliveryKey, d: Delivery): void {
    d.armed = true;
    this.heap.push(d.deadline, { state, key, nonce: d.nonce });
  }

  /**
   * `arm`, unless `d` is auto-renewed and the renewal scan is sure to look at it before its deadline:
   * the scan renews it while its client lives and arms it once its client is gone (auto-renew.ts).
   * A scan runs every `renewIntervalMs` and looks at deliveries `renewAheadMs` from their deadline, so
   * with `renewAheadMs` ≥ two intervals and a deadline more than two intervals away, at least one scan
   * falls within that window an interval or more before the deadline. Most push deliveries are acked
   * long before their deadline, and then never cost a heap item or its sweeping.
   */
  armUnlessRenewed(state: GroupTopicState, key: DeliveryKey, d: Delivery, now: number): void {
    const { renewAheadMs, renewIntervalMs } = this.options;
    if (
      d.autoRenew &&
      this.renewing &&
      renewAheadMs >= 2 * renewIntervalMs &&
      d.deadline - now > 2 * renewIntervalMs
    ) {
      d.armed = false;
    } else {
      this.arm(state, key, d);
    }
  }
}
