/**
 * Admin operations: the core that the HTTP API (and through it `vela admin` and the console) calls.
 * Plain data in, plain data out.
 */
import { getHeapStatistics } from 'node:v8';
import type { Broker } from '../broker/broker.js';
import type { AccessControl } from '../broker/auth/access-control.js';
import { groupConsumerKinds } from '../broker/group-kinds.js';
import { parseRetryPolicy } from '../broker/retry-policy.js';
import { VelaError } from '../common/errors.js';
import { AclOperations } from './acl-operations.js';
import { groupDetail, groupStats, messageDeliveries, overview, topicStats } from './console-views.js';
import { groupView, messageView, topicView, type GroupView, type TopicView } from './views.js';

export type { GroupView, TopicView };

export interface UpdateTopicInput {
  topic: string;
  readQueueNums?: number;
  writeQueueNums?: number;
  perm?: number;
  /** `{ "message.type": "FIFO" }` */
  attributes?: Record<string, string>;
}

export interface UpdateGroupInput {
  group: string;
  retryMaxTimes?: number;
  consumeMessageOrderly?: boolean;
  consumeBroadcastEnable?: boolean;
  consumeEnable?: boolean;
  /** mqadmin's JSON (object or string). */
  groupRetryPolicy?: unknown;
  fifoRetryIntervalMs?: number;
}

export class AdminOperations {
  /** Users and ACLs (mqadmin's createUser … listAcl). */
  readonly acl: AclOperations;

  constructor(private readonly broker: Broker) {
    this.acl = new AclOperations(broker.acl);
  }

  /** The checks the admin API itself is under (acl-auth.ts). */
  get accessControl(): AccessControl {
    return this.broker.acl;
  }

  async updateTopic(input: UpdateTopicInput): Promise<TopicView> {
    if (!input.topic) throw new VelaError('ILLEGAL_TOPIC', 'a topic name is required');
    const a = input.attributes;
    if (a !== undefined && (a === null || typeof a !== 'object' || Array.isArray(a)))
      throw new VelaError('ILLEGAL_TOPIC_CONFIG', 'attributes must be an object of names to string values');
    return topicView(
      await this.broker.topics.upsert(input.topic, {
        ...(input.readQueueNums !== undefined ? { readQueueNums: input.readQueueNums } : {}),
        ...(input.writeQueueNums !== undefined ? { writeQueueNums: input.writeQueueNums } : {}),
        ...(input.perm !== undefined ? { perm: input.perm } : {}),
        ...(input.attributes ? { attributes: input.attributes } : {}),
      }),
    );
  }

  async deleteTopic(topic: string): Promise<void> {
    await this.broker.deleteTopic(topic);
  }

  topicList(): TopicView[] {
    return this.broker.topics.list().map(topicView);
  }

  getTopic(topic: string): TopicView {
    return topicView(this.broker.topics.require(topic));
  }

  topicStatus(topic: string) {
    const t = this.broker.topics.require(topic);
    const n = Math.max(t.readQueueNums, t.writeQueueNums);
    return Array.from({ length: n }, (_, q) => {
      const s = this.broker.queueState(topic, q);
      return {
        brokerName: this.broker.brokerName,
        queueId: q,
        minOffset: s.minOffset,
        maxOffset: s.maxOffset,
        lastUpdateTimestamp: s.lastStoreTimestamp,
      };
    });
  }

  topicRoute(topic: string, grpcAddress: string) {
    const t = this.broker.topics.require(topic);
    return {
      brokerDatas: [{ brokerName: this.broker.brokerName, brokerAddrs: { 0: grpcAddress } }],
      queueDatas: [
        {
          brokerName: this.broker.brokerName,
          readQueueNums: t.readQueueNums,
          writeQueueNums: t.writeQueueNums,
          perm: t.perm,
        },
      ],
      messageType: t.messageType,
    };
  }

  async updateSubGroup(input: UpdateGroupInput): Promise<GroupView> {
    if (!input.group) throw new VelaError('ILLEGAL_CONSUMER_GROUP', 'a group name is required');
    return groupView(
      await this.broker.groups.upsert(input.group, {
        ...(input.retryMaxTimes !== undefined ? { retryMaxTimes: input.retryMaxTimes } : {}),
        ...(input.consumeMessageOrderly !== undefined
          ? { consumeMessageOrderly: input.consumeMessageOrderly }
          : {}),
        ...(input.consumeBroadcastEnable !== undefined
          ? { consumeBroadcastEnable: input.consumeBroadcastEnable }
          : {}),
        ...(input.consumeEnable !== undefined ? { consumeEnable: input.consumeEnable } : {}),
        ...(input.groupRetryPolicy !== undefined
          ? { retryPolicy: parseRetryPolicy(input.groupRetryPolicy) }
          : {}),
        ...(input.fifoRetryIntervalMs !== undefined
          ? { fifoRetryIntervalMs: input.fifoRetryIntervalMs }
          : {}),
      }),
    );
  }

