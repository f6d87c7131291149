/**
 * The client's verbs on a delivery it holds: ack (commit), changeInvisibleDuration (a simple
 * consumer's new deadline; a push consumer's nack) and ForwardMessageToDeadLetterQueue. Each checks
 * the receipt handle and changes the state serialized with every other change of the (group, topic);
 * each answers once its journal record is durable.
 */
import { VelaError } from '../../common/errors.js';
import { newNonce } from '../receipt-handle.js';
import { journalSettled, settle } from './commit.js';
import type { ConsumeContext } from './context.js';
import { readDelivered } from './delivered.js';
import { stateKey, type Delivery, type GroupTopicState } from './delivery.js';
import { decodeHandle, liveDelivery, receiptHandleOf, type DecodedHandle } from './receipt.js';
import type { Revive } from './revive.js';

export class Acks {
  constructor(
    private readonly ctx: ConsumeContext,
    private readonly revive: Revive,
  ) {}

  /** Acknowledge deliveries with one journal write. Per handle: null, or why it was refused. */
  async ackMany(
    group: string,
    topic: string,
    receiptHandles: readonly string[],
  ): Promise<(VelaError | null)[]> {
    const ctx = this.ctx;
    const results: (VelaError | null)[] = [];
    const decoded: (DecodedHandle | null)[] = receiptHandles.map((h, i) => {
      try {
        return decodeHandle(ctx, group, topic, h);
      } catch (err) {
        if (!(err instanceof VelaError)) throw err;
        results[i] = err;
        return null;
      }
    });
    const settled = await ctx.serialized(stateKey(group, topic), () => {
      const done: Delivery[] = [];
      let state: GroupTopicState | undefined;
      for (let i = 0; i < decoded.length; i++) {
        const h = decoded[i];
        if (!h) continue;
        try {
          state = liveDelivery(ctx, group, topic, h).s;
          done.push(settle(ctx, state, h.key));
          results[i] = null;
        } catch (err) {
          if (!(err instanceof VelaError)) throw err;
          results[i] = err;
        }
      }
      if (done.length > 0) ctx.observer?.settled(group, topic, done, 'ACKED');
      return { durable: state && done.length > 0 ? journalSettled(ctx, state, done) : undefined };
    });
    await settled.durable;
    return results;
  }

  /**
   * ChangeInvisibleDuration. For a simple consumer: invisible for `ms` from now (0: visible again at
   * once); returns the new receipt handle. For a push consumer this is its nack: the message waits
   * for the group's retry interval (never less) or goes to the DLQ.
   */
  async changeInvisibleDuration(
    group: string,
    topic: string,
    receiptHandle: string,
    ms: number,
  ): Promise<string> {
    const ctx = this.ctx;
    const h = decodeHandle(ctx, group, topic, receiptHandle);
    const r = await ctx.serialized(h.stateKey, async () => {
      const { s, d } = liveDelivery(ctx, group, topic, h);
      if (d.autoRenew) {
        const failed = await this.revive.fail(s, [
          { key: h.key, delivery: d, requestedMs: ms, immediate: false, why: 'NACKED' },
        ]);
        return { handle: receiptHandle, durable: failed.durable };
      }
      d.nonce = newNonce();
      d.deadline = ctx.now() + ms;
      ctx.arm(s, h.key, d.nonce, d.deadline);
      const durable = ctx.journal.append({
        kind: 'deliveries',
        group,
        topic,
        nextOffsets: [],
        deliveries: [d],
        fifoLows: [],
      });
      return { handle: receiptHandleOf(ctx, s, d), durable };
    });
    await r.durable;
    return r.handle;
  }

  /** ForwardMessageToDeadLetterQueue: the client gives up on the message. */
  async forwardToDeadLetter(group: string, topic: string, receiptHandle: string): Promise<void> {
    const ctx = this.ctx;
    const h = decodeHandle(ctx, group, topic, receiptHandle);
    await ctx.serialized(h.stateKey, async () => {
      const { s, d } = liveDelivery(ctx, group, topic, h);
      const m = await readDelivered(ctx.store, s, d);
      if (m) await this.revive.deadLetter(s, [{ m, delivery: d }]);
      await journalSettled(ctx, s, [settle(ctx, s, h.key)]);
      ctx.observer?.settled(s.group, s.topic, [d], 'FORWARDED_TO_DLQ', 'DLQ');
    });
  }
}
