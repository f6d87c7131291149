/**
 * The console's views of the broker: the overview, topics and groups with their totals, one group in
 * full, a message's deliveries. Read-only aggregations over the broker's state (admin API
 * `/api/overview`, `/api/topics?stats`, `/api/groups?stats`, `/api/groups/:g`, deliveries).
 */
import type { Broker } from '../broker/broker.js';
import { consumedTopics, dlqSize, topicLag } from '../broker/lag.js';
import { isSystemTopic } from '../broker/names.js';
import { VelaError } from '../common/errors.js';
import { VELA_VERSION } from '../common/version.js';
import { groupView, topicView } from './views.js';

/**
 * The broker at a glance: identity, uptime, totals since start (the console derives rates from
 * successive readings), storage and retention, flow control.
 */
export async function overview(broker: Broker) {
  const b = broker;
  const s = b.storageStats();
  const oldest = await b.oldestStoreTimestamp();
  const now = b.clock.now();
  return {
    brokerName: b.brokerName,
    clusterName: b.config.clusterName,
    version: VELA_VERSION,
    startedAt: b.stats.startedAt,
    uptimeMs: Math.max(0, now - b.stats.startedAt),
    now,
    topics: b.topics.list().filter((t) => !isSystemTopic(t.name)).length,
    groups: b.groups.list().length,
    clients: b.sessions.list().length,
    totals: { ...b.stats.totals },
    storage: {
      logBytes: Math.max(0, s.logEnd - s.logStart),
      segments: s.segments,
      queues: s.queues,
      diskUsedRatio: s.diskUsedRatio,
      oldestStoreTimestamp: oldest,
      retentionMs: b.config.store.retentionMs,
      diskCleanupRatio: b.config.store.diskCleanupRatio,
      diskRefuseRatio: b.config.store.diskRefuseRatio,
      flush: b.config.flush,
    },
    flowControl: {
      refusingWrites: s.refusingWrites,
      maxReadyBacklog: b.config.flowControl.maxReadyBacklog,
      refusingTopics: b.flow.refusing(),
    },
    deliveryHistory: { messages: b.deliveries.size, capacity: b.deliveries.capacity },
  };
}

/** Topics with their queues' offsets: messages stored (max − min) and the newest store time. */
export function topicStats(broker: Broker) {
  return broker.topics
    .list()
    .filter((t) => !isSystemTopic(t.name))
    .map((t) => {
      let minOffset = 0;
      let maxOffset = 0;
      let messages = 0;
      let lastStoreTimestamp = 0;
      for (let q = 0; q < Math.max(t.readQueueNums, t.writeQueueNums); q++) {
        const qs = broker.queueState(t.name, q);
        minOffset += qs.minOffset;
        maxOffset += qs.maxOffset;
        messages += qs.maxOffset - qs.minOffset;
        lastStoreTimestamp = Math.max(lastStoreTimestamp, qs.lastStoreTimestamp);
      }
      return { ...topicView(t), minOffset, maxOffset, messages, lastStoreTimestamp };
    });
}

/** Groups with their totals: lag, in flight, waiting retry, DLQ size, connected clients. */
export async function groupStats(broker: Broker) {
  const out = [];
  for (const g of broker.groups.list()) {
    let lag = 0;
    let inflight = 0;
    let waitingRetry = 0;
    let lagLatencyMs = 0;
    const kinds = new Set<string>();
    for (const { topic, kind } of consumedTopics(broker, g.name)) {
      const l = await topicLag(broker, g.name, topic);
      kinds.add(kind);
      for (const q of l.queues) {
        lag += q.lag;
        inflight += q.inflight;
        waitingRetry += q.waitingRetry;
        lagLatencyMs = Math.max(lagLatencyMs, q.lagLatencyMs);
      }
      waitingRetry += l.retry.backlog;
      inflight += l.retry.inflight;
    }
    out.push({
      ...groupView(g),
      kinds: [...kinds].sort(),
      lag,
      lagLatencyMs,
      inflight,
      waitingRetry,
      dlqSize: dlqSize(broker, g.name),
      clients: broker.sessions.list({ group: g.name }).length,
    });
  }
  return out;
}

/**
 * One group in full: its settings, per topic and queue its offsets, ready, in flight, waiting
 * retry and lag in messages and time (push, simple and pull consumers), its retry topics and its
 * dead-letter queue (the admin API adds its connected clients).
 */
export async function groupDetail(broker: Broker, group: string) {
  const g = broker.groups.require(group);
  const topics = [];
  for (const { topic } of consumedTopics(broker, group)) {
    topics.push(await topicLag(broker, group, topic));
  }
  return {
    ...groupView(g),
    topics,
    dlqSize: dlqSize(broker, group),
    dlqTopic: `%DLQ%${group}`,
    deadLetteredSinceStart: broker.consume.deadLettered.get(group) ?? 0,
  };
}

/** The recent deliveries of a message (by its id or its original id), oldest first. */
export function messageDeliveries(broker: Broker, messageId: string) {
  if (!messageId) throw new VelaError('ILLEGAL_MESSAGE_ID', 'a message id is required');
  return {
    messageId,
    remembered: broker.deliveries.enabled,
    deliveries: broker.deliveries.of(messageId).map((d) => ({
      ...d,
      group: d.group.split('%BROADCAST%')[0]!,
      committed:
        d.via === 'PULL'
          ? (broker.offsets.get(d.group, d.topic, d.queueId)?.offset ?? 0) > d.queueOffset
          : undefined,
    })),
  };
}