  async deleteSubGroup(group: string): Promise<void> {
    await this.broker.deleteGroup(group);
  }

  groupList(): GroupView[] {
    return this.broker.groups.list().map(groupView);
  }

  getGroup(group: string): GroupView {
    return groupView(this.broker.groups.require(group));
  }

  /**
   * Per queue of each topic the group consumes: broker offset, consumer offset, in-flight, lag and
   * last consume time. Push/simple (POP) consumption and pull consumers' committed offsets alike.
   */
  consumerProgress(group: string, topic?: string) {
    this.broker.groups.require(group);
    const committed = this.broker.offsets.list(group, topic);
    const topics = topic
      ? [topic]
      : [...new Set([...this.broker.consume.topicsOf(group), ...committed.map((c) => c.topic)])].sort();
    const queues = [];
    for (const t of topics) {
      if (!this.broker.topics.get(t)) continue;
      const pop = new Map(this.broker.consume.progress(group, t).map((p) => [p.queueId, p]));
      const pulled = new Map(committed.filter((c) => c.topic === t).map((c) => [c.queueId, c]));
      for (const [queueId, p] of pop) {
        const c = pulled.get(queueId);
        if (c && !this.broker.consume.topicsOf(group).includes(t)) {
          // A pull group: its committed offset is its progress.
          queues.push({
            topic: t,
            brokerName: this.broker.brokerName,
            queueId,
            brokerOffset: p.brokerOffset,
            consumerOffset: c.offset,
            inflight: 0,
            ready: 0,
            lag: Math.max(0, p.brokerOffset - c.offset),
            lastStoreTimestamp: p.lastStoreTimestamp,
            lastConsumeTimestamp: c.updatedAt,
          });
        } else {
          queues.push({
            topic: t,
            brokerName: this.broker.brokerName,
            ...p,
            lastConsumeTimestamp: c?.updatedAt ?? 0,
          });
        }
      }
    }
    const totalLag = queues.reduce((a, q) => a + q.lag, 0);
    const inflight = queues.reduce((a, q) => a + q.inflight + q.ready, 0);
    const waitingRetry = topics.reduce(
      (a, t) => a + (this.broker.topics.get(t) ? this.broker.consume.retryBacklog(group, t) : 0),
      0,
    );
    const deadLettered =
      (this.broker.consume.deadLettered.get(group) ?? 0) +
      (this.broker.sendBack.deadLettered.get(group) ?? 0);
    const mixed = groupConsumerKinds(this.broker, group).warning;
    return { group, queues, totalLag, inflight, waitingRetry, deadLettered, warnings: mixed ? [mixed] : [] };
  }

  /** Move a group back or forward: to the first message at or after a time, or to an offset. */
  async resetOffset(input: {
    group: string;
    topic: string;
    timestamp?: number;
    offset?: number;
    queueId?: number;
  }) {
    if ((input.timestamp === undefined) === (input.offset === undefined)) {
      throw new VelaError('BAD_REQUEST', 'give exactly one of timestamp (ms) and offset');
    }
    const value = Number(input.timestamp ?? input.offset);
    if (!Number.isFinite(value) || value < 0)
      throw new VelaError('BAD_REQUEST', 'timestamp and offset must be numbers ≥ 0');
    const to = input.timestamp !== undefined ? { timestamp: value } : { offset: value };
    const queues = await this.broker.resetOffset(input.group, input.topic, to, input.queueId);
    return { group: input.group, topic: input.topic, ...to, queues };
  }

  consumerConnection(group: string) {
    this.broker.groups.require(group);
    return this.broker.sessions.list({ group }).map((s) => ({
      clientId: s.clientId,
      clientType: s.clientType,
      remoteAddress: s.remoteAddress ?? '',
      language: s.language ?? '',
      version: s.version ?? '',
      topics: s.topics,
      connectedAt: s.connectedAt,
      lastSeen: s.lastSeen,
    }));
  }

