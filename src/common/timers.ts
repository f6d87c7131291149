/**
 * Every timer a long-lived object (a client, the broker) starts goes through one `Timers`, so that
 * `close()` can clear them all and no stray callback (a Telemetry re-open, a heartbeat, a renewal
 * sweep) fires or keeps the process alive afterwards. Sleeps are abortable and are woken with the
 * owner's "closed" error when the timers are cleared.
 */

import { SlotSet } from './slot-set.js';

export type Cancel = () => void;

/** The longest delay one Node timer holds; `setTimeout` fires anything longer after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface TimerOptions {
  /** Let the process exit while only this timer is pending. @defaultValue false */
  unref?: boolean;
}

export class Timers {
  // Slot sets, not Sets: a client starts and clears a timer or an immediate per batch it sends or
  // acks, and a Set's replaced tables would keep each one (and its callback) alive until a full
  // collection (slot-set.ts).
  private readonly timeouts = new SlotSet<NodeJS.Timeout>();
  private readonly intervals = new SlotSet<NodeJS.Timeout>();
  private readonly immediates = new SlotSet<NodeJS.Immediate>();
  private readonly sleepers = new SlotSet<(err: unknown) => void>();
  private cleared = false;

  /** @param closedError the error pending sleeps reject with once the timers are cleared */
  constructor(private readonly closedError: () => Error = () => new Error('closed')) {}

  /**
   * Run `fn` once after `ms`. A no-op once cleared. A delay beyond what one Node timer holds
   * (2^31-1 ms, about 24.8 days; Node would fire it after 1 ms) is waited for in steps.
   */
  timeout(fn: () => void, ms: number, opts: TimerOptions = {}): Cancel {
    if (this.cleared) return noop;
    let t: NodeJS.Timeout;
    let slot = -1;
    const wait = (left: number) => {
      const step = Math.min(left, MAX_TIMER_MS);
      t = setTimeout(() => {
        this.timeouts.remove(slot);
        slot = -1;
        if (left - step > 0) wait(left - step);
        else fn();
      }, step);
      if (opts.unref) t.unref();
      slot = this.timeouts.add(t);
    };
    wait(ms);
    return () => {
      clearTimeout(t);
      if (slot >= 0) this.timeouts.remove(slot);
      slot = -1;
    };
  }

  /** Run `fn` every `ms`. A no-op once cleared. */
  interval(fn: () => void, ms: number, opts: TimerOptions = {}): Cancel {
    if (this.cleared) return noop;
    const t = setInterval(fn, Math.min(ms, MAX_TIMER_MS)); // longer would run every 1 ms
    if (opts.unref) t.unref();
    let slot = this.intervals.add(t);
    return () => {
      clearInterval(t);
      if (slot >= 0) this.intervals.remove(slot);
      slot = -1;
    };
  }

  /** Run `fn` after the current I/O callbacks (coalesces work issued in one turn of the loop). */
  immediate(fn: () => void): Cancel {
    if (this.cleared) return noop;
    let slot = -1;
    const t = setImmediate(() => {
      this.immediates.remove(slot);
      slot = -1;
      fn();
    });
    slot = this.immediates.add(t);
    return () => {
      clearImmediate(t);
      if (slot >= 0) this.immediates.remove(slot);
      slot = -1;
    };
  }

  /** Resolve after `ms`; reject with the signal's reason on abort, or a closed error on `clear()`. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.cleared) return Promise.reject(this.closedError());
    return new Promise<void>((resolve, reject) => {
      let slot = -1;
      const finish = (err?: unknown) => {
        cancel();
        if (slot >= 0) this.sleepers.remove(slot);
        slot = -1;
        signal?.removeEventListener('abort', onAbort);
        if (err === undefined) resolve();
        else reject(err);
      };
      const onAbort = () => finish(abortReason(signal!));
      const cancel = this.timeout(() => finish(), ms);
      slot = this.sleepers.add(finish);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Timers currently pending (for tests and diagnostics). */
  get pending(): number {
    return this.timeouts.size + this.intervals.size + this.immediates.size;
  }

  /** Clear everything and refuse new timers. Pending sleeps reject. Idempotent. */
  clear(): void {
    this.cleared = true;
    for (const t of this.timeouts.values()) clearTimeout(t);
    for (const t of this.intervals.values()) clearInterval(t);
    for (const t of this.immediates.values()) clearImmediate(t);
    this.timeouts.clear();
    this.intervals.clear();
    this.immediates.clear();
    for (const wake of this.sleepers.values()) wake(this.closedError());
  }
}

function noop(): void {}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
