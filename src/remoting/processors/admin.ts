/**
 * The codes the stock `mqadmin` uses (reference/remoting.md §A3 tier 2): topic and group
 * create/update, topic list, topic and consumer statistics, connections, reset by time, message
 * queries by offset id / UNIQ_KEY / key, and broker runtime figures. Bodies follow fastjson, including
 * its maps keyed by message-queue objects.
 *
 * A group is found, as mqadmin expects, through its `%RETRY%<group>` topic: every group has one in
 * the topic list (gRPC-only groups too), and a route query creates it.
 */
import type { Broker } from '../../broker/broker.js';
import { parseRetryPolicy } from '../../broker/retry-policy.js';
import type { TopicConfig } from '../../broker/metadata.js';
import { groupRetryTopic } from '../../broker/send-back.js';
import { VelaError } from '../../common/errors.js';
import { ResponseCode } from '../codes.js';
import type { Reply, RequestContext } from '../context.js';
import { jsonBody, mqMap, parseBody } from '../fastjson.js';
import { encodeMessages } from '../message-codec.js';

const startedAt = Date.now();

function topicConfigBody(t: TopicConfig) {
  return {
    attributes: { ...t.attributes, 'message.type': t.messageType },
    order: false,
    perm: t.perm,
    readQueueNums: t.readQueueNums,
    topicFilterType: 'SINGLE_TAG',
    topicName: t.name,
    topicSysFlag: 0,
    writeQueueNums: t.writeQueueNums,
  };
}