  async queryMsgById(messageId: string, topic?: string) {
    return (await this.broker.findMessageById(messageId, topic)).map(messageView);
  }

  async queryMsgByKey(key: string, topic?: string, limit?: number) {
    return (await this.broker.findMessagesByKey(key, topic, limit)).map(messageView);
  }

  /** Messages in a group's dead-letter queue (`%DLQ%<group>`), oldest first. */
  async queryDlqMsg(group: string, offset?: number, limit?: number) {
    const page = await this.broker.deadLetters(group, offset ?? 0, limit ?? 32);
    return {
      group,
      dlqTopic: `%DLQ%${group}`,
      messages: page.messages.map((m) => ({
        ...messageView(m),
        originTopic: m.properties.DLQ_ORIGIN_TOPIC ?? '',
        originMessageId: m.properties.ORIGIN_MESSAGE_ID ?? m.messageId,
      })),
      nextOffset: page.nextOffset,
      maxOffset: page.maxOffset,
      deadLetteredSinceStart: this.broker.consume.deadLettered.get(group) ?? 0,
    };
  }

  /** Send one dead letter (by message id) or all of them back to the group. */
  async resendDlqMsg(group: string, messageId?: string) {
    return { group, resent: await this.broker.resendDeadLetters(group, messageId || undefined) };
  }

  /** Delay messages waiting, per topic (or one topic), and when the next is due. */
  async timerStatus(topic?: string) {
    if (topic !== undefined) this.broker.topics.require(topic);
    const s = await this.broker.timer.status(topic);
    return {
      scheduled: s.scheduled,
      nextDueAt: s.nextDueAt,
      topics: s.topics.map((t) => ({ topic: t.topic, scheduled: t.scheduled, nextDueAt: t.nextDueAt })),
    };
  }

  /** Transactions not yet committed or rolled back, per topic (or one topic). */
  transactionStatus(topic?: string) {
    if (topic !== undefined) this.broker.topics.require(topic);
    const topics = this.broker.transactions.status(topic);
    return { open: topics.reduce((n, t) => n + t.open, 0), topics };
  }

  // --- the console ------------------------------------------------------------------------------

  /** The broker at a glance (console-views.ts). */
  overview() {
    return overview(this.broker);
  }

  /** Topics with their queues' offsets (console-views.ts). */
  topicStats() {
    return topicStats(this.broker);
  }

  /** Groups with their totals (console-views.ts). */
  groupStats() {
    return groupStats(this.broker);
  }

  /** One group in full (console-views.ts). */
  async groupDetail(group: string) {
    return { ...(await groupDetail(this.broker, group)), connections: this.consumerConnection(group) };
  }

  /** Messages stored in a topic between two times (ms since the epoch), oldest first. */
  async queryMsgByTime(topic: string, from: number, to: number, limit?: number) {
    if (!Number.isFinite(from) || !Number.isFinite(to) || from < 0 || to < from) {
      throw new VelaError('BAD_REQUEST', 'give a time range: 0 ≤ from ≤ to (ms since the epoch)');
    }
    return (await this.broker.messagesBetween(topic, from, to, limit ?? 32)).map(messageView);
  }

  /** The recent deliveries of a message (console-views.ts). */
  messageDeliveries(messageId: string) {
    return messageDeliveries(this.broker, messageId);
  }

  brokerInfo() {
    const s = this.broker.storageStats();
    return {
      brokerName: this.broker.brokerName,
      topics: this.broker.topics.list().length,
      groups: this.broker.groups.list().length,
      clients: this.broker.sessions.list().length,
      scheduledMessages: this.broker.timer.size,
      openTransactions: this.broker.transactions.openCount,
      timer: {
        delivered: this.broker.timer.delivered,
        loadedEntries: this.broker.timer.loadedEntries(),
        index: this.broker.timer.indexProgress,
        recovery: this.broker.timer.recovery,
      },
      acl: { enabled: this.broker.acl.enabled, users: this.broker.acl.registry.userCount },
      deadLettered: Object.fromEntries(this.broker.consume.deadLettered),
      store: s,
      process: {
        // Not process.memoryUsage(): it also totals external memory, which costs the broker milliseconds
        // under load (this endpoint is polled by the console and bench:compare's memory samples).
        rssBytes: process.memoryUsage.rss(),
        heapUsedBytes: getHeapStatistics().used_heap_size,
        uptimeSeconds: Math.round(process.uptime()),
      },
    };
  }
}
