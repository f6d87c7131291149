/**
 * Revive (RocketMQ's word for bringing back what was not acked in time): a delivery's deadline in the
 * heap has come.
 *
 * - An in-flight delivery whose invisible time ran out has failed its attempt. Expiries are gathered
 *   over one turn of the event loop and failed together.
 * - A FIFO delivery waiting for its retry interval becomes Ready and goes out before anything else of
 *   its message group.
 *
 * Failing (here, on a push consumer's nack, or when a client leaves): a FIFO delivery waits in place
 * for the group's fixed interval; any other becomes a new message in the group's retry topic, due
 * after the retry interval (push: the group's policy for that attempt, never less, whatever the
 * client asked; simple: at once, its invisible time having been the wait), or goes to the DLQ once it
 * has had retryMaxTimes + 1 deliveries. One store append per kind and one journal record per chunk.
 * Each retry and dead letter carries the mark of the delivery it was written for, so that a crash
 * between the store write and the journal record does not make a second copy (failure-marks.ts).
 */
import type { StoredMessage } from '../../store/index.js';
import { newNonce } from '../receipt-handle.js';
import { retryDelayMs, type RetryPolicy } from '../retry-policy.js';
import { journalSettled, settle } from './commit.js';
import type { ConsumeContext, DeliveryDeadline } from './context.js';
import { readDelivered } from './delivered.js';
import {
  DeliveryState,
  baseGroupOf,
  type Delivery,
  type Failure,
  type DeliveryKey,
  type GroupTopicState,
} from './delivery.js';
import { failureMark } from './failure-marks.js';
import { dlqRecord, dlqTopicOf, originIdOf, retryRecord } from './retry-records.js';

const FAIL_CHUNK = 512;
/** Expiries that could not be failed (the retry could not be stored: a full disk) are tried again after this. */
const REFAIL_MS = 1000;

export class Revive {
  constructor(private readonly ctx: ConsumeContext) {}

  /** The heap says a delivery's deadline has come (the item may be stale). */
  onDeadline({ state: s, key, nonce }: DeliveryDeadline, at: number): void {
    const ctx = this.ctx;
    const d = s.deliveries.get(key);
    if (!d || d.nonce !== nonce || d.deadline !== at || !ctx.states.isLive(s)) return;
    if (d.state === DeliveryState.WAITING_RETRY) {
      void ctx
        .serialized(s, () => this.markReady(s, key, nonce, at))
        .catch((err) => ctx.logger.error({ err, group: s.group, topic: s.topic }, 'journal failed'));
      return;
    }
    if (d.state !== DeliveryState.INFLIGHT) return;
    // Invisible time over without an ack: a failed attempt. A push consumer that is still alive is
    // renewed before this happens, so here the consumer is gone or timed out.
    s.expiring.push({ key, delivery: d, requestedMs: 0, immediate: !d.autoRenew, why: 'EXPIRED' });
    if (s.expiring.length === 1) {
      ctx.timers.immediate(() => {
        const due = s.expiring.splice(0);
        const nonces = due.map((f) => f.delivery.nonce);
        void ctx
          .serialized(s, () => this.fail(s, due))
          .then((r) => r.durable)
          .catch((err) => {
            ctx.logger.error(
              { err, group: s.group, topic: s.topic, retryInMs: REFAIL_MS },
              'could not schedule retries',
            );
            void ctx.serialized(s, () => this.refail(s, due, nonces));
          });
      });
    }
  }

  /**
   * Expired deliveries that could not be failed (their retry was refused) are still in flight with a
   * past deadline and nothing armed: expire them again a little later rather than never. Only those
   * untouched since (same nonce, still in flight); the new deadline is not journalled (a restart
   * finds the old one, passed, and expires them at once). Call serialized.
   */
  private refail(s: GroupTopicState, due: readonly Failure[], nonces: readonly number[]): void {
    const ctx = this.ctx;
    if (!ctx.states.isLive(s)) return;
    const at = ctx.now() + REFAIL_MS;
    due.forEach((f, i) => {
      const d = s.deliveries.get(f.key);
      if (d !== f.delivery || d.nonce !== nonces[i] || d.state !== DeliveryState.INFLIGHT) return;
      if (d.deadline > ctx.now()) return; // re-armed meanwhile
      d.deadline = at;
      ctx.arm(s, f.key, d);
    });
  }

  /** A FIFO delivery's retry interval is over: deliver it again first. Call serialized. */
  private markReady(s: GroupTopicState, key: DeliveryKey, nonce: number, at: number): Promise<void> {
    const d = s.deliveries.get(key);
    if (!d || d.nonce !== nonce || d.deadline !== at || d.state !== DeliveryState.WAITING_RETRY)
      return Promise.resolve();
    d.state = DeliveryState.READY;
    s.ready.push(key);
    this.ctx.waiters.wake(s.topic, s.group);
    return this.ctx.journal.append({
      kind: 'deliveries',
      group: s.group,
      topic: s.topic,
      nextOffsets: [],
      deliveries: [d],
      fifoLows: [],
    });
  }

