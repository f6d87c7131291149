/**
 * What an administrator changes in the consumption state: a group moved to another offset on a queue
 * (resetOffset / resetOffsetByTime), and what deleting a topic or a consumer group removes (their
 * state, and their queues and retry topics in the store). Each change of a (group, topic) is
 * serialized with its receives and acks.
 */
import type { ConsumeContext } from './context.js';
import type { ConsumeJournal } from './consume-journal.js';
import { baseGroupOf } from './delivery.js';
import { RETRY_QUEUES, parseRetryTopic, retryTopicOf } from './retry-records.js';

export class AdminChanges {
  constructor(
    private readonly ctx: ConsumeContext,
    private readonly records: ConsumeJournal,
  ) {}

  /**
   * Rewind or advance a group on one queue (admin reset): the next message handed out is `offset`;
   * its in-flight messages on that queue, held FIFO messages and waiting retries are discarded.
   * Applies to the group and to its broadcast consumers.
   */
  async resetQueue(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
  ): Promise<number | undefined> {
    const ctx = this.ctx;
    let old: number | undefined;
    for (const s of [...ctx.states.values()]) {
      if (s.topic !== topic || baseGroupOf(s.group) !== group) continue;
      await ctx.serialized(s, async () => {
        if (s.group === group) old = s.topicNext.get(queueId);
        const rt = retryTopicOf(s.group, s.topic);
        const retryNext = [];
        for (let q = 0; q < RETRY_QUEUES; q++)
          retryNext.push({ queueId: q, next: ctx.store.queueState(rt, q).maxOffset });
        this.records.resetQueue(s, queueId, offset, retryNext);
        await ctx.journal.append({
          kind: 'queueReset',
          group: s.group,
          topic: s.topic,
          queueId,
          offset,
          retryNext,
        });
      });
    }
    return old;
  }

  /**
   * A topic was deleted (or is created again under a deleted one's name): forget every group's
   * consumption state for it, and delete its queues and every retry topic for it from the store.
   * Nothing of it is delivered again, after a restart either.
   */
  async purgeTopic(topic: string): Promise<void> {
    await this.forget({ topic });
    await this.ctx.store.deleteTopic(topic);
    for (const rt of this.retryTopicsWhere((r) => r.topic === topic)) await this.ctx.store.deleteTopic(rt);
  }

  /**
   * A consumer group was deleted (or is created again under a deleted one's name): forget its
   * consumption state and its broadcast consumers', and delete its retry topics from the store.
   */
  async purgeGroup(group: string): Promise<void> {
    await this.forget({ group });
    for (const rt of this.retryTopicsWhere((r) => baseGroupOf(r.group) === group))
      await this.ctx.store.deleteTopic(rt);
  }

  /** The retry topics in the store whose (group, topic) satisfies `pick`. */
  private retryTopicsWhere(pick: (r: { group: string; topic: string }) => boolean): string[] {
    const names = new Set(this.ctx.store.listQueues().map((q) => q.topic));
    return [...names].filter((n) => {
      const r = parseRetryTopic(n);
      return r !== null && pick(r);
    });
  }

  /**
   * Forget the consumption state of a topic, or of a group and its broadcast consumers (or of one
   * broadcast consumer, `group%BROADCAST%<name>`), or of one (group, topic).
   */
  async forget(filter: { group?: string; topic?: string }): Promise<void> {
    const ctx = this.ctx;
    for (const s of [...ctx.states.values()]) {
      if (
        (filter.group === undefined || baseGroupOf(s.group) === filter.group || s.group === filter.group) &&
        (filter.topic === undefined || s.topic === filter.topic)
      ) {
        await ctx.serialized(s, async () => {
          if (!ctx.states.isLive(s)) return;
          ctx.states.delete(s.group, s.topic);
          await ctx.journal.append({ kind: 'consumeForgotten', group: s.group, topic: s.topic });
        });
      }
    }
  }
}
