/**
 * The client's verbs on a delivery it holds: ack (commit), changeInvisibleDuration (a simple
 * consumer's new deadline; a push consumer's nack) and ForwardMessageToDeadLetterQueue. Each checks
 * the receipt handle and changes the state serialized with every other change of the (group, topic);
 * each answers once its journal record is durable.
 */
import { VelaError } from '../../common/errors.js';
import { KeptKeyMap } from '../../common/kept-key-map.js';
import { newNonce } from '../receipt-handle.js';
import { journalSettled, settle } from './commit.js';
import type { ConsumeContext } from './context.js';
import { readDelivered } from './delivered.js';
import { stateKey, type Delivery } from './delivery.js';
import {
  decodeHandle,
  decodeHandles,
  liveDelivery,
  liveDeliveryIn,
  receiptHandleOf,
  type DecodedHandle,
} from './receipt.js';
import type { Revive } from './revive.js';

/** Most handles one gathered ack takes; past it the gathered ones go at once. */
const MAX_GATHERED = 1024;

/** Acks of one (group, topic) waiting for the end of the event loop's turn. */
interface Gathered {
  group: string;
  topic: string;
  handles: string[];
  callers: {
    from: number;
    n: number;
    resolve: (r: (VelaError | null)[]) => void;
    reject: (e: unknown) => void;
  }[];
  sent: boolean;
}

export class Acks {
  /** Not a Map with deletes: kept-key-map.ts. */
  private readonly gathering = new KeptKeyMap<string, Gathered>();

  constructor(
    private readonly ctx: ConsumeContext,
    private readonly revive: Revive,
  ) {}

  /**
   * Acknowledge deliveries. Per handle: null, or why it was refused. Acks of one (group, topic) that
   * arrive in the same turn of the event loop share one handle check, one serialized change and one
   * journal record: the official clients send one AckMessage per message, a received batch's worth
   * at once, and each used to cost all three.
   */
  ackMany(group: string, topic: string, receiptHandles: readonly string[]): Promise<(VelaError | null)[]> {
    if (receiptHandles.length === 0) return Promise.resolve([]);
    const key = stateKey(group, topic);
    let g = this.gathering.get(key);
    if (!g) {
      const fresh: Gathered = { group, topic, handles: [], callers: [], sent: false };
      this.gathering.set(key, fresh);
      setImmediate(() => this.sendGathered(key, fresh));
      g = fresh;
    }
    const from = g.handles.length;
    for (const h of receiptHandles) g.handles.push(h);
    const gathered = g;
    const answer = new Promise<(VelaError | null)[]>((resolve, reject) =>
      gathered.callers.push({ from, n: receiptHandles.length, resolve, reject }),
    );
    if (g.handles.length >= MAX_GATHERED) this.sendGathered(key, g);
    return answer;
  }

  private sendGathered(key: string, g: Gathered): void {
    if (g.sent) return;
    g.sent = true;
    if (this.gathering.get(key) === g) this.gathering.delete(key);
    this.ackNow(g.group, g.topic, g.handles).then(
      (results) => {
        for (const c of g.callers) c.resolve(results.slice(c.from, c.from + c.n));
      },
      (err: unknown) => {
        for (const c of g.callers) c.reject(err);
      },
    );
  }

  /** Acknowledge deliveries with one journal write. Per handle: null, or why it was refused. */
  private async ackNow(
    group: string,
    topic: string,
    receiptHandles: readonly string[],
  ): Promise<(VelaError | null)[]> {
    const ctx = this.ctx;
    const results: (VelaError | null)[] = [];
    const decoded: (DecodedHandle | null)[] = decodeHandles(ctx, group, topic, receiptHandles).map((h, i) => {
      if (!(h instanceof VelaError)) return h;
      results[i] = h;
      return null;
    });
    const settled = await ctx.serialized(stateKey(group, topic), () => {
      const done: Delivery[] = [];
      const state = ctx.states.get(group, topic);
      const now = ctx.now();
      for (let i = 0; i < decoded.length; i++) {
        const h = decoded[i];
        if (!h) continue;
        try {
          liveDeliveryIn(state, h, now);
          done.push(settle(ctx, state!, h.key));
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
      ctx.arm(s, h.key, d);
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