  /**
   * Fail deliveries (see the header). Call serialized; await the returned `durable` outside: the
   * retries and dead letters are stored before this resolves, the journal records that settle the
   * deliveries are only appended (their place in the journal is fixed), so the (group, topic) is free
   * again one fsync earlier — a redelivery gets out that much sooner.
   */
  async fail(s: GroupTopicState, failures: readonly Failure[]): Promise<{ durable: Promise<void> }> {
    // Forgotten while this waited its turn (its group or topic was deleted, its retry topic purged):
    // a retry written now would outlive the purge and reach a group created under the same name.
    if (!this.ctx.states.isLive(s)) return { durable: Promise.resolve() };
    const journalled: Promise<void>[] = [];
    for (let i = 0; i < failures.length; i += FAIL_CHUNK)
      await this.failChunk(s, failures.slice(i, i + FAIL_CHUNK), journalled);
    const durable = Promise.all(journalled).then(() => {});
    durable.catch(() => {}); // the caller reports it
    return { durable };
  }

  private async failChunk(
    s: GroupTopicState,
    failures: readonly Failure[],
    journalled: Promise<void>[],
  ): Promise<void> {
    const ctx = this.ctx;
    const g = ctx.groups.get(baseGroupOf(s.group));
    const maxAttempts = (g?.retryMaxTimes ?? 16) + 1;
    const now = ctx.now();
    const waits: Delivery[] = [];
    const waiting: Failure[] = [];
    const rest: Failure[] = [];
    for (const f of failures) {
      const { key, delivery: d } = f;
      if (s.deliveries.get(key) !== d || d.state !== DeliveryState.INFLIGHT) continue; // settled or failed meanwhile
      if (d.fifoKey && g && d.attempt < maxAttempts) {
        d.state = DeliveryState.WAITING_RETRY;
        d.nonce = newNonce();
        // Simple consumers already waited their invisible time; push consumers wait the fixed interval.
        d.deadline = now + (f.immediate ? 0 : Math.max(f.requestedMs, g.fifoRetryIntervalMs));
        ctx.arm(s, key, d);
        waits.push(d);
        waiting.push(f);
      } else {
        rest.push(f);
      }
    }
    if (waits.length > 0) {
      journalled.push(
        ctx.journal.append({
          kind: 'deliveries',
          group: s.group,
          topic: s.topic,
          nextOffsets: [],
          deliveries: waits,
          fifoLows: [],
        }),
      );
    }
    for (const f of waiting) ctx.observer?.settled(s.group, s.topic, [f.delivery], f.why, 'FIFO_RETRY');
    if (rest.length === 0) return;
    const policy: RetryPolicy = g?.retryPolicy ?? { type: 'CUSTOMIZED', next: [] };
    // The records that gave these deliveries their nonces (hand-out, invisible-time change) must be
    // durable before a record marked with those nonces is: otherwise a crash could leave the
    // retry and an older nonce behind, and the restart would not recognise its own retry. Nothing
    // to wait for unless one of them was appended in the last moments (an expiry right after a
    // hand-out); the reads go on meanwhile.
    const [messages] = await Promise.all([
      Promise.all(rest.map((f) => readDelivered(ctx.store, s, f.delivery))),
      // A journal that cannot write (full disk, read-only) fails the settle record below anyway.
      ctx.journal.whenDurable().catch(() => {}),
    ]);
    const retries = [];
    const dead: { m: StoredMessage; delivery: Delivery }[] = [];
    for (let i = 0; i < rest.length; i++) {
      const m = messages[i];
      const { delivery: d, requestedMs, immediate } = rest[i]!;
      if (!m) continue; // removed by retention: nothing left to retry
      if (d.attempt >= maxAttempts) {
        dead.push({ m, delivery: d });
        continue;
      }
      const delay = immediate ? 0 : Math.max(requestedMs, retryDelayMs(policy, d.attempt));
      // No timer per retry (memory would grow with the backlog): a receive that finds the head of a
      // retry queue not yet due schedules one wake-up for it (pop.ts).
      retries.push(retryRecord(m, s.group, s.topic, d.attempt, now + delay, delay, failureMark(s, d)));
    }
    // Retries and dead letters are durable before the record that settles their deliveries.
    if (dead.length > 0) await this.deadLetter(s, dead);
    if (retries.length > 0) await ctx.store.append(retries);
    const settled = rest.filter((f) => s.deliveries.get(f.key) === f.delivery);
    const done = settled.map((f) => settle(ctx, s, f.key));
    if (done.length > 0) journalled.push(journalSettled(ctx, s, done));
    if (ctx.observer) {
      for (const f of settled) {
        const next = f.delivery.attempt >= maxAttempts ? 'DLQ' : 'RETRY';
        ctx.observer.settled(s.group, s.topic, [f.delivery], f.why, next);
      }
    }
  }

  /**
   * Copy messages to the group's DLQ (created on demand: one queue, readable), each marked with the
   * delivery that gave up on it; the caller then settles those deliveries.
   */
  async deadLetter(
    s: GroupTopicState,
    dead: readonly { m: StoredMessage; delivery: Delivery }[],
  ): Promise<void> {
    const ctx = this.ctx;
    const group = baseGroupOf(s.group);
    const dlq = dlqTopicOf(group);
    if (!ctx.topics.get(dlq))
      await ctx.topics.upsert(dlq, { readQueueNums: 1, writeQueueNums: 1 }, { system: true });
    await ctx.store.append(
      dead.map(({ m, delivery: d }) => dlqRecord(m, s.group, s.topic, d.attempt, failureMark(s, d))),
    );
    ctx.observer?.deadLettered(group, s.topic, dead.length);
    ctx.deadLettered.set(group, (ctx.deadLettered.get(group) ?? 0) + dead.length);
    for (const { m, delivery } of dead) {
      ctx.logger.warn(
        { group: s.group, topic: s.topic, messageId: originIdOf(m), attempts: delivery.attempt, dlq },
        'message moved to the dead-letter queue',
      );
    }
  }
}
