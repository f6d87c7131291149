/**
 * Every timer a long-lived object (a client, the broker) starts goes through one `Timers`, so that
 * `close()` can clear them all and no stray callback (a Telemetry re-open, a heartbeat, a renewal
 * sweep) fires or keeps the process alive afterwards. Sleeps are abortable and are woken with the
 * owner's "closed" error when the timers are cleared.
 */

export type Cancel = () => void;

/** The longest delay one Node timer holds; `setTimeout` fires anything longer after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface TimerOptions {
  /** Let the process exit while only this timer is pending. @defaultValue false */
  unref?: boolean;
}

export class Timers {
  private readonly timeouts = new Set<NodeJS.Timeout>();
  private readonly intervals = new Set<NodeJS.Timeout>();
  private readonly immediates = new Set<NodeJS.Immediate>();
  private readonly sleepers = new Set<(err: unknown) => void>();
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
    const wait = (left: number) => {
      const step = Math.min(left, MAX_TIMER_MS);
      t = setTimeout(() => {
        this.timeouts.delete(t);
        if (left - step > 0) wait(left - step);
        else fn();
      }, step);
      if (opts.unref) t.unref();
      this.timeouts.add(t);
    };
    wait(ms);
    return () => {
      clearTimeout(t);
      this.timeouts.delete(t);
    };
  }

  /** Run `fn` every `ms`. A no-op once cleared. */
  interval(fn: () => void, ms: number, opts: TimerOptions = {}): Cancel {
    if (this.cleared) return noop;
    const t = setInterval(fn, Math.min(ms, MAX_TIMER_MS)); // longer would run every 1 ms
    if (opts.unref) t.unref();
    this.intervals.add(t);
    return () => {
      clearInterval(t);
      this.intervals.delete(t);
    };
  }

  /** Run `fn` after the current I/O callbacks (coalesces work issued in one turn of the loop). */
  immediate(fn: () => void): Cancel {
    if (this.cleared) return noop;
    const t = setImmediate(() => {
      this.immediates.delete(t);
      fn();
    });
    this.immediates.add(t);
    return () => {
      clearImmediate(t);
      this.immediates.delete(t);
    };
  }

  /** Resolve after `ms`; reject with the signal's reason on abort, or a closed error on `clear()`. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.cleared) return Promise.reject(this.closedError());
    return new Promise<void>((resolve, reject) => {
      const finish = (err?: unknown) => {
        cancel();
        this.sleepers.delete(finish);
        signal?.removeEventListener('abort', onAbort);
        if (err === undefined) resolve();
        else reject(err);
      };
      const onAbort = () => finish(abortReason(signal!));
      const cancel = this.timeout(() => finish(), ms);
      this.sleepers.add(finish);
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
    for (const t of this.timeouts) clearTimeout(t);
    for (const t of this.intervals) clearInterval(t);
    for (const t of this.immediates) clearImmediate(t);
    this.timeouts.clear();
    this.intervals.clear();
    this.immediates.clear();
    for (const wake of [...this.sleepers]) wake(this.closedError());
  }
}

function noop(): void {}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
