/**
 * Whether the store's small flushes may be written on the event loop (segment-log.ts,
 * `inlineWriteBytes`), as far as the disk and the process's other logs are concerned. A write on the
 * loop blocks the loop for as long as the disk takes; a disk that stalls (a virtual disk here
 * completed nothing for 300–500 ms at a time, with one write in flight) would freeze every
 * connection, not only the writes waiting.
 *
 * One gate per process, because every log of the process writes to the same disk:
 * - Once a write on the loop was slow (`INLINE_SLOW_MS`), no log writes on the loop for
 *   `INLINE_PAUSE_MS`, doubling while they stay slow (up to `INLINE_PAUSE_MAX_MS`); a fast one resets
 *   it. A small write through the thread pool that takes longer than `INLINE_SLOW_MS` (on the loop it
 *   would have stalled the loop as long) starts a pause too, or moves the end of the current one to a
 *   pause after it, so a disk that stays slow freezes the loop once, not once a pause. A thread-pool
 *   write is timed to its callback, so a busy loop makes it look slower: that only keeps writes off a
 *   loop that has no time to spare for them.
 * - A log writes on the loop only while it is the only log writing: not when another log of the
 *   process flushed in the last `INLINE_ALONE_MS`. One log writing alone is a producer's sends with
 *   nothing else going on, where the loop has nothing to do during the write and the thread pool's
 *   round trip would only add its two thread switches. With the message log and the state journal
 *   both writing (messages consumed as they arrive), the loop has other work while a write is on
 *   its way to the disk, and writes on it held up W3's deliveries: every write through the thread
 *   pool gave a p99 0.79–0.87 of the writes on the loop, in alternating rounds (docs/benchmarks.md,
 *   twentieth session).
 */

/** A write on the loop that took longer than this stalled the loop for it. */
export const INLINE_SLOW_MS = 10;
/** The pause after the first slow write on the loop. */
export const INLINE_PAUSE_MS = 1000;
/** The longest pause (a disk that stays slow costs one stall of the loop a minute). */
export const INLINE_PAUSE_MAX_MS = 60_000;
/** A log writes on the loop only if no other log flushed in this long. */
export const INLINE_ALONE_MS = 100;

export class InlineWriteGate {
  /** `performance.now()` before which no write is made on the loop. */
  private pausedUntil = 0;
  /** The pause after the next slow write on the loop. */
  private pause = INLINE_PAUSE_MS;

  /** The log that flushed last, and when. */
  private lastWriter: object | undefined;
  private lastWriterAt = -Infinity;
  /** When a log other than `lastWriter` flushed last. */
  private otherWriterAt = -Infinity;

  /**
   * Whether `writer` may write a small flush on the loop at `now`: the disk has not stalled lately,
   * and no other log has flushed in the last `INLINE_ALONE_MS`.
   */
  isOpen(now: number, writer: object): boolean {
    const other = writer === this.lastWriter ? this.otherWriterAt : this.lastWriterAt;
    return now >= this.pausedUntil && now - other >= INLINE_ALONE_MS;
  }

  /** `writer` begins a flush at `now`, on the loop or not. */
  flushing(writer: object, now: number): void {
    if (writer !== this.lastWriter) {
      this.otherWriterAt = this.lastWriterAt;
      this.lastWriter = writer;
    }
    this.lastWriterAt = now;
  }

  /**
   * A write on the loop that began at `started` took `took` ms. Returns the pause it started, in
   * ms (0: it was fast).
   */
  wroteOnLoop(started: number, took: number): number {
    if (took <= INLINE_SLOW_MS) {
      this.pause = INLINE_PAUSE_MS;
      return 0;
    }
    const pause = this.pause;
    this.pausedUntil = Math.max(this.pausedUntil, started + took + pause);
    this.pause = Math.min(pause * 2, INLINE_PAUSE_MAX_MS);
    return pause;
  }

  /**
   * A small write through the thread pool that began at `started` took `took` ms (to its callback).
   * Returns the pause it started or extended, in ms (0: it was fast).
   */
  wroteInPool(started: number, took: number): number {
    if (took <= INLINE_SLOW_MS) return 0;
    this.pausedUntil = Math.max(this.pausedUntil, started + took + this.pause);
    return this.pause;
  }
}

/** One per process: every log of the process writes to the same disk. */
export const inlineWriteGate = new InlineWriteGate();
