/**
 * One stage of the timer's work: a step that runs serially (never two at once), again as long as it
 * finds work, woken on demand or by one timer armed for the next time it will have work. A failing
 * step is reported (`onError`) and retried a little later; a run that ends without failing is
 * reported too (`onSuccess`), so that a failure that repeats on every try can be logged once.
 */
import type { Timers } from '../../common/timers.js';

/** setTimeout's longest delay. */
const MAX_TIMEOUT = 2 ** 31 - 1;

export interface StageOptions {
  timers: Timers;
  now: () => number;
  /** Do some work; resolve true if there was any (the stage then runs again at once). */
  step: () => Promise<boolean>;
  /** When the stage will next have work (ms, Infinity for "only when woken"). */
  nextAt: () => number;
  onError: (err: unknown, retryInMs: number) => void;
  /** A run ended without failing. */
  onSuccess?: () => void;
  retryMs: number;
}

export class Stage {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private cancelTimer: (() => void) | undefined;
  private armedAt = Infinity;

  constructor(private readonly o: StageOptions) {}

  /** Run now (or right after the run in progress). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = null;
      if (this.again && !this.stopped) this.wake();
    });
  }

  /** Make sure the stage runs by `at` (earlier than the timer armed, if any). */
  wakeBy(at: number): void {
    if (at <= this.o.now()) this.wake();
    else if (at < this.armedAt && !this.running) this.arm(at);
  }

  /** Stop: no more runs; resolves when the run in progress (if any) is over. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer?.();
    await this.running;
  }

  private async loop(): Promise<void> {
    let retryAt: number | undefined;
    try {
      for (;;) {
        if (this.stopped) return;
        this.again = false;
        const worked = await this.o.step();
        if (!worked && !this.again) break;
      }
      this.o.onSuccess?.();
    } catch (err) {
      if (this.stopped) return;
      this.o.onError(err, this.o.retryMs);
      retryAt = this.o.now() + this.o.retryMs;
    }
    this.again = false;
    this.arm(retryAt);
  }

  private arm(at?: number): void {
    if (this.stopped) return;
    const next = Math.min(at ?? Infinity, this.o.nextAt());
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.armedAt = next;
    if (next === Infinity) return;
    const delay = Math.min(MAX_TIMEOUT, Math.max(0, next - this.o.now()));
    this.cancelTimer = this.o.timers.timeout(() => {
      this.cancelTimer = undefined;
      this.armedAt = Infinity;
      this.wake();
    }, delay);
  }
}