/** `+k=v,+k2=v2,-k3` (AttributeParser) → the attributes to set; removals are not supported. */
function parseAttributes(s: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (s ?? '').split(',')) {
    const p = part.trim();
    if (!p) continue;
    const m = /^\+([^=]+)=(.*)$/.exec(p);
    if (!m) throw new VelaError('ILLEGAL_TOPIC_CONFIG', `attribute "${p}": only "+key=value" is supported`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

export async function updateAndCreateTopic(ctx: RequestContext): Promise<Reply> {
  const h = ctx.header;
  const topic = h.str('topic');
  const read = h.optInt('readQueueNums');
  const write = h.optInt('writeQueueNums');
  const perm = h.optInt('perm');
  const attributes = parseAttributes(h.optStr('attributes'));
  await ctx.broker.topics.upsert(topic, {
    ...(read !== undefined ? { readQueueNums: read } : {}),
    ...(write !== undefined ? { writeQueueNums: write } : {}),
    ...(perm !== undefined ? { perm } : {}),
    ...(Object.keys(attributes).length ? { attributes } : {}),
  });
  return {};
}

export function getTopicConfig(ctx: RequestContext): Reply {
  const t = ctx.broker.topics.get(ctx.header.str('topic'));
  if (!t)
    return {
      code: ResponseCode.TOPIC_NOT_EXIST,
      remark: `No topic in this broker. topic: ${ctx.header.str('topic')}`,
    };
  return { body: jsonBody({ topicConfig: topicConfigBody(t), ...topicConfigBody(t) }) };
}

export function getAllTopicConfig(ctx: RequestContext): Reply {
  const table: Record<string, unknown> = {};
  for (const t of ctx.broker.topics.list()) table[t.name] = topicConfigBody(t);
  return { body: jsonBody({ topicConfigTable: table, dataVersion: { counter: 0, timestamp: startedAt } }) };
}

interface SubscriptionGroupConfig {
  groupName?: string;
  consumeEnable?: boolean;
  consumeBroadcastEnable?: boolean;
  consumeMessageOrderly?: boolean;
  retryMaxTimes?: number;
  groupRetryPolicy?: { type?: string; customizedRetryPolicy?: unknown; exponentialRetryPolicy?: unknown };
}

export async function updateAndCreateSubscriptionGroup(ctx: RequestContext): Promise<Reply> {
  const g = parseBody<SubscriptionGroupConfig>(ctx.cmd.body, 'SubscriptionGroupConfig');
  if (!g.groupName) throw new VelaError('ILLEGAL_CONSUMER_GROUP', 'groupName is required');
  const p = g.groupRetryPolicy;
  // Only an explicit policy replaces the group's (mqadmin always sends a bare CUSTOMIZED one).
  const retryPolicy =
    p && (p.customizedRetryPolicy || p.exponentialRetryPolicy) ? parseRetryPolicy(p) : undefined;
  await ctx.broker.groups.upsert(g.groupName, {
    ...(g.consumeEnable !== undefined ? { consumeEnable: g.consumeEnable } : {}),
    ...(g.consumeBroadcastEnable !== undefined ? { consumeBroadcastEnable: g.consumeBroadcastEnable } : {}),
    ...(g.consumeMessageOrderly !== undefined ? { consumeMessageOrderly: g.consumeMessageOrderly } : {}),
    ...(g.retryMaxTimes !== undefined ? { retryMaxTimes: g.retryMaxTimes } : {}),
    ...(retryPolicy ? { retryPolicy } : {}),
  });
  await ctx.broker.sendBack.ensureRetryTopic(g.groupName);
  return {};
}

export function getAllSubscriptionGroupConfig(ctx: RequestContext): Reply {
  const table: Record<string, unknown> = {};
  for (const g of ctx.broker.groups.list()) {
    table[g.name] = {
      brokerId: 0,
      consumeBroadcastEnable: g.consumeBroadcastEnable,
      consumeEnable: g.consumeEnable,
      consumeFromMinEnable: true,
      consumeMessageOrderly: g.consumeMessageOrderly,
      groupName: g.name,
      notifyConsumerIdsChangedEnable: true,
      retryMaxTimes: g.retryMaxTimes,
      retryQueueNums: 1,
      whichBrokerWhenConsumeSlowly: 1,
    };
  }
  return {
    body: jsonBody({ subscriptionGroupTable: table, dataVersion: { counter: 0, timestamp: startedAt } }),
  };
}

/** Every topic, and a `%RETRY%<group>` for every group (how mqadmin and the Dashboard list groups). */
export function getAllTopicList(ctx: RequestContext): Reply {
  const names = new Set(ctx.broker.topics.list().map((t) => t.name));
  for (const g of ctx.broker.groups.list()) names.add(groupRetryTopic(g.name));
  return { body: jsonBody({ topicList: [...names].sort() }) };
}

export function getSystemTopicList(_ctx: RequestContext): Reply {
  return { body: jsonBody({ topicList: [] }) };
}

/** Groups that consume a topic: registered subscriptions, POP state, committed offsets. */
function groupsOfTopic(b: Broker, topic: string): string[] {
  const out = new Set([...b.consumers.groupsOfTopic(topic), ...b.consume.groupsOf(topic)]);
  for (const g of b.groups.list()) if (b.offsets.list(g.name, topic).length > 0) out.add(g.name);
  return [...out].sort();
}

export function queryTopicConsumeByWho(ctx: RequestContext): Reply {
  return { body: jsonBody({ groupList: groupsOfTopic(ctx.broker, ctx.header.str('topic')) }) };
}

export function getTopicStatsInfo(ctx: RequestContext): Reply {
  const b = ctx.broker;
  const t = b.topics.require(ctx.header.str('topic'));
  const n = Math.max(t.readQueueNums, t.writeQueueNums);
  const rows = Array.from({ length: n }, (_, q) => {
    const s = b.queueState(t.name, q);
    return [
      { brokerName: b.brokerName, queueId: q, topic: t.name },
      { lastUpdateTimestamp: s.lastStoreTimestamp, maxOffset: s.maxOffset, minOffset: s.minOffset },
    ] as const;
  });
  return { body: jsonBody({ offsetTable: mqMap(rows) }) };
}

/** Topics a group consumes: named, subscribed, popped or committed. */
function topicsOfGroup(b: Broker, group: string): string[] {
  const out = new Set<string>(b.consume.topicsOf(group));
  for (const o of b.offsets.list(group)) out.add(o.topic);
  for (const c of b.consumers.clients(group)) for (const t of c.subscriptions.keys()) out.add(t);
  return [...out].filter((t) => b.topics.get(t)).sort();
}

export function getConsumeStats(ctx: RequestContext): Reply {
  const b = ctx.broker;
  const group = ctx.header.str('consumerGroup');
  if (!b.groups.get(group)) {
    return {
      code: ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
      remark: `the consumer group ${group} does not exist`,
    };
  }
  const only = ctx.header.optStr('topic');
  const topics = only ? (b.topics.get(only) ? [only] : []) : topicsOfGroup(b, group);
  const rows: (readonly [{ brokerName: string; queueId: number; topic: string }, unknown])[] = [];
  for (const topic of topics) {
    const popped = new Map(
      b.consume.topicsOf(group).includes(topic)
        ? b.consume.progress(group, topic).map((p) => [p.queueId, p])
        : [],
    );
    const t = b.topics.get(topic)!;
    for (let q = 0; q < t.readQueueNums; q++) {
      const s = b.queueState(topic, q);
      const committed = b.offsets.get(group, topic, q);
      const consumerOffset = committed?.offset ?? popped.get(q)?.consumerOffset ?? 0;
      rows.push([
        { brokerName: b.brokerName, queueId: q, topic },
        {
          brokerOffset: s.maxOffset,
          consumerOffset,
          lastTimestamp: committed?.updatedAt ?? s.lastStoreTimestamp,
          pullOffset: consumerOffset,
        },
      ]);
    }
  }
  return { body: jsonBody({ consumeTps: 0, offsetTable: mqMap(rows) }) };
}

export function getConsumerConnectionList(ctx: RequestContext): Reply {
  const b = ctx.broker;
  const group = ctx.header.str('consumerGroup');
  const clients = b.consumers.clients(group);
  const grpc = b.sessions.list({ group }).filter((s) => b.sessions.isAlive(s.clientId));
  if (clients.length === 0 && grpc.length === 0) {
    return { code: ResponseCode.CONSUMER_NOT_ONLINE, remark: `the consumer group[${group}] not online` };
  }
  const subscriptionTable: Record<string, unknown> = {};
  for (const c of clients) {
    for (const s of c.subscriptions.values()) {
      subscriptionTable[s.topic] = {
        classFilterMode: false,
        codeSet: [],
        expressionType: s.expressionType,
        subString: s.expression,
        subVersion: s.subVersion,
        tagsSet: s.filter.tags ? [...s.filter.tags] : [],
        topic: s.topic,
      };
    }
  }
  const first = clients[0];
  return {
    body: jsonBody({
      connectionSet: [
        ...clients.map((c) => ({
          clientAddr: c.remoteAddress,
          clientId: c.clientId,
          language: c.language,
          version: c.version,
        })),
        ...grpc.map((s) => ({
          clientAddr: s.remoteAddress ?? '',
          clientId: s.clientId,
          language: s.language ?? 'OTHER',
          version: 0,
        })),
      ],
      consumeFromWhere: first?.consumeFromWhere ?? 'CONSUME_FROM_LAST_OFFSET',
      consumeType: first ? first.consumeType : 'CONSUME_POP',
      messageModel: first?.messageModel ?? 'CLUSTERING',
      subscriptionTable,
    }),
  };
}

export function getProducerConnectionList(ctx: RequestContext): Reply {
  const clients = ctx.broker.consumers.producerClients(ctx.header.str('producerGroup'));
  return {
    body: jsonBody({
      connectionSet: clients.map((c) => ({
        clientAddr: c.remoteAddress,
        clientId: c.clientId,
        language: c.language,
        version: c.version,
      })),
    }),
  };
}

export async function invokeBrokerToResetOffset(ctx: RequestContext): Promise<Reply> {
  const h = ctx.header;
  const b = ctx.broker;
  const group = h.str('group');
  const topic = h.str('topic');
  const queueId = h.optInt('queueId');
  const offset = h.optInt('offset');
  const timestamp = h.optLong('timestamp') ?? -1;
  const to =
    offset !== undefined && offset >= 0 && queueId !== undefined && queueId >= 0
      ? { offset }
      : { timestamp: timestamp < 0 ? Date.now() : timestamp };
  const rows = await b.resetOffset(
    group,
    topic,
    to,
    queueId !== undefined && queueId >= 0 ? queueId : undefined,
  );
  // Consumers learn of it at their next pull (PULL_OFFSET_MOVED); a rebalance brings the queues back.
  ctx.endpoint.notifyConsumerIdsChanged(group);
  return {
    body: jsonBody({
      offsetTable: mqMap(
        rows.map((r) => [{ brokerName: b.brokerName, queueId: r.queueId, topic }, r.newOffset] as const),
      ),
    }),
  };
}

export async function viewMessageById(ctx: RequestContext): Promise<Reply> {
  const offset = ctx.header.int('offset');
  const m = await ctx.broker.messageAt(offset);
  if (!m) return { code: ResponseCode.SYSTEM_ERROR, remark: `can not find message by the offset, ${offset}` };
  return { body: encodeMessages([m], ctx.endpoint.host) };
}

export async function queryMessage(ctx: RequestContext): Promise<Reply> {
  const h = ctx.header;
  const b = ctx.broker;
  const topic = h.str('topic');
  const key = h.str('key');
  const maxNum = Math.min(Math.max(h.optInt('maxNum') ?? 32, 1), 64);
  const begin = h.optLong('beginTimestamp') ?? 0;
  const end = h.optLong('endTimestamp') ?? Number.MAX_SAFE_INTEGER;
  const byId = ctx.cmd.extFields._UNIQUE_KEY_QUERY === 'true';
  const found = byId ? await b.findMessageById(key, topic) : await b.findMessagesByKey(key, topic, maxNum);
  const inRange = found.filter((m) => m.storeTimestamp >= begin && m.storeTimestamp <= end).slice(0, maxNum);
  if (inRange.length === 0)
    return {
      code: ResponseCode.QUERY_NOT_FOUND,
      remark: `no message with ${byId ? 'id' : 'key'} ${key} in ${topic}`,
    };
  return {
    extFields: { indexLastUpdateTimestamp: Date.now(), indexLastUpdatePhyoffset: 0 },
    body: encodeMessages(inRange, ctx.endpoint.host),
  };
}

/** Total messages stored, over every queue of every topic. */
function storedTotal(b: Broker): number {
  let n = 0;
  for (const t of b.topics.list()) {
    for (let q = 0; q < Math.max(t.readQueueNums, t.writeQueueNums); q++)
      n += b.queueState(t.name, q).maxOffset;
  }
  return n;
}

export function getBrokerRuntimeInfo(ctx: RequestContext): Reply {
  const b = ctx.broker;
  const s = b.storageStats();
  const total = String(storedTotal(b));
  const table: Record<string, string> = {
    brokerVersionDesc: 'V5_3_1 (Vela)',
    brokerVersion: '475',
    brokerActive: 'true',
    bootTimestamp: String(startedAt),
    runtime: `[ ${Math.round(process.uptime())} s ]`,
    // Counters since start: Vela keeps no day boundaries.
    msgPutTotalYesterdayMorning: '0',
    msgPutTotalTodayMorning: '0',
    msgPutTotalTodayNow: total,
    msgGetTotalYesterdayMorning: '0',
    msgGetTotalTodayMorning: '0',
    msgGetTotalTodayNow: '0',
    putTps: '0.0 0.0 0.0',
    getTransferedTps: '0.0 0.0 0.0',
    getTransferredTps: '0.0 0.0 0.0',
    getFoundTps: '0.0 0.0 0.0',
    getMissTps: '0.0 0.0 0.0',
    sendThreadPoolQueueSize: '0',
    sendThreadPoolQueueCapacity: '10000',
    pullThreadPoolQueueSize: '0',
    pullThreadPoolQueueCapacity: '100000',
    sendThreadPoolQueueHeadWaitTimeMills: '0',
    pullThreadPoolQueueHeadWaitTimeMills: '0',
    pageCacheLockTimeMills: '0',
    commitLogDiskRatio: String(s.diskUsedRatio),
    commitLogMinOffset: String(s.logStart),
    commitLogMaxOffset: String(s.logEnd),
    earliestMessageTimeStamp: String(startedAt),
    dispatchBehindBytes: '0',
    timerReadBehind: '0',
    timerOffsetBehind: '0',
    timerCongestNum: '0',
    timerEnqueueTps: '0.0',
    timerDequeueTps: '0.0',
    remoteAddress: ctx.endpoint.address,
  };
  return { body: jsonBody({ table }) };
}

export function getBrokerConfig(ctx: RequestContext): Reply {
  const c = ctx.broker.config;
  const lines = [
    `brokerName=${ctx.broker.brokerName}`,
    `brokerClusterName=${ctx.endpoint.clusterName}`,
    'brokerId=0',
    `listenPort=${ctx.endpoint.address.split(':').pop()}`,
    `autoCreateTopicEnable=${c.autoCreateTopics}`,
    `autoCreateSubscriptionGroup=${c.autoCreateGroups}`,
    `flushDiskType=${c.flush === 'sync' ? 'SYNC_FLUSH' : 'ASYNC_FLUSH'}`,
    `storePathRootDir=${c.dataDir}`,
    'brokerRole=ASYNC_MASTER',
  ];
  return { body: Buffer.from(lines.join('\n') + '\n') };
}

export async function deleteTopic(ctx: RequestContext): Promise<Reply> {
  const topic = ctx.header.str('topic');
  if (ctx.broker.topics.get(topic)) await ctx.broker.deleteTopic(topic);
  return {};
}

export async function deleteSubscriptionGroup(ctx: RequestContext): Promise<Reply> {
  const group = ctx.header.str('groupName');
  if (ctx.broker.groups.get(group)) await ctx.broker.deleteGroup(group);
  return {};
}

/** VIEW_BROKER_STATS_DATA: Vela keeps no per-minute put/get statistics yet; the Dashboard gets zeros. */
export function viewBrokerStatsData(ctx: RequestContext): Reply {
  ctx.header.str('statsName');
  ctx.header.str('statsKey');
  const zero = { avgpt: 0, sum: 0, tps: 0 };
  return { body: jsonBody({ statsDay: zero, statsHour: zero, statsMinute: zero }) };
}
