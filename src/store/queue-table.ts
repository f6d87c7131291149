/**
 * The store's queue indexes: a map by `queueKey(topic, queueId)`, as recovery and maintenance walk
 * it, that also files each queue under its topic, so the hot lookups (an append's queue, a receive
 * looking at every queue of a topic and at the 33 queues of its retry topic) find a queue without
 * building its key string: one map lookup by the topic's string and an array index.
 */
import type { QueueIndex } from './queue-index.js';
import { queueKey } from './store-types.js';

/** Queue ids filed by topic; anything else (never seen in practice) is found through its key. */
const MAX_FILED_QUEUE_ID = 1 << 16;

const filed = (queueId: number) => Number.isInteger(queueId) && queueId >= 0 && queueId < MAX_FILED_QUEUE_ID;

export class QueueTable extends Map<string, QueueIndex> {
  private readonly byTopic = new Map<string, (QueueIndex | undefined)[]>();

  /** `key` must be `queueKey(q.topic, q.queueId)`. */
  override set(key: string, q: QueueIndex): this {
    super.set(key, q);
    if (filed(q.queueId)) {
      let list = this.byTopic.get(q.topic);
      if (!list) this.byTopic.set(q.topic, (list = []));
      list[q.queueId] = q;
    }
    return this;
  }

  override delete(key: string): boolean {
    const q = super.get(key);
    if (!q) return false;
    super.delete(key);
    const list = this.byTopic.get(q.topic);
    if (list && list[q.queueId] === q) {
      list[q.queueId] = undefined;
      if (list.every((x) => x === undefined)) this.byTopic.delete(q.topic);
    }
    return true;
  }

  override clear(): void {
    super.clear();
    this.byTopic.clear();
  }

  /** The queue (topic, queueId), if the store has it: `get(queueKey(topic, queueId))` without the key. */
  at(topic: string, queueId: number): QueueIndex | undefined {
    return filed(queueId) ? this.byTopic.get(topic)?.[queueId] : super.get(queueKey(topic, queueId));
  }
}
