/**
 * Hands received messages to the listener with bounded concurrency, and in order where order matters.
 *
 * Every message has an ordering key: `null` for a standard group (any message may run at any time),
 * or, for a FIFO group, its message group (or its queue when it has none). Messages with the same key
 * run one at a time, in the order received, the next only after the previous one is settled (acked
 * or nacked); different keys run in parallel. At most `concurrency` listeners run at once, whatever
 * the keys. Keys take turns (a key that just finished goes to the back), so one busy message group
 * cannot starve the others.
 *
 * The receive window (`waitForRoom`) counts what the listener still has to do: messages queued,
 * waiting behind their FIFO key, or running. A message whose listener is done leaves it while its ack
 * is on its way, as a message leaves RabbitMQ's prefetch window once the consumer has sent its ack: a
 * window that also held every ack until the broker answered it kept the broker waiting for receives
 * (W2 1.17× without that, median of 24 alternating pairs; `docs/benchmarks.md`, thirteenth
 * session). Acks that pile up unanswered count again once there are more of them than the window
 * itself, so a broker slow to answer acks cannot make the client hold more than twice the window.
 * The same holds for the bodies' bytes against a byte window (`maxCachedBytes`).
 */
import type { MessageView } from './message.js';
import { KeptKeyMap } from '../common/kept-key-map.js';
import { SlotSet } from '../common/slot-set.js';

const call = (fn: () => void): void => fn();

/**
 * A message in the dispatcher, as its hooks see it: what they report to when they are done with it.
 * One object per message, made when it is received: a callback per hook and message (a closure and
 * its context each) was about a sixth of what a push consumer allocated per message.
 */
export interface DispatchTicket {
  readonly message: MessageView;
  /** The listener is done; `ok`: it succeeded. Exactly once, never within the `consume` call. */
  consumed(ok: boolean): void;
  /** The ack or nack is settled (or given up on). Exactly once, never within the `settle` call. */
  settled(): void;
}

/** What the dispatcher runs per message. Neither hook throws. */
export interface DispatcherHooks {
  /** Run the listener; then `t.consumed(ok)`. */
  consume(m: MessageView, t: DispatchTicket): void;
  /** Ack or nack; then `t.settled()`. */
  settle(m: MessageView, ok: boolean, t: DispatchTicket): void;
}

class Unit implements DispatchTicket {
  constructor(
    private readonly d: ConsumeDispatcher,
    readonly key: string | null,
    readonly message: MessageView,
  ) {}

  consumed(ok: boolean): void {
    this.d.unitConsumed(this, ok);
  }

  settled(): void {
    this.d.unitSettled(this);
  }
}

export class ConsumeDispatcher {
  /** Runnable units, oldest first: for a FIFO key, only its head is ever here. */
  private readonly ready: Unit[] = [];
  /**
   * FIFO keys with a unit ready, running or settling → the messages behind it (not a Map with
   * deletes: message groups come and go; kept-key-map.ts).
   */
  private readonly waiting = new KeptKeyMap<string, MessageView[]>();
  /** Receive loops waiting for room (a slot set: they come and go per receive; slot-set.ts). */
  private readonly roomWaiters = new SlotSet<() => void>();
  /** Resolved when nothing is running or settling any more (`stop()`). */
  private idleWaiters: (() => void)[] = [];
  private running = 0;
  /** Messages handed to the listener and not yet settled. */
  private started = 0;
  /** Messages received whose listener is not done: queued, waiting behind their key, or running. */
  private unconsumed = 0;
  /** Messages whose listener is done and whose ack or nack is on its way. */
  private settling = 0;
  /** Body bytes of the `unconsumed` and of the `settling` messages. */
  private unconsumedBytes = 0;
  private settlingBytes = 0;
  private stopped = false;

  constructor(
    private readonly concurrency: () => number,
    private readonly hooks: DispatcherHooks,
  ) {}

  /** Messages received and not yet settled (queued, running, or being acked/nacked). */
  get size(): number {
    return this.unconsumed + this.settling;
  }

