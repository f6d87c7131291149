/**
 * How far each consumer group is behind, per topic and queue, for every kind of consumer: push and
 * simple consumers (message-granularity state: what was handed out, what is in flight, what waits for
 * a retry) and pull consumers (their committed offsets). RocketMQ's ConsumerLagCalculator, which its
 * own Dashboard cannot apply to gRPC (POP) consumers; metrics/ and the console both read it here.
 *
 * Per queue:
 * - `brokerOffset`: the next offset the queue will assign (messages stored so far);
 * - `consumerOffset`: the next message to hand out (push/simple) or the committed offset (pull);
 * - `committedOffset`: everything below is consumed (acked, or committed by a pull consumer);
 * - `ready`: stored, not yet handed out; `inflight`: handed out, not yet acked; `waitingRetry`: FIFO
 *   deliveries waiting for (or due for) their retry, and held FIFO messages;
 * - `lag`: messages not yet consumed (ready + in flight + waiting);
 * - `lagLatencyMs`: how long the oldest unconsumed message has waited since it was stored;
 * - `queueingLatencyMs`: the same for the oldest message not yet handed out.
 * Non-FIFO retries live in the group's retry topic, counted once per topic (`retry`).
 */
import type { ConsumeKind, QueueLag, TopicLag } from '../common/admin-api.js';
import type { Broker } from './broker.js';
import { retryTopicOf, RETRY_QUEUES, dlqTopicOf } from './consume/retry-records.js';

export type { ConsumeKind, QueueLag, TopicLag } from '../common/admin-api.js';

/** Every (group, topic) the broker has consumption state for, with its kind. */
export function consumedTopics(
  broker: Broker,
  group?: string,
): { group: string; topic: string; kind: ConsumeKind }[] {
  const out = new Map<string, { group: string; topic: string; kind: ConsumeKind }>();
  for (const { group: g, topic } of broker.consume.groupTopics()) {
    if (g.includes('%BROADCAST%') || (group !== undefined && g !== group)) continue;
    if (broker.topics.get(topic)) out.set(`${g}\u0000${topic}`, { group: g, topic, kind: 'POP' });
  }
  const groups = group !== undefined ? [group] : broker.groups.list().map((g) => g.name);
  for (const g of groups) {
    for (const c of broker.offsets.list(g)) {
      const k = `${g}\u0000${c.topic}`;
      if (!out.has(k) && broker.topics.get(c.topic)) out.set(k, { group: g, topic: c.topic, kind: 'PULL' });
    }
  }
  return [...out.values()].sort((a, b) => a.group.localeCompare(b.group) || a.topic.localeCompare(b.topic));
}

/** The lag of one group on one topic. Reads one stored record per lagging queue (for the times). */
export async function topicLag(broker: Broker, group: string, topic: string): Promise<TopicLag> {
  const t = broker.topics.require(topic);
  const now = broker.clock.now();
  const figures = broker.consume.queueFigures(group, topic);
  const kind: ConsumeKind = figures ? 'POP' : 'PULL';
  const since = async (q: number, offset: number, max: number) =>
    offset < max ? Math.max(0, now - ((await broker.storeTimestampAt(topic, q, offset)) || now)) : 0;
  const queues: QueueLag[] = [];
  for (let q = 0; q < t.readQueueNums; q++) {
    const qs = broker.queueState(topic, q);
    const max = qs.maxOffset;
    const pulled = broker.offsets.get(group, topic, q);
    const f = figures?.queues.get(q);
    let row: QueueLag;
    if (f) {
      const ready = Math.max(0, max - f.next);
      const waiting = f.waiting + f.due + f.held;
      const lowest = Math.min(f.lowest, max);
      row = {
        queueId: q,
        minOffset: qs.minOffset,
        brokerOffset: max,
        consumerOffset: f.next,
        committedOffset: lowest,
        ready,
        inflight: f.inflight,
        waitingRetry: waiting,
        lag: ready + f.inflight + waiting,
        lagLatencyMs: await since(q, Math.max(lowest, qs.minOffset), max),
        queueingLatencyMs: await since(q, Math.max(f.next, qs.minOffset), max),
        lastStoreTimestamp: qs.lastStoreTimestamp,
        lastConsumeTimestamp: pulled?.updatedAt ?? 0,
      };
    } else {
      const committed = Math.min(Math.max(pulled?.offset ?? qs.minOffset, qs.minOffset), max);
      const lagLatencyMs = await since(q, committed, max);
      row = {
        queueId: q,
        minOffset: qs.minOffset,
        brokerOffset: max,
        consumerOffset: committed,
        committedOffset: committed,
        ready: max - committed,
        inflight: 0,
        waitingRetry: 0,
        lag: max - committed,
        lagLatencyMs,
        queueingLatencyMs: lagLatencyMs,
        lastStoreTimestamp: qs.lastStoreTimestamp,
        lastConsumeTimestamp: pulled?.updatedAt ?? 0,
      };
    }
    queues.push(row);
  }
  let backlog = 0;
  let retryLatency = 0;
  if (figures) {
    const rt = retryTopicOf(group, topic);
    for (let rq = 0; rq < RETRY_QUEUES; rq++) {
      const max = broker.queueState(rt, rq).maxOffset;
      const next = Math.max(figures.retryNext[rq] ?? 0, broker.queueState(rt, rq).minOffset);
      if (max <= next) continue;
      backlog += max - next;
      if (rq === 0) retryLatency = Math.max(retryLatency, await sinceRetry(broker, rt, next, now));
    }
  }
  return {
    group,
    topic,
    kind,
    queues,
    retry: { backlog, inflight: figures?.retryInflight ?? 0, lagLatencyMs: retryLatency },
  };
}

/** How long a due retry (queue 0 holds those due at once) has waited. */
async function sinceRetry(broker: Broker, rt: string, offset: number, now: number): Promise<number> {
  const at = await broker.storeTimestampAt(rt, 0, offset);
  return at ? Math.max(0, now - at) : 0;
}

/** Messages in a group's dead-letter queue now. */
export function dlqSize(broker: Broker, group: string): number {
  const q = broker.queueState(dlqTopicOf(group), 0);
  return Math.max(0, q.maxOffset - q.minOffset);
}
