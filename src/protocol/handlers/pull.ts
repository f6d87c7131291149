/** PullMessage (server-streaming), UpdateOffset, GetOffset, QueryOffset: queue-granularity consumption. */
import type { CancelSignal } from '../../common/cancel-signal.js';
import type { Broker } from '../../broker/broker.js';
import { parseFilter } from '../../broker/filter.js';
import { checkGroupName, checkTopicName } from '../../broker/names.js';
import { Code } from '../../common/codes.js';
import { VelaError } from '../../common/errors.js';
import { toMillis } from '../codec.js';
import { resourceName, type CallContext } from '../context.js';
import type { DeliveredFrame } from '../message-frame.js';
import { fromInternal } from '../namespace.js';
import { OK_STATUS } from '../status.js';
import {
  WireFilterType,
  type Duration,
  type FilterExpression,
  type MessageQueue,
  type Resource,
  type Status,
} from '../wire-types.js';

/** A pulled message goes as `{ delivered }`: the answer's encoder writes it (message-frame.ts). */
export type PullFrame = { status: Status } | DeliveredFrame | { next_offset: number };

function names(
  ctx: CallContext,
  group: Resource | undefined,
  queue: MessageQueue | undefined,
): { group: string; topic: string; queueId: number } {
  const g = resourceName(ctx, group);
  checkGroupName(fromInternal(g).name);
  const t = resourceName(ctx, queue?.topic);
  checkTopicName(fromInternal(t).name);
  return { group: g, topic: t, queueId: queue?.id ?? 0 };
}

export async function pullMessage(
  broker: Broker,
  ctx: CallContext,
  req: {
    group?: Resource;
    message_queue?: MessageQueue;
    offset?: number;
    batch_size?: number;
    filter_expression?: FilterExpression;
    long_polling_timeout?: Duration;
  },
  signal: CancelSignal,
  storeHost: string,
): Promise<PullFrame[]> {
  const { group, topic, queueId } = names(ctx, req.group, req.message_queue);
  const filter = parseFilter(
    req.filter_expression?.type === WireFilterType.SQL ? 'SQL' : 'TAG',
    req.filter_expression?.expression,
  );
  const requested = toMillis(req.long_polling_timeout) ?? 0;
  const untilDeadline = ctx.deadline === Infinity ? Infinity : ctx.deadline - Date.now() - 500;
  broker.sessions.touch(ctx.clientId);
  const r = await broker.pull.pull({
    group,
    topic,
    queueId,
    offset: req.offset ?? 0,
    ...(req.batch_size ? { batchSize: req.batch_size } : {}),
    filter,
    pollMs: Math.max(0, Math.min(requested, untilDeadline)),
    clientId: ctx.clientId,
    signal,
  });
  if (r.status === 'OFFSET_MOVED') {
    return [
      { status: { code: Code.ILLEGAL_OFFSET, message: r.reason ?? 'offset moved' } },
      { next_offset: r.nextOffset },
    ];
  }
  if (r.status === 'NO_NEW_MESSAGE') {
    return [
      { status: { code: Code.MESSAGE_NOT_FOUND, message: 'no new message' } },
      { next_offset: r.nextOffset },
    ];
  }
  const frames: PullFrame[] = [{ status: OK_STATUS }];
  const delivery = { deliveryAttempt: 1, storeHost, crc32Digest: ctx.crc32Digest === true };
  for (const m of r.messages) frames.push({ delivered: { message: m, info: delivery } });
  frames.push({ next_offset: r.nextOffset });
  return frames;
}

export async function updateOffset(
  broker: Broker,
  ctx: CallContext,
  req: { group?: Resource; message_queue?: MessageQueue; offset?: number },
): Promise<{ status: Status }> {
  const { group, topic, queueId } = names(ctx, req.group, req.message_queue);
  await broker.pull.commit(group, topic, queueId, req.offset ?? 0, ctx.clientId);
  return { status: OK_STATUS };
}

export async function getOffset(
  broker: Broker,
  ctx: CallContext,
  req: { group?: Resource; message_queue?: MessageQueue },
): Promise<{ status: Status; offset: number }> {
  const { group, topic, queueId } = names(ctx, req.group, req.message_queue);
  return { status: OK_STATUS, offset: await broker.pull.committed(group, topic, queueId, ctx.clientId) };
}

const POLICIES = ['BEGINNING', 'END', 'TIMESTAMP'] as const;

export async function queryOffset(
  broker: Broker,
  ctx: CallContext,
  req: {
    message_queue?: MessageQueue;
    query_offset_policy?: number;
    timestamp?: { seconds?: number; nanos?: number };
  },
): Promise<{ status: Status; offset: number }> {
  const topic = resourceName(ctx, req.message_queue?.topic);
  checkTopicName(fromInternal(topic).name);
  const policy = POLICIES[req.query_offset_policy ?? 0];
  if (!policy) throw new VelaError('BAD_REQUEST', `unknown query_offset_policy ${req.query_offset_policy}`);
  const offset = await broker.pull.queryOffset(
    topic,
    req.message_queue?.id ?? 0,
    policy,
    toMillis(req.timestamp),
  );
  return { status: OK_STATUS, offset };
}
