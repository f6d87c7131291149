/**
 * The consumption core's part of the state journal: apply its records (at replay, and for the admin
 * changes that are applied the way they are replayed), and give and take snapshots.
 */
import type { StateRecord } from '../state-records.js';
import type { ConsumeSnapshot, LiveConsumeEntry } from '../state-snapshots.js';
import type { ConsumeContext } from './context.js';
import { Source, deliveryKey, type GroupTopicState } from './delivery.js';

export class ConsumeJournal {
  constructor(private readonly ctx: ConsumeContext) {}

  apply(rec: StateRecord): boolean {
    const states = this.ctx.states;
    switch (rec.kind) {
      case 'deliveries': {
        const s = states.getOrCreate(rec.group, rec.topic);
        for (const o of rec.nextOffsets) s.nextOffsets(o.source).set(o.queueId, o.next);
        for (const d of rec.deliveries) s.deliveries.set(deliveryKey(d.source, d.queueId, d.offset), d);
        for (const { queueId, low } of rec.fifoLows) s.fifoQueue(queueId, low).low = low;
        return true;
      }
      case 'settled': {
        const s = states.getOrCreate(rec.group, rec.topic);
        for (const { source, queueId, offset } of rec.settled) {
          s.deliveries.delete(deliveryKey(source, queueId, offset));
          if (rec.fifo && source === Source.TOPIC) s.fifoQueue(queueId, offset).settled.add(offset);
        }
        for (const { queueId, low } of rec.fifoLows) {
          const fq = s.fifoQueue(queueId, low);
          fq.low = low;
          for (const o of fq.settled) if (o < low) fq.settled.delete(o);
        }
        return true;
      }
      case 'consumeForgotten':
        states.delete(rec.group, rec.topic);
        return true;
      case 'retryTopicsRenamed': {
        for (const m of rec.moved) {
          const s = states.getOrCreate(m.group, m.topic);
          for (const r of m.retryNext) s.retryNext.set(r.queueId, r.next);
          for (const d of m.dropped) s.deliveries.delete(deliveryKey(d.source, d.queueId, d.offset));
          s.retryDueHint.clear();
        }
        this.ctx.retryTopicsRenamed = true;
        return true;
      }
      case 'queueReset': {
        const s = states.getOrCreate(rec.group, rec.topic);
        this.resetQueue(s, rec.queueId, rec.offset, rec.retryNext);
        return true;
      }
      default:
        return false;
    }
  }

  /**
   * Move a queue's read position; drop its in-flight and held messages and every waiting retry of
   * the (group, topic). Call serialized (or at replay).
   */
  resetQueue(
    s: GroupTopicState,
    queueId: number,
    offset: number,
    retryNext: readonly { queueId: number; next: number }[],
  ): void {
    s.topicNext.set(queueId, offset);
    for (const r of retryNext) s.retryNext.set(r.queueId, r.next);
    s.retryDueHint.clear();
    for (const [k, d] of [...s.deliveries]) {
      if (d.source === Source.RETRY || d.queueId === queueId) {
        s.deliveries.delete(k);
        if (d.fifoKey && s.blocked.get(d.fifoKey) === k) s.blocked.delete(d.fifoKey);
      }
    }
    s.fifo.delete(queueId);
    this.ctx.waiters.wake(s.topic, s.group);
  }

  snapshot(): ConsumeSnapshot {
    return {
      retryTopicsRenamed: this.ctx.retryTopicsRenamed,
      entries: [...this.ctx.states.values()].map((s) => ({
        group: s.group,
        topic: s.topic,
        nextOffsets: [
          ...[...s.topicNext].map(([queueId, next]) => ({ source: Source.TOPIC, queueId, next })),
          ...[...s.retryNext].map(([queueId, next]) => ({ source: Source.RETRY, queueId, next })),
        ],
        deliveries: [...s.deliveries.values()],
        fifo: [...s.fifo].map(([queueId, f]) => ({ queueId, low: f.low, settled: [...f.settled] })),
      })),
    };
  }

  /**
   * The state as the snapshot writer walks it, a (group, topic) at a time and its deliveries lazily,
   * while it keeps changing (every change made meanwhile has a record after the snapshot position,
   * replayed over it; see state-journal.ts).
   */
  *walk(): Generator<LiveConsumeEntry> {
    for (const s of this.ctx.states.values()) {
      if (!this.ctx.states.isLive(s)) continue;
      yield {
        group: s.group,
        topic: s.topic,
        nextOffsets: [
          ...[...s.topicNext].map(([queueId, next]) => ({ source: Source.TOPIC, queueId, next })),
          ...[...s.retryNext].map(([queueId, next]) => ({ source: Source.RETRY, queueId, next })),
        ],
        deliveries: s.deliveries.values(),
        fifo: [...s.fifo].map(([queueId, f]) => ({ queueId, low: f.low, settled: [...f.settled] })),
      };
    }
  }

  restore(snapshot: ConsumeSnapshot): void {
    this.ctx.states.clear();
    this.ctx.retryTopicsRenamed = snapshot.retryTopicsRenamed;
    for (const e of snapshot.entries) {
      const s = this.ctx.states.getOrCreate(e.group, e.topic);
      for (const o of e.nextOffsets) s.nextOffsets(o.source).set(o.queueId, o.next);
      for (const d of e.deliveries) s.deliveries.set(deliveryKey(d.source, d.queueId, d.offset), d);
      for (const f of e.fifo) {
        const fq = s.fifoQueue(f.queueId, f.low);
        for (const o of f.settled) fq.settled.add(o);
      }
    }
  }
}
