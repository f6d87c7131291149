/**
 * Rate limiting for `vela bench --rate`: each sender takes a slot on a shared schedule (one every
 * 1/rate seconds from the start), so the total rate holds however many senders run, and a slow moment
 * is caught up rather than lost (within one second's worth).
 */
export class Pacer {
  private next: number;
  private readonly intervalMs: number;

  constructor(
    ratePerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.intervalMs = ratePerSecond > 0 ? 1000 / ratePerSecond : 0;
    this.next = now();
  }

  /** Wait for the next slot (resolves at once without a rate). */
  async take(signal: AbortSignal): Promise<void> {
    if (this.intervalMs === 0) return;
    const t = this.now();
    // Do not bank more than a second of unused slots.
    this.next = Math.max(this.next, t - 1000);
    const at = this.next;
    this.next += this.intervalMs;
    const wait = at - t;
    if (wait > 1 && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}
