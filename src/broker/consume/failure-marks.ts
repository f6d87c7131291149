/**
 * Failing a delivery exactly once, across a crash.
 *
 * Failing a non-FIFO delivery (or one out of attempts) writes a retry message (or a dead letter) to
 * the store and then journals the delivery as settled. A crash between the two would leave both: the
 * restarted broker finds the delivery still in flight, fails it again and writes a second copy. So
 * every retry and dead letter carries the mark of the delivery it was written for (its consumer
 * group and topic, where its message is, its attempt and its delivery nonce), and on start-up the
 * consumption core reads the tail of the retry and dead-letter queues of every (group, topic) with
 * deliveries in flight: a delivery whose mark is there already had its failure written, and is
 * settled instead of failed again.
 *
 * Why a tail is enough: the settle record is appended the moment the store write is durable, so it
 * can only be missing after a crash for a record written within one journal flush of the crash; the
 * last `TAIL_WINDOW_MS` before each queue's newest record is read (at most `TAIL_CAP` records).
 * Why the mark is exact: the nonce changes at every hand-out, so a message handed out again (after an
 * offset reset, say) with the same attempt never matches an older retry; and revive.ts writes a
 * failure only once the journal records that gave the delivery its current nonce are durable, so the
 * delivery a crash leaves behind has the nonce its record was written with.
 */
import type { StoredMessage } from '../../store/index.js';
import { journalSettled, settle } from './commit.js';
import type { ConsumeContext } from './context.js';
import {
  DeliveryState,
  baseGroupOf,
  type Delivery,
  type DeliveryKey,
  type GroupTopicState,
} from './delivery.js';
import { FAILED_DELIVERY, RETRY_QUEUES, dlqTopicOf, retryTopicOf } from './retry-records.js';

/** How far back from its newest record each retry and dead-letter queue is read at start-up. */
export const TAIL_WINDOW_MS = 60_000;
/** At most this many records per queue. */
export const TAIL_CAP = 16_384;

/** The mark of delivery `d` of (`s.group`, `s.topic`). */
export function failureMark(s: GroupTopicState, d: Delivery): string {
  return JSON.stringify([s.group, s.topic, d.source, d.queueId, d.offset, d.attempt, d.nonce >>> 0]);
}

/** The mark a stored record carries, or null for any other record. */
function markOf(m: StoredMessage): string | null {
  const v = m.properties[FAILED_DELIVERY];
  return typeof v === 'string' && v.startsWith('[') ? v : null;
}

/**
 * Start-up (before deadlines are armed): settle every in-flight delivery whose retry or dead letter
 * is already stored. Returns how many were settled.
 */
export async function settleWrittenFailures(ctx: ConsumeContext): Promise<number> {
  const pending = new Map<string, { s: GroupTopicState; key: DeliveryKey; d: Delivery }>();
  /** Queues to read: topic → queue ids. */
  const queues = new Map<string, number[]>();
  for (const s of ctx.states.values()) {
    let any = false;
    for (const [key, d] of s.deliveries) {
      if (d.state !== DeliveryState.INFLIGHT) continue;
      pending.set(failureMark(s, d), { s, key, d });
      any = true;
    }
    if (!any) continue;
    queues.set(
      retryTopicOf(s.group, s.topic),
      Array.from({ length: RETRY_QUEUES }, (_, q) => q),
    );
    queues.set(dlqTopicOf(baseGroupOf(s.group)), [0]);
  }
  if (pending.size === 0) return 0;
  const found = new Map<GroupTopicState, DeliveryKey[]>();
  const onMark = (mark: string) => {
    const p = pending.get(mark);
    if (!p) return;
    pending.delete(mark);
    const keys = found.get(p.s) ?? [];
    keys.push(p.key);
    found.set(p.s, keys);
  };
  for (const [topic, ids] of queues) for (const q of ids) await scanTail(ctx, topic, q, onMark);
  let settled = 0;
  for (const [s, keys] of found) {
    const done = await ctx.serialized(s, () => {
      const out: Delivery[] = [];
      for (const key of keys) if (s.deliveries.has(key)) out.push(settle(ctx, s, key));
      return out;
    });
    if (done.length === 0) continue;
    await journalSettled(ctx, s, done);
    settled += done.length;
    ctx.logger.info(
      { group: s.group, topic: s.topic, settled: done.length },
      'settled deliveries whose retry or dead letter was stored before the crash',
    );
  }
  return settled;
}

async function scanTail(
  ctx: ConsumeContext,
  topic: string,
  queueId: number,
  onMark: (mark: string) => void,
): Promise<void> {
  const q = ctx.store.queueState(topic, queueId);
  if (q.maxOffset <= q.minOffset) return;
  const since = await ctx.store.offsetForTimestamp(topic, queueId, q.lastStoreTimestamp - TAIL_WINDOW_MS);
  let at = Math.max(q.minOffset, q.maxOffset - TAIL_CAP, since);
  while (at < q.maxOffset) {
    const r = await ctx.store.read(topic, queueId, at, { maxCount: 256, maxBytes: 8 << 20 });
    for (const m of r.messages) {
      const mark = markOf(m);
      if (mark) onMark(mark);
    }
    if (r.nextOffset <= at) break;
    at = r.nextOffset;
  }
}
