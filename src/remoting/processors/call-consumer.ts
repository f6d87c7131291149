/**
 * Requests the broker forwards to one consumer, as RocketMQ's `AdminBrokerProcessor.callConsumer`
 * does: GET_CONSUMER_RUNNING_INFO (mqadmin `consumerStatus`, the Dashboard's consumer detail) and
 * CONSUME_MESSAGE_DIRECTLY (mqadmin `queryMsgById -g -d`, the Dashboard's "resend to consumer").
 * The request goes over the consumer's own Remoting connection and its answer is relayed as it is;
 * a consumer that is not connected is answered SYSTEM_ERROR "not online", one that does not answer
 * in time CONSUME_MSG_TIMEOUT. gRPC consumers have no such channel and are refused clearly.
 */
import { ResponseCode } from '../codes.js';
import { CallError } from '../connection.js';
import type { Reply, RequestContext } from '../context.js';
import { decodeOffsetMessageId, encodeMessages } from '../message-codec.js';

async function callConsumer(ctx: RequestContext, code: number, body?: Buffer): Promise<Reply> {
  const group = ctx.header.str('consumerGroup');
  const clientId = ctx.header.str('clientId');
  const client = ctx.broker.consumers.client(group, clientId);
  const conn = client ? ctx.endpoint.connection(client.channel) : undefined;
  if (!client || !conn || conn.isClosed) {
    const grpc = ctx.broker.sessions.isAlive(clientId);
    return {
      code: ResponseCode.SYSTEM_ERROR,
      remark: grpc
        ? `The Consumer <${group}> <${clientId}> is a gRPC client: only Remoting consumers answer this request`
        : `The Consumer <${group}> <${clientId}> not online`,
    };
  }
  const extFields: Record<string, string> = { ...ctx.cmd.extFields };
  try {
    const answer = await conn.call(
      code,
      extFields,
      ctx.endpoint.nextOpaque(),
      ctx.endpoint.callClientTimeoutMs,
      body,
    );
    return {
      code: answer.code,
      ...(answer.remark !== undefined ? { remark: answer.remark } : {}),
      extFields: answer.extFields,
      ...(answer.body ? { body: answer.body } : {}),
    };
  } catch (err) {
    if (!(err instanceof CallError)) throw err;
    return err.reason === 'TIMEOUT'
      ? {
          code: ResponseCode.CONSUME_MSG_TIMEOUT,
          remark: `consumer <${group}> <${clientId}> Timeout: ${err.message}`,
        }
      : {
          code: ResponseCode.SYSTEM_ERROR,
          remark: `The Consumer <${group}> <${clientId}> not online: ${err.message}`,
        };
  }
}

export function getConsumerRunningInfo(ctx: RequestContext): Promise<Reply> {
  return callConsumer(ctx, ctx.cmd.code);
}

/**
 * The message named by `msgId` (an offset message id, as the admin tools send; a message id is
 * looked up too) is handed to the consumer, which runs its listener on it and answers how it went.
 */
export async function consumeMessageDirectly(ctx: RequestContext): Promise<Reply> {
  const msgId = ctx.header.str('msgId');
  const b = ctx.broker;
  const offsetId = decodeOffsetMessageId(msgId);
  const byOffset = offsetId ? await b.messageAt(offsetId.logPosition) : undefined;
  const topic = ctx.header.optStr('topic');
  const m = byOffset ?? (await b.findMessageById(msgId, topic || undefined))[0];
  if (!m) return { code: ResponseCode.QUERY_NOT_FOUND, remark: `no message with id ${msgId}` };
  ctx.cmd.extFields.brokerName = b.brokerName;
  return callConsumer(ctx, ctx.cmd.code, encodeMessages([m], ctx.endpoint.host));
}
