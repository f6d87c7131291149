/**
 * A binary min-heap of deadlines with one timer for the earliest, so invisible-time expiry needs no
 * per-message timers. Stale items (the delivery was acked or re-armed) are dropped by the callback.
 */
/** Most items fired in one turn of the event loop. */
const MAX_PER_TICK = 10_000;

export interface Deadline<T> {
  at: number;
  item: T;
}

export class DeadlineHeap<T> {
  private heap: Deadline<T>[] = [];
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private closed = false;

  constructor(
    private readonly now: () => number,
    private readonly onDue: (item: T, at: number) => void,
  ) {}

  get size(): number {
    return this.heap.length;
  }

  push(at: number, item: T): void {
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
      let i = 0;
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
    return top;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    if (this.closed || this.heap.length === 0) return;
    const at = this.heap[0]!.at;
    this.timerAt = at;
    this.timer = setTimeout(() => this.fireDue(), Math.max(0, at - this.now()));
    this.timer.unref();
  }
}
