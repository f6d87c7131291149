/**
 * Client management: HEART_BEAT (consumers register their group, model and subscriptions; producers
 * their group, and take orphaned-transaction checks for it), UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP (what clients rebalance queues over),
 * LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (orderly consumers) and CHECK_CLIENT_CONFIG.
 */
import { groupConsumerKinds } from '../../broker/group-kinds.js';
import { parseSubscription } from '../../broker/consumer-manager.js';
import { ResponseCode } from '../codes.js';
import type { Reply, RequestContext } from '../context.js';
import { jsonBody, parseBody } from '../fastjson.js';
import { stopTransactionChecks, takeTransactionChecks } from './transaction.js';

interface SubscriptionData {
  topic?: string;
  subString?: string;
  expressionType?: string;
  subVersion?: number;
}

interface ConsumerData {
  groupName?: string;
  consumeType?: string;
  messageModel?: string;
  consumeFromWhere?: string;
  subscriptionDataSet?: SubscriptionData[];
}

interface HeartbeatData {
  clientID?: string;
  producerDataSet?: { groupName?: string }[];
  consumerDataSet?: ConsumerData[];
}

/** Groups already warned about serving both kinds of consumer (one log line per group and broker). */
const warnedMixed = new WeakMap<object, Set<string>>();

export async function heartbeat(ctx: RequestContext): Promise<Reply> {
  const hb = parseBody<HeartbeatData>(ctx.cmd.body, 'HeartbeatData');
  const clientId = hb.clientID;
  if (!clientId) return { code: ResponseCode.INVALID_PARAMETER, remark: 'the heartbeat has no clientID' };
  const b = ctx.broker;
  for (const p of hb.producerDataSet ?? []) {
    if (!p.groupName) continue;
    b.consumers.registerProducer({
      clientId,
      group: p.groupName,
      channel: ctx.conn.id,
      language: ctx.cmd.language,
      version: ctx.cmd.version,
      remoteAddress: ctx.conn.remoteAddress,
    });
    takeTransactionChecks(ctx, p.groupName);
  }
  for (const c of hb.consumerDataSet ?? []) {
    const group = c.groupName;
    if (!group) continue;
    if (!b.groups.get(group) && b.config.autoCreateGroups) await b.consume.requireGroup(group);
    if (b.groups.get(group) && c.messageModel !== 'BROADCASTING') await b.sendBack.ensureRetryTopic(group);
    b.consumers.register({
      clientId,
      group,
      channel: ctx.conn.id,
      ...(c.consumeType ? { consumeType: c.consumeType } : {}),
      ...(c.messageModel ? { messageModel: c.messageModel } : {}),
      ...(c.consumeFromWhere ? { consumeFromWhere: c.consumeFromWhere } : {}),
      subscriptions: (c.subscriptionDataSet ?? [])
        .filter((s) => s.topic)
        .map((s) => ({
          topic: s.topic!,
          ...(s.subString !== undefined ? { expression: s.subString } : {}),
          ...(s.expressionType ? { expressionType: s.expressionType } : {}),
          ...(s.subVersion !== undefined ? { subVersion: Number(s.subVersion) } : {}),
        })),
      language: ctx.cmd.language,
      version: ctx.cmd.version,
      remoteAddress: ctx.conn.remoteAddress,
    });
    const kinds = groupConsumerKinds(b, group);
    let warned = warnedMixed.get(b);
    if (!warned) warnedMixed.set(b, (warned = new Set()));
    if (kinds.warning && !warned.has(group)) {
      warned.add(group);
      ctx.logger.warn({ group }, kinds.warning);
    }
  }
  return {};
}

export function unregisterClient(ctx: RequestContext): Reply {
  const clientId = ctx.header.str('clientID');
  const consumerGroup = ctx.header.optStr('consumerGroup');
  const producerGroup = ctx.header.optStr('producerGroup');
  if (consumerGroup) ctx.broker.consumers.unregister(consumerGroup, clientId);
  if (producerGroup) {
    ctx.broker.consumers.unregisterProducer(producerGroup, clientId);
    stopTransactionChecks(ctx.conn, producerGroup);
  }
  return {};
}

/**
 * The ids a group's consumers rebalance over: its clustering clients registered here and its live
 * pull consumers over gRPC (both balance by queue with the same averaging, so they share the queues).
 */
export function consumerIdsOf(ctx: RequestContext, group: string): string[] {
  const b = ctx.broker;
  const ids = new Set(b.consumers.clusteringIds(group));
  for (const s of b.sessions.list({ group })) {
    if (s.clientType === 'PULL_CONSUMER' && b.sessions.isAlive(s.clientId) && !b.pull.isBroadcast(s, group)) {
      ids.add(s.clientId);
    }
  }
  if (ids.size === 0) for (const c of b.consumers.clients(group)) ids.add(c.clientId);
  return [...ids].sort();
}

export function getConsumerListByGroup(ctx: RequestContext): Reply {
  const group = ctx.header.str('consumerGroup');
  const ids = consumerIdsOf(ctx, group);
  if (ids.length === 0)
    return { code: ResponseCode.SYSTEM_ERROR, remark: `no consumer for this group, ${group}` };
  return { body: jsonBody({ consumerIdList: ids }) };
}

interface LockBatchBody {
  consumerGroup?: string;
  clientId?: string;
  mqSet?: { topic?: string; brokerName?: string; queueId?: number }[];
}

function lockRequest(ctx: RequestContext) {
  const body = parseBody<LockBatchBody>(ctx.cmd.body, 'LockBatchRequestBody');
  if (!body.consumerGroup || !body.clientId) {
    return {
      error: { code: ResponseCode.INVALID_PARAMETER, remark: 'consumerGroup and clientId are required' },
    };
  }
  const mine = (body.mqSet ?? []).filter(
    (q) =>
      typeof q.topic === 'string' &&
      Number.isInteger(q.queueId) &&
      (!q.brokerName || q.brokerName === ctx.broker.brokerName),
  );
  return {
    group: body.consumerGroup,
    clientId: body.clientId,
    queues: mine.map((q) => ({ topic: q.topic!, queueId: q.queueId! })),
  };
}

export function lockBatchMq(ctx: RequestContext): Reply {
  const r = lockRequest(ctx);
  if ('error' in r) return r.error!;
  const locked = ctx.broker.queueLocks.tryLock(r.group, r.clientId, r.queues);
  return {
    body: jsonBody({
      lockOKMQSet: locked.map((q) => ({
        brokerName: ctx.broker.brokerName,
        queueId: q.queueId,
        topic: q.topic,
      })),
    }),
  };
}

export function unlockBatchMq(ctx: RequestContext): Reply {
  const r = lockRequest(ctx);
  if ('error' in r) return r.error!;
  ctx.broker.queueLocks.unlock(r.group, r.clientId, r.queues);
  return {};
}

export function checkClientConfig(ctx: RequestContext): Reply {
  const body = parseBody<{ group?: string; subscriptionData?: SubscriptionData }>(
    ctx.cmd.body,
    'CheckClientRequestBody',
  );
  const s = body.subscriptionData;
  if (s?.topic) parseSubscription(s.topic, s.subString, s.expressionType);
  return {};
}
