/**
 * Offsets: a group's committed offset per queue (QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, kept
 * durably by the broker) and a queue's bounds (GET_MIN_OFFSET, GET_MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP
 * by store time).
 */
import { ResponseCode } from '../codes.js';
import type { Reply, RequestContext } from '../context.js';

export function queryConsumerOffset(ctx: RequestContext): Reply {
  const h = ctx.header;
  const group = h.str('consumerGroup');
  const topic = h.str('topic');
  const queueId = h.int('queueId');
  const committed = ctx.broker.offsets.get(group, topic, queueId);
  if (committed) return { extFields: { offset: committed.offset } };
  // Like RocketMQ: a group without an offset starts at 0 while the queue still holds its first message.
  const q = ctx.broker.queueState(topic, queueId);
  if (h.optBool('setZeroIfNotFound') !== false && q.minOffset === 0 && q.maxOffset > 0) {
    return { extFields: { offset: 0 } };
  }
  return {
    code: ResponseCode.QUERY_NOT_FOUND,
    remark: 'Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first',
  };
}

export async function updateConsumerOffset(ctx: RequestContext): Promise<Reply> {
  const h = ctx.header;
  await ctx.broker.pull.commit(
    h.str('consumerGroup'),
    h.str('topic'),
    h.int('queueId'),
    h.int('commitOffset'),
    '',
  );
  return {};
}

export function getMaxOffset(ctx: RequestContext): Reply {
  const h = ctx.header;
  return { extFields: { offset: ctx.broker.queueState(h.str('topic'), h.int('queueId')).maxOffset } };
}

export function getMinOffset(ctx: RequestContext): Reply {
  const h = ctx.header;
  return { extFields: { offset: ctx.broker.queueState(h.str('topic'), h.int('queueId')).minOffset } };
}

export async function searchOffsetByTimestamp(ctx: RequestContext): Promise<Reply> {
  const h = ctx.header;
  const topic = h.str('topic');
  const queueId = h.int('queueId');
  const offset = await ctx.broker.pull.queryOffset(topic, queueId, 'TIMESTAMP', h.int('timestamp'));
  return { extFields: { offset } };
}
