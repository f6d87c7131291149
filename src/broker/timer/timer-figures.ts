/**
 * What the timer and the transaction service have done since start, per real topic, for the metrics
 * (RocketMQ's `rocketmq_timer_*`, `rocketmq_delay_message_latency`, `rocketmq_commit_messages_total`,
 * `rocketmq_rollback_messages_total`, `rocketmq_finish_message_latency`). Plain counters: the
 * exporter reads them when Prometheus scrapes.
 */
import { Histogram } from '../stats.js';

/** How far ahead delay messages are scheduled (s): a second to the 3-day maximum. */
export const DELAY_BUCKETS_S: readonly number[] = [
  1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21_600, 43_200, 86_400, 259_200,
];
/** How late a due delay message was appended to its topic (ms). */
export const LATENESS_BUCKETS_MS: readonly number[] = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 5000];
/** From a half message stored to its commit or rollback (ms). */
export const FINISH_BUCKETS_MS: readonly number[] = [
  10, 100, 1000, 5000, 10_000, 60_000, 300_000, 1_800_000, 3_600_000,
];

const bump = (m: Map<string, number>, topic: string, n = 1) => m.set(topic, (m.get(topic) ?? 0) + n);

export class TimerFigures {
  /** Delay messages scheduled, per real topic. */
  readonly enqueued = new Map<string, number>();
  /** Delay messages delivered (appended to their topic), per real topic. */
  readonly dequeued = new Map<string, number>();
  /** Scheduled delays (s). */
  readonly delay = new Histogram(DELAY_BUCKETS_S);
  /** Delivery lateness past the due time (ms). */
  readonly lateness = new Histogram(LATENESS_BUCKETS_MS);

  scheduled(topic: string, delayMs: number): void {
    bump(this.enqueued, topic);
    this.delay.observe(Math.max(0, delayMs) / 1000);
  }

  delivered(topic: string, latenessMs: number): void {
    bump(this.dequeued, topic);
    this.lateness.observe(Math.max(0, latenessMs));
  }
}

export class TransactionFigures {
  readonly committed = new Map<string, number>();
  readonly rolledBack = new Map<string, number>();
  /** Time from the half message to its end (ms), per topic. */
  readonly finish = new Map<string, Histogram>();

  ended(topic: string, how: 'commit' | 'rollback', sinceStoredMs: number): void {
    bump(how === 'commit' ? this.committed : this.rolledBack, topic);
    let h = this.finish.get(topic);
    if (!h) this.finish.set(topic, (h = new Histogram(FINISH_BUCKETS_MS)));
    h.observe(Math.max(0, sinceStoredMs));
  }
}
