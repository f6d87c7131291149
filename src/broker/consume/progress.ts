/**
 * Where each consumer group stands: per-queue progress for `consumerProgress`, the retries waiting,
 * and the backlog not yet handed out (send-side flow control). Read-only.
 */
import type { QueueProgress } from '../../common/admin-api.js';
import type { ConsumeContext } from './context.js';
import { DeliveryState, Source } from './delivery.js';
import { RETRY_QUEUES, retryTopicOf } from './retry-records.js';

export type { QueueProgress } from '../../common/admin-api.js';

/** Read-only figures of one queue of the topic for a group (metrics and the console). */
export interface QueueFigures {
  /** Next offset to hand out. */
  next: number;
  inflight: number;
  /** FIFO deliveries waiting for their retry interval. */
  waiting: number;
  /** FIFO deliveries due again. */
  due: number;
  /** FIFO messages held behind an earlier message of their group. */
  held: number;
  /** The lowest offset not yet settled. */
  lowest: number;
}

export class Progress {
  constructor(private readonly ctx: ConsumeContext) {}

  /** Per-queue figures for `consumerProgress`. */
  progress(group: string, topic: string): QueueProgress[] {
    const { store, topics, states } = this.ctx;
    const t = topics.require(topic);
    const s = states.get(group, topic);
    const out: QueueProgress[] = [];
    for (let q = 0; q < t.readQueueNums; q++) {
      const qs = store.queueState(topic, q);
      const consumerOffset = s?.topicNext.get(q) ?? qs.minOffset;
      let inflight = 0;
      let ready = 0;
      for (const d of s?.deliveries.values() ?? []) {
        if (d.source !== Source.TOPIC || d.queueId !== q) continue;
        if (d.state === DeliveryState.INFLIGHT) inflight++;
        else ready++;
      }
      const held = s?.fifo.get(q)?.held.length ?? 0;
      out.push({
        queueId: q,
        brokerOffset: qs.maxOffset,
        consumerOffset,
        inflight,
        ready,
        lag: Math.max(0, qs.maxOffset - consumerOffset) + inflight + ready + held,
        lastStoreTimestamp: qs.lastStoreTimestamp,
      });
    }
    return out;
  }

  /**
   * Per queue of the topic: the next offset to hand out, deliveries in flight, FIFO deliveries
   * waiting for or due for their retry, held FIFO messages and the lowest offset not yet settled;
   * for the group's retry topic the deliveries in flight and, per retry queue, the next offset to
   * read. Null when the group has no consumption state on the topic.
   */
  queueFigures(
    group: string,
    topic: string,
  ): { queues: Map<number, QueueFigures>; retryInflight: number; retryNext: number[] } | null {
    const { store, topics, states } = this.ctx;
    const s = states.get(group, topic);
    if (!s) return null;
    const queues = new Map<number, QueueFigures>();
    const q = (id: number): QueueFigures => {
      let f = queues.get(id);
      if (!f) {
        const next = s.topicNext.get(id) ?? store.queueState(topic, id).minOffset;
        const held = s.fifo.get(id)?.held ?? [];
        let lowest = next;
        for (const h of held) lowest = Math.min(lowest, h.offset);
        f = { next, inflight: 0, waiting: 0, due: 0, held: held.length, lowest };
        queues.set(id, f);
      }
      return f;
    };
    let retryInflight = 0;
    for (const d of s.deliveries.values()) {
      if (d.source === Source.RETRY) {
        retryInflight++;
        continue;
      }
      const f = q(d.queueId);
      if (d.state === DeliveryState.INFLIGHT) f.inflight++;
      else if (d.state === DeliveryState.WAITING_RETRY) f.waiting++;
      else f.due++;
      f.lowest = Math.min(f.lowest, d.offset);
    }
    const t = topics.get(topic);
    for (let id = 0; id < (t?.readQueueNums ?? 0); id++) q(id);
    const retryNext = Array.from({ length: RETRY_QUEUES }, (_, i) => s.retryNext.get(i) ?? 0);
    return { queues, retryInflight, retryNext };
  }

  /** Messages of a group waiting in its retry topic for `topic`. */
  retryBacklog(group: string, topic: string): number {
    const s = this.ctx.states.get(group, topic);
    const rt = retryTopicOf(group, topic);
    let n = 0;
    for (let q = 0; q < RETRY_QUEUES; q++)
      n += Math.max(0, this.ctx.store.queueState(rt, q).maxOffset - (s?.retryNext.get(q) ?? 0));
    return n;
  }

  /** Messages not yet handed out to `group` from `topic` (flow control). */
  readyBacklog(group: string, topic: string): number {
    const t = this.ctx.topics.get(topic);
    const s = this.ctx.states.get(group, topic);
    if (!t || !s) return 0;
    let n = 0;
    for (let q = 0; q < t.readQueueNums; q++)
      n += Math.max(0, this.ctx.store.queueState(topic, q).maxOffset - (s.topicNext.get(q) ?? 0));
    return n;
  }

  /** Every (group, topic) with consumption state. */
  groupTopics(): { group: string; topic: string }[] {
    return [...this.ctx.states.values()].map((s) => ({ group: s.group, topic: s.topic }));
  }

  groupsOf(topic: string): string[] {
    return [...this.ctx.states.values()].filter((s) => s.topic === topic).map((s) => s.group);
  }

  topicsOf(group: string): string[] {
    return [...this.ctx.states.values()].filter((s) => s.group === group).map((s) => s.topic);
  }
}
