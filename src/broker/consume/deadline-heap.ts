/**
 * A binary min-heap of deadlines with one timer for the earliest, so invisible-time expiry needs no
 * per-message timers. Stale items (the delivery was acked or re-armed) are dropped by the callback
 * when they come due, and swept out before then whenever they could make up half the heap: an ack
 * does not leave its delivery's entry behind for the up to 12 h of its invisible time, so the heap
 * stays proportional to the live deliveries, not to the history.
 *
 * Deadlines beyond `setTimeout`'s range (2^31-1 ms, about 24.8 days) are waited for in steps of at
 * most that range: never fired early, never a timer that Node clamps to 1 ms and spins.
 */
import { MAX_TIMER_MS } from '../../common/timers.js';

/** Most items fired in one turn of the event loop. */
const MAX_PER_TICK = 10_000;
/**
 * Heaps smaller than this are never swept. Small, so that a settled delivery's entry goes within a
 * few dozen settlements rather than staying until the heap is large: entries kept past a scavenge or
 * two are moved to the old generation, which only a full (long) collection frees.
 */
const MIN_SWEEP = 64;

export class DeadlineHeap<T> {
  /** The heap as two parallel arrays (no object per entry): deadlines, and their items. */
  private ats: number[] = [];
  private items: T[] = [];
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private closed = false;
  /** Items reported stale since the last sweep (an estimate: a report may not match an entry). */
  private stale = 0;
  /** Sweep when the heap grows to this size (twice its size after the last sweep). */
  private sweepAt = MIN_SWEEP;

  /**
   * @param isStale whether an item will do nothing when it comes due (it may be swept out early);
   *   without it, nothing is swept
   */
  constructor(
    private readonly now: () => number,
    private readonly onDue: (item: T, at: number) => void,
    private readonly isStale?: (item: T, at: number) => boolean,
  ) {}

  get size(): number {
    return this.ats.length;
  }

  push(at: number, item: T): void {
    if (Number.isNaN(at)) at = -Infinity; // never left in the heap where no time ever comes
    if (this.ats.length >= this.sweepAt) this.sweep();
    const ats = this.ats;
    const items = this.items;
    let i = ats.length;
    ats.push(at);
    items.push(item);
    // Sift up: move parents down until `at` finds its place.
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (ats[p]! <= at) break;
      ats[i] = ats[p]!;
      items[i] = items[p]!;
      i = p;
    }
    ats[i] = at;
    items[i] = item;
    if (at < this.timerAt) this.arm();
  }

  /** Some items went stale (their deliveries were settled): sweep once they may be half the heap. */
  noteStale(n = 1): void {
    this.stale += n;
    if (this.stale * 2 > this.ats.length && this.ats.length >= MIN_SWEEP) this.sweep();
  }

  /** Drop every stale item now and rebuild the heap (O(n); amortized over the pushes and settlements that made it due). */
  sweep(): void {
    const isStale = this.isStale;
    this.stale = 0;
    const ats = this.ats;
    const items = this.items;
    if (isStale) {
      // Compact in place, then heapify.
      let n = 0;
      for (let i = 0; i < ats.length; i++) {
        if (isStale(items[i]!, ats[i]!)) continue;
        ats[n] = ats[i]!;
        items[n] = items[i]!;
        n++;
      }
      ats.length = n;
      items.length = n;
      for (let i = (n >> 1) - 1; i >= 0; i--) this.siftDown(i);
    }
    this.sweepAt = Math.max(MIN_SWEEP, 2 * ats.length);
  }

  /** Fire everything due now (called by the timer; public for tests). */
  fireDue(): void {
    const now = this.now();
    let fired = 0;
    while (this.ats.length > 0 && this.ats[0]! <= now) {
      const at = this.ats[0]!;
      const item = this.pop();
      this.onDue(item, at);
      if (++fired === MAX_PER_TICK && this.ats.length > 0 && this.ats[0]! <= now) {
        // Many at once (a mass expiry): let the event loop breathe, then go on.
        if (this.timer) clearTimeout(this.timer);
        this.timer = null;
        this.timerAt = now;
        setImmediate(() => {
          if (!this.closed) this.fireDue();
        });
        return;
      }
    }
    this.arm();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Remove and return the earliest item. */
  private pop(): T {
    const ats = this.ats;
    const items = this.items;
    const top = items[0]!;
    const lastAt = ats.pop()!;
    const last = items.pop()!;
    if (ats.length > 0) {
      ats[0] = lastAt;
      items[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  private siftDown(i: number): void {
    const ats = this.ats;
    const items = this.items;
    const n = ats.length;
    const at = ats[i]!;
    const item = items[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && ats[r]! < ats[l]! ? r : l;
      if (ats[c]! >= at) break;
      ats[i] = ats[c]!;
      items[i] = items[c]!;
      i = c;
    }
    ats[i] = at;
    items[i] = item;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    if (this.closed || this.ats.length === 0) return;
    const at = this.ats[0]!;
    this.timerAt = at;
    // A deadline further than one timer can wait: wake at the timer's limit and look again.
    this.timer = setTimeout(() => this.fireDue(), Math.min(MAX_TIMER_MS, Math.max(0, at - this.now())));
    this.timer.unref();
  }
}