  /** What counts against a receive window of `limit` (see above). */
  held(limit: number): number {
    return this.unconsumed + Math.max(0, this.settling - limit);
  }

  /** Body bytes that count against a window of `limitBytes`, by the same rule as `held`. */
  heldBytes(limitBytes: number): number {
    return this.unconsumedBytes + Math.max(0, this.settlingBytes - limitBytes);
  }

  /** Listeners running now. */
  get active(): number {
    return this.running;
  }

  push(messages: readonly MessageView[], keyOf: (m: MessageView) => string | null): void {
    for (const message of messages) {
      this.unconsumed++;
      this.unconsumedBytes += message.body.length;
      const key = keyOf(message);
      if (key === null) {
        this.ready.push(new Unit(this, key, message));
      } else if (this.waiting.has(key)) {
        this.waiting.get(key)!.push(message);
      } else {
        this.waiting.set(key, []);
        this.ready.push(new Unit(this, key, message));
      }
    }
    this.pump();
  }

  /**
   * Resolve once fewer than `limit` messages and fewer than `limitBytes` body bytes are held (`held`,
   * `heldBytes`), or the dispatcher stops.
   */
  waitForRoom(limit: number, limitBytes = Infinity): Promise<void> {
    const room = () => this.stopped || (this.held(limit) < limit && this.heldBytes(limitBytes) < limitBytes);
    if (room()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let slot = -1;
      const check = () => {
        if (room()) {
          this.roomWaiters.remove(slot);
          slot = -1;
          resolve();
        }
      };
      slot = this.roomWaiters.add(check);
    });
  }

  /**
   * Stop starting listeners: messages not yet handed to the listener are dropped and returned (the
   * broker gets them back when the consumer terminates). Resolves when everything started is settled.
   */
  async stop(): Promise<MessageView[]> {
    this.stopped = true;
    const dropped = this.ready.map((u) => u.message);
    for (const rest of this.waiting.values()) dropped.push(...rest);
    this.ready.length = 0;
    this.waiting.clear();
    this.unconsumed -= dropped.length;
    for (const m of dropped) this.unconsumedBytes -= m.body.length;
    this.wakeRoom();
    if (this.started > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    return dropped;
  }

  /**
   * Start what may run. Per message this costs its unit and nothing else (no promise, no callback,
   * no set of tasks): a consumer settles tens of thousands of messages a second.
   */
  private pump(): void {
    while (!this.stopped && this.running < this.concurrency() && this.ready.length > 0) {
      const unit = this.ready.shift()!;
      this.running++;
      this.started++;
      this.hooks.consume(unit.message, unit);
    }
  }

  /** A unit's listener is done (`DispatchTicket.consumed`). */
  unitConsumed(unit: Unit, ok: boolean): void {
    this.running--;
    this.unconsumed--;
    this.settling++;
    const bytes = unit.message.body.length;
    this.unconsumedBytes -= bytes;
    this.settlingBytes += bytes;
    this.wakeRoom();
    this.pump();
    this.hooks.settle(unit.message, ok, unit);
  }

  /** A unit's ack or nack is settled (`DispatchTicket.settled`). */
  unitSettled(unit: Unit): void {
    this.settling--;
    this.settlingBytes -= unit.message.body.length;
    this.started--;
    if (unit.key !== null) this.next(unit.key);
    this.wakeRoom();
    if (this.started === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
    this.pump();
  }

  /** The key's unit is settled: its next message becomes runnable (at the back of the line). */
  private next(key: string): void {
    const rest = this.waiting.get(key);
    if (!rest) return;
    const head = rest.shift();
    if (head) this.ready.push(new Unit(this, key, head));
    else this.waiting.delete(key);
  }

  /**
   * Called for every message consumed and settled: no copy of the set (a waiter only ever removes
   * itself, which `each` allows).
   */
  private wakeRoom(): void {
    if (this.roomWaiters.size === 0) return;
    this.roomWaiters.each(call);
  }
}
