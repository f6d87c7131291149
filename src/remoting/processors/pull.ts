/**
 * PULL_MESSAGE and LITE_PULL_MESSAGE: read a queue from an offset for a queue-granularity consumer,
 * long-polling (sysFlag 0x2) up to its suspend time. Push consumers leave the subscription out and the
 * one they registered by heartbeat applies; pull consumers send it (0x4). A commit offset carried by
 * the pull (0x1) is stored first. Answers: SUCCESS with the records, PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY
 * (the filter matched nothing in what was read) or PULL_OFFSET_MOVED with the offset to continue from
 * (retention removed the offset, it is past the end, or an admin reset moved the group).
 */
import { parseSubscription } from '../../broker/consumer-manager.js';
import { ResponseCode } from '../codes.js';
import type { Reply, RequestContext } from '../context.js';
import { encodeMessages } from '../message-codec.js';

const PullSysFlag = { COMMIT_OFFSET: 0x1, SUSPEND: 0x2, SUBSCRIPTION: 0x4 } as const;

export async function pullMessage(ctx: RequestContext): Promise<Reply> {
  const h = ctx.header;
  const b = ctx.broker;
  const group = h.str('consumerGroup');
  const topic = h.str('topic');
  const queueId = h.int('queueId');
  const offset = h.int('queueOffset');
  const sysFlag = h.optInt('sysFlag') ?? 0;
  const maxMsgNums = Math.max(1, h.optInt('maxMsgNums') ?? 32);

  let filter;
  if (sysFlag & PullSysFlag.SUBSCRIPTION || h.has('subscription')) {
    filter = parseSubscription(topic, h.optStr('subscription') ?? '*', h.optStr('expressionType')).filter;
  } else {
    const s = b.consumers.subscription(group, topic);
    if (!s) {
      return {
        code: ResponseCode.SUBSCRIPTION_NOT_EXIST,
        remark: `the consumer's subscription of ${topic} does not exist (no heartbeat from ${group} yet)`,
      };
    }
    filter = s.filter;
  }
  const config = await b.consume.requireGroup(group);
  if (!config.consumeEnable) {
    return { code: ResponseCode.NO_PERMISSION, remark: `the consumer group ${group} cannot consume` };
  }
  if (
    !config.consumeBroadcastEnable &&
    b.consumers.clients(group).some((c) => c.messageModel === 'BROADCASTING')
  ) {
    return {
      code: ResponseCode.NO_PERMISSION,
      remark: `the consumer group ${group} can not consume by broadcast way`,
    };
  }

  const commitOffset = h.optInt('commitOffset');
  if (sysFlag & PullSysFlag.COMMIT_OFFSET && commitOffset !== undefined && commitOffset >= 0) {
    await b.pull.commit(group, topic, queueId, commitOffset, '');
  }
  const suspend = (sysFlag & PullSysFlag.SUSPEND) !== 0;
  const r = await b.pull.pull({
    group,
    topic,
    queueId,
    offset,
    batchSize: maxMsgNums,
    filter,
    pollMs: suspend ? (h.optInt('suspendTimeoutMillis') ?? 15_000) : 0,
    clientId: '',
    parker: ctx.conn.id,
    signal: ctx.conn.signal,
  });
  const extFields = {
    suggestWhichBrokerId: 0,
    nextBeginOffset: r.nextOffset,
    minOffset: r.minOffset,
    maxOffset: r.maxOffset,
  };
  if (r.status === 'FOUND' && r.messages.length > 0) {
    return { extFields, body: encodeMessages(r.messages, ctx.endpoint.host) };
  }
  if (r.status === 'FOUND') {
    return { code: ResponseCode.PULL_RETRY_IMMEDIATELY, remark: 'no message matched the filter', extFields };
  }
  if (r.status === 'OFFSET_MOVED') {
    return { code: ResponseCode.PULL_OFFSET_MOVED, remark: r.reason ?? 'the offset moved', extFields };
  }
  return { code: ResponseCode.PULL_NOT_FOUND, remark: 'no new message', extFields };
}
