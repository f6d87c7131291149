/**
 * Push consumers do not choose an invisible time: the server picks one and renews it while the
 * client lives (its Telemetry stream is open or it heartbeats), so a slow listener never sees its
 * message redelivered. When the client leaves, its deliveries go back to the group at once.
 */
import type { ConsumeContext } from './context.js';
import {
  DeliveryState,
  type Delivery,
  type Failure,
  type DeliveryKey,
  type GroupTopicState,
} from './delivery.js';
import type { Revive } from './revive.js';

export class AutoRenew {
  constructor(
    private readonly ctx: ConsumeContext,
    private readonly revive: Revive,
  ) {}

  start(): void {
    this.ctx.renewing = true;
    this.ctx.timers.interval(
      () => void this.renew().catch((err) => this.ctx.logger.error({ err }, 'renew failed')),
      this.ctx.options.renewIntervalMs,
      { unref: true },
    );
  }

  /** Extend the auto-renewed deliveries of live clients that are close to their deadline. */
  async renew(): Promise<void> {
    for (const s of [...this.ctx.states.values()]) {
      if (this.due(s, this.ctx.now()).next().done) continue;
      const renewed = await this.ctx.serialized(s, () => ({ durable: this.renewState(s) }));
      await renewed.durable;
    }
  }

  /**
   * The deliveries of live clients to renew now. Those of clients that are gone are left to expire:
   * one the hand-out left to this scan (`armUnlessRenewed`) is armed here, at its deadline.
   */
  private *due(s: GroupTopicState, now: number): Generator<[DeliveryKey, Delivery]> {
    const { renewAheadMs } = this.ctx.options;
    for (const [key, d] of s.deliveries) {
      if (d.state !== DeliveryState.INFLIGHT || !d.autoRenew || d.deadline - now > renewAheadMs) continue;
      if (!this.ctx.sessions.isAlive(d.clientId)) {
        if (!d.armed) this.ctx.arm(s, key, d);
        continue;
      }
      yield [key, d];
    }
  }

  /** Call serialized; returns the journal write to wait for (outside). */
  private renewState(s: GroupTopicState): Promise<void> | undefined {
    const ctx = this.ctx;
    const now = ctx.now();
    const renewed: Delivery[] = [];
    for (const [key, d] of this.due(s, now)) {
      d.deadline = now + ctx.options.autoRenewInvisibleMs;
      ctx.armUnlessRenewed(s, key, d, now);
      renewed.push(d);
    }
    if (renewed.length === 0) return undefined;
    return ctx.journal.append({
      kind: 'deliveries',
      group: s.group,
      topic: s.topic,
      nextOffsets: [],
      deliveries: renewed,
      fifoLows: [],
    });
  }

  /** A client left: its auto-renewed (push) deliveries go back to the group at once. */
  async releaseClient(clientId: string): Promise<number> {
    let released = 0;
    for (const s of [...this.ctx.states.values()]) {
      if (!this.heldBy(s, clientId).length) continue;
      const r = await this.ctx.serialized(s, async () => {
        const mine = this.heldBy(s, clientId);
        const failed = await this.revive.fail(s, mine);
        return { n: mine.length, durable: failed.durable };
      });
      await r.durable;
      released += r.n;
    }
    if (released > 0)
      this.ctx.logger.info({ clientId, released }, 'released in-flight messages of a departed client');
    return released;
  }

  private heldBy(s: GroupTopicState, clientId: string): Failure[] {
    const mine: Failure[] = [];
    for (const [key, d] of s.deliveries) {
      if (d.state === DeliveryState.INFLIGHT && d.autoRenew && d.clientId === clientId)
        mine.push({ key, delivery: d, requestedMs: 0, immediate: true, why: 'RELEASED' });
    }
    return mine;
  }
}
