/**
 * How busy the event loop has been lately, for the store's choice between writing a small flush on
 * the loop and handing it to the thread pool (segment-log.ts, `inlineWriteBytes`). A write on the
 * loop saves two thread switches but blocks the loop for the write: worth it while the loop has time
 * to spare, a loss once the loop is the bottleneck (a consumer draining a backlog), where the thread
 * pool lets the write overlap the loop's work.
 *
 * The measure is Node's event-loop utilization over the last `SAMPLE_MS` or more, taken when a flush
 * asks (no timer), without the time the store's own writes spent on the loop: those are what it
 * decides about, and counting them would flip the choice back and forth.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/** The loop counts as busy above this share of active time (the store's own writes left out). */
export const BUSY_LOOP_SHARE = 0.7;
/** The shortest window the share is measured over. */
const SAMPLE_MS = 100;

export class LoopLoad {
  private sampledAt = performance.now();
  private last: EventLoopUtilization = performance.eventLoopUtilization();
  /** Milliseconds the store's writes spent on the loop since `sampledAt`. */
  private writesMs = 0;
  private spare = true;

  /** Whether the loop had time to spare lately (re-measured at most every `SAMPLE_MS`). */
  hasTimeToSpare(now: number): boolean {
    if (now - this.sampledAt >= SAMPLE_MS) {
      const current = performance.eventLoopUtilization();
      const d = performance.eventLoopUtilization(current, this.last);
      const total = d.active + d.idle;
      this.spare = total <= 0 || (d.active - this.writesMs) / total <= BUSY_LOOP_SHARE;
      this.last = current;
      this.sampledAt = now;
      this.writesMs = 0;
    }
    return this.spare;
  }

  /** Account for a write the store made on the loop. */
  wrote(ms: number): void {
    this.writesMs += ms;
  }
}

/** One per thread: every log of the process writes on the same loop. */
export const loopLoad = new LoopLoad();
