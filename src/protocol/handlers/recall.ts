/** RecallMessage: cancel a delay message, before its time, by the handle its send returned. */
import type { Broker } from '../../broker/broker.js';
import { checkTopicName } from '../../broker/names.js';
import { VelaError } from '../../common/errors.js';
import { resourceName, type CallContext } from '../context.js';
import { fromInternal } from '../namespace.js';
import { OK_STATUS } from '../status.js';
import type { Resource, Status } from '../wire-types.js';

export async function recallMessage(
  broker: Broker,
  ctx: CallContext,
  req: { topic?: Resource; recall_handle?: string },
): Promise<{ status: Status; message_id: string }> {
  const topic = resourceName(ctx, req.topic);
  checkTopicName(fromInternal(topic).name);
  if (!req.recall_handle) throw new VelaError('ILLEGAL_RECALL_HANDLE', 'a recall handle is required');
  broker.sessions.touch(ctx.clientId);
  const messageId = await broker.timer.recall(topic, req.recall_handle);
  return { status: OK_STATUS, message_id: messageId };
}
