/** ReceiveMessage (server-streaming), AckMessage, ChangeInvisibleDuration. */
import type { CancelSignal } from '../../common/cancel-signal.js';
import type { Broker } from '../../broker/broker.js';
import { parseFilter } from '../../broker/filter.js';
import { checkGroupName, checkTopicName } from '../../broker/names.js';
import { Code } from '../../common/codes.js';
import { VelaError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { fromMillis, toMillis } from '../codec.js';
import { resourceName, type CallContext } from '../context.js';
import type { DeliveredFrame } from '../message-frame.js';
import { fromInternal } from '../namespace.js';
import { ackEcho, type AckResponseWire } from '../ack-codec.js';
import { batchStatus, OK_STATUS, statusOf } from '../status.js';
import {
  WireFilterType,
  type Duration,
  type FilterExpression,
  type MessageQueue,
  type Resource,
  type Status,
} from '../wire-types.js';

export interface ReceiveRequestWire {
  group?: Resource;
  message_queue?: MessageQueue;
  filter_expression?: FilterExpression;
  batch_size?: number;
  invisible_duration?: Duration;
  auto_renew?: boolean;
  long_polling_timeout?: Duration;
  attempt_id?: string;
}

/** A delivered message goes as `{ delivered }`: the answer's encoder writes it (message-frame.ts). */
export type ReceiveFrame =
  { status: Status } | DeliveredFrame | { delivery_timestamp: { seconds: number; nanos: number } };

/** Leave this much of the client's deadline for the answer to travel back. */
const DEADLINE_MARGIN_MS = 500;

export async function receiveMessage(
  broker: Broker,
  ctx: CallContext,
  req: ReceiveRequestWire,
  signal: CancelSignal,
  storeHost: string,
): Promise<ReceiveFrame[]> {
  const baseGroup = resourceName(ctx, req.group);
  checkGroupName(fromInternal(baseGroup).name);
  const group = broker.pull.effectiveGroup(baseGroup, ctx.clientId);
  const topic = resourceName(ctx, req.message_queue?.topic);
  checkTopicName(fromInternal(topic).name);
  const filterType = req.filter_expression?.type === WireFilterType.SQL ? 'SQL' : 'TAG';
  const filter = parseFilter(filterType, req.filter_expression?.expression);
  const now = broker.clock.now();
  const requested = toMillis(req.long_polling_timeout) ?? broker.config.consume.maxPollMs;
  const untilDeadline = ctx.deadline === Infinity ? Infinity : ctx.deadline - now - DEADLINE_MARGIN_MS;
  if (untilDeadline <= 0)
    throw new VelaError('ILLEGAL_POLLING_TIME', 'the call deadline leaves no time to poll');
  const pollMs = Math.max(0, Math.min(requested, untilDeadline));
  const invisibleMs = toMillis(req.invisible_duration);
  broker.sessions.touch(ctx.clientId);
  const delivered = await broker.consume.receive({
    group,
    topic,
    filter,
    ...(req.batch_size ? { batchSize: req.batch_size } : {}),
    ...(invisibleMs !== undefined ? { invisibleMs } : {}),
    autoRenew: req.auto_renew === true,
    clientId: ctx.clientId,
    pollMs,
    signal,
  });
  const stamp = { delivery_timestamp: fromMillis(broker.clock.now()) };
  if (delivered.length === 0) {
    return [{ status: { code: Code.MESSAGE_NOT_FOUND, message: 'no new message' } }, stamp];
  }
  const frames: ReceiveFrame[] = [{ status: OK_STATUS }];
  const crc32Digest = ctx.crc32Digest === true;
  for (const d of delivered) {
    frames.push({
      delivered: {
        message: d.message,
        info: {
          receiptHandle: d.receiptHandle,
          deliveryAttempt: d.deliveryAttempt,
          invisibleMs: d.invisibleMs,
          storeHost,
          crc32Digest,
        },
      },
    });
  }
  frames.push(stamp);
  return frames;
}

export async function ackMessage(
  broker: Broker,
  ctx: CallContext,
  req: { group?: Resource; topic?: Resource; entries?: { message_id?: string; receipt_handle?: string }[] },
  logger: Logger,
): Promise<AckResponseWire> {
  const baseGroup = resourceName(ctx, req.group);
  const topic = resourceName(ctx, req.topic);
  checkGroupName(fromInternal(baseGroup).name);
  const group = broker.pull.effectiveGroup(baseGroup, ctx.clientId);
  checkTopicName(fromInternal(topic).name);
  const wanted = req.entries ?? [];
  if (wanted.length === 0) throw new VelaError('BAD_REQUEST', 'no entry to acknowledge');
  broker.sessions.touch(ctx.clientId);
  const results = await broker.consume.ackMany(
    group,
    topic,
    wanted.map((e) => e.receipt_handle ?? ''),
  );
  // All acknowledged (the rule): the answer repeats the request's entries, copied from its bytes.
  const echo = results.every((r) => r === null) ? ackEcho(req) : undefined;
  if (echo) return { status: OK_STATUS, echo };
  const entries = wanted.map((e, i) => {
    const err = results[i];
    return {
      message_id: e.message_id ?? '',
      receipt_handle: e.receipt_handle ?? '',
      status: err ? statusOf(err, logger, 'AckMessage') : OK_STATUS,
    };
  });
  return { status: batchStatus(entries.map((e) => e.status)), entries };
}

export async function changeInvisibleDuration(
  broker: Broker,
  ctx: CallContext,
  req: {
    group?: Resource;
    topic?: Resource;
    receipt_handle?: string;
    invisible_duration?: Duration;
    message_id?: string;
  },
): Promise<{ status: Status; receipt_handle: string }> {
  const baseGroup = resourceName(ctx, req.group);
  const topic = resourceName(ctx, req.topic);
  checkGroupName(fromInternal(baseGroup).name);
  const group = broker.pull.effectiveGroup(baseGroup, ctx.clientId);
  checkTopicName(fromInternal(topic).name);
  const ms = toMillis(req.invisible_duration);
  if (ms === undefined) throw new VelaError('ILLEGAL_INVISIBLE_TIME', 'invisible_duration is required');
  broker.sessions.touch(ctx.clientId);
  const handle = await broker.consume.changeInvisibleDuration(group, topic, req.receipt_handle ?? '', ms);
  return { status: OK_STATUS, receipt_handle: handle };
}

export async function forwardMessageToDeadLetterQueue(
  broker: Broker,
  ctx: CallContext,
  req: { group?: Resource; topic?: Resource; receipt_handle?: string; message_id?: string },
): Promise<{ status: Status }> {
  const baseGroup = resourceName(ctx, req.group);
  const topic = resourceName(ctx, req.topic);
  checkGroupName(fromInternal(baseGroup).name);
  const group = broker.pull.effectiveGroup(baseGroup, ctx.clientId);
  checkTopicName(fromInternal(topic).name);
  broker.sessions.touch(ctx.clientId);
  await broker.consume.forwardToDeadLetter(group, topic, req.receipt_handle ?? '');
  return { status: OK_STATUS };
}
