/**
 * Latencies for `vela bench`: a log-bucketed histogram (1 % wide buckets from 1 µs to an hour) so a
 * run of any length needs constant memory, with exact count, mean and max. Percentiles are the upper
 * bound of their bucket (at most 1 % high).
 */
const GROWTH = 1.01;
const LOG_GROWTH = Math.log(GROWTH);
/** µs: 1 … 3.6e9 (one hour). */
const BUCKETS = Math.ceil(Math.log(3.6e9) / LOG_GROWTH) + 2;

export class LatencyHistogram {
  private readonly counts = new Float64Array(BUCKETS);
  count = 0;
  sumMs = 0;
  maxMs = 0;

  record(ms: number): void {
    const us = Math.max(1, ms * 1000);
    const i = Math.min(BUCKETS - 1, Math.ceil(Math.log(us) / LOG_GROWTH));
    this.counts[i]! += 1;
    this.count++;
    this.sumMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
  }

  /** The latency (ms) at or below which a fraction `q` (0–1) of the recorded ones are. */
  percentile(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.min(this.maxMs, GROWTH ** i / 1000);
    }
    return this.maxMs;
  }

  get meanMs(): number {
    return this.count === 0 ? 0 : this.sumMs / this.count;
  }

  reset(): void {
    this.counts.fill(0);
    this.count = 0;
    this.sumMs = 0;
    this.maxMs = 0;
  }
}
