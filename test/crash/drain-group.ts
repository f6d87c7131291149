/**
 * After a restart, the crash tests read back what a consumer group can still get: receive and ack
 * everything, moving the manual clock a minute on whenever nothing is due (so retries and expired
 * deliveries come round), until three rounds in a row find nothing.
 */
import type { Broker } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import type { ManualClock } from '../../src/common/clock.js';
import type { StoredMessage } from '../../src/store/index.js';

export async function drainGroup(
  broker: Broker,
  group: string,
  topic: string,
  o: {
    clock?: ManualClock;
    /** Run before every receive (e.g. let background work settle). */
    beforeReceive?: () => Promise<unknown>;
    /** Run when a receive found nothing, before the clock moves on. */
    onEmpty?: () => Promise<unknown>;
    /** What to collect of each message. @defaultValue the body as a string */
    pick?: (m: StoredMessage) => string;
  } = {},
): Promise<string[]> {
  const filter = parseFilter('TAG', '*');
  const pick = o.pick ?? ((m: StoredMessage) => m.body.toString());
  const out: string[] = [];
  for (let empty = 0; empty < 3;) {
    await o.beforeReceive?.();
    const got = await broker.consume.receive({
      group,
      topic,
      filter,
      batchSize: 32,
      invisibleMs: 3600_000,
      autoRenew: false,
      clientId: 'verifier',
      pollMs: 0,
    });
    if (got.length === 0) {
      empty++;
      await o.onEmpty?.();
      o.clock?.advance(60_000);
      continue;
    }
    empty = 0;
    for (const d of got) out.push(pick(d.message));
    await broker.consume.ackMany(
      group,
      topic,
      got.map((d) => d.receiptHandle),
    );
  }
  return out;
}
