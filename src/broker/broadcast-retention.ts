/**
 * Broadcast consumers keep their own state under `<group>%BROADCAST%<consumer>` (read positions,
 * in-flight deliveries, committed offsets), named by the consumer's `vela.consumer.name` or else by
 * its client id. A client id never comes back once its process ends, so without a bound every
 * broadcast consumer that ever ran would stay in memory and in every state snapshot. State that no
 * live consumer has used for `consume.broadcastStateRetentionMs` (7 days) is forgotten, as Kafka
 * forgets the offsets of a group left empty for `offsets.retention.minutes`.
 *
 * Use is seen in memory: after a restart every broadcast consumer's clock starts again.
 */
import type { Logger } from '../common/logger.js';
import { BROADCAST_SEPARATOR } from './consume/delivery.js';

export interface BroadcastRetentionDeps {
  now: () => number;
  retentionMs: number;
  /** Every broadcast consumer (`<group>%BROADCAST%<consumer>`) with state. */
  known: () => Iterable<string>;
  /** Those live sessions stand for (a connected consumer uses its state even while idle). */
  live: () => Iterable<string>;
  /** Forget one broadcast consumer's state. */
  forget: (consumer: string) => Promise<void>;
  logger: Logger;
}

export const isBroadcastConsumer = (group: string): boolean => group.includes(BROADCAST_SEPARATOR);

export class BroadcastRetention {
  private readonly lastUsed = new Map<string, number>();

  constructor(private readonly deps: BroadcastRetentionDeps) {}

  /** A broadcast consumer's state was used now. */
  used(consumer: string): void {
    this.lastUsed.set(consumer, this.deps.now());
  }

  /** Forget the state of broadcast consumers unused for the retention time; resolves with how many. */
  async sweep(): Promise<number> {
    const { now: clock, retentionMs, logger } = this.deps;
    const now = clock();
    for (const c of this.deps.live()) this.lastUsed.set(c, now);
    const known = new Set(this.deps.known());
    let forgotten = 0;
    for (const c of known) {
      const at = this.lastUsed.get(c);
      if (at === undefined)
        this.lastUsed.set(c, now); // first seen (since a restart): its clock starts now
      else if (now - at >= retentionMs) {
        this.lastUsed.delete(c);
        await this.deps.forget(c);
        forgotten++;
        logger.info({ consumer: c, unusedMs: now - at }, 'forgot the state of an unused broadcast consumer');
      }
    }
    for (const [c, at] of this.lastUsed)
      if (!known.has(c) && now - at >= retentionMs) this.lastUsed.delete(c);
    return forgotten;
  }
}
