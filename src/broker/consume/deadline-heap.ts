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
/** Heaps smaller than this are never swept (a sweep would cost more than the stale entries). */
const MIN_SWEEP = 1024;

export interface Deadline<T> {
  at: number;
  item: T;
}

export class DeadlineHeap<T> {
  private heap: Deadline<T>[] = [];
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
    return this.heap.length;
  }

  push(at: number, item: T): void {
    if (Number.isNaN(at)) at = -Infinity; // never left in the heap where no time ever comes
    if (this.heap.length >= this.sweepAt) this.sweep();
    const h = this.heap;
    h.push({ at, item });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p]!.at <= h[i]!.at) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
    if (at < this.timerAt) this.arm();
  }

  /** Some items went stale (their deliveries were settled): sweep once they may be half the heap. */
  noteStale(n = 1): void {
    this.stale += n;
    if (this.stale * 2 > this.heap.length && this.heap.length >= MIN_SWEEP) this.sweep();
  }

  /** Drop every stale item now and rebuild the heap (O(n); amortized over the pushes and settlements that made it due). */
  sweep(): void {
    const isStale = this.isStale;
    this.stale = 0;
    if (isStale) {
      this.heap = this.heap.filter((d) => !isStale(d.item, d.at));
      for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
    }
    this.sweepAt = Math.max(MIN_SWEEP, 2 * this.heap.length);
  }

  /** Fire everything due now (called by the timer; public for tests). */
  fireDue(): void {
    const now = this.now();
    let fired = 0;
    while (this.heap.length > 0 && this.heap[0]!.at <= now) {
      const top = this.pop();
      this.onDue(top.item, top.at);
      if (++fired === MAX_PER_TICK && this.heap.length > 0 && this.heap[0]!.at <= now) {
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

  private pop(): Deadline<T> {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  private siftDown(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l]!.at < h[m]!.at) m = l;
      if (r < h.length && h[r]!.at < h[m]!.at) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    if (this.closed || this.heap.length === 0) return;
    const at = this.heap[0]!.at;
    this.timerAt = at;
    // A deadline further than one timer can wait: wake at the timer's limit and look again.
    this.timer = setTimeout(() => this.fireDue(), Math.min(MAX_TIMER_MS, Math.max(0, at - this.now())));
    this.timer.unref();
  }
}
