/** SendMessage: every message gets its own entry; the top-level status summarises them. */
import type { Broker } from '../../broker/broker.js';
import type { ProduceMessage } from '../../broker/produce.js';
import { VelaError, isVelaError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { CallContext } from '../context.js';
import { fromWireMessage } from '../convert.js';
import { batchStatus, OK_STATUS, statusOf } from '../status.js';
import type { Status, WireMessage } from '../wire-types.js';

interface SendResultEntry {
  status: Status;
  message_id: string;
  transaction_id: string;
  offset: number;
  recall_handle?: string;
}

export async function sendMessage(
  broker: Broker,
  ctx: CallContext,
  req: { messages?: WireMessage[] },
  logger: Logger,
): Promise<{ status: Status; entries: SendResultEntry[] }> {
  const wire = req.messages ?? [];
  if (wire.length === 0) throw new VelaError('MESSAGE_CORRUPTED', 'the request carries no message');
  broker.sessions.touch(ctx.clientId);
  const entries: SendResultEntry[] = new Array(wire.length);
  const converted: ProduceMessage[] = [];
  const slots: number[] = [];
  wire.forEach((m, i) => {
    try {
      converted.push(fromWireMessage(m, ctx.namespace, ctx.clientId));
      slots.push(i);
    } catch (err) {
      if (!isVelaError(err)) throw err;
      entries[i] = {
        status: statusOf(err, logger, 'SendMessage'),
        message_id: m.system_properties?.message_id ?? '',
        transaction_id: '',
        offset: 0,
      };
    }
  });
  if (converted.length > 0) {
    const results = await broker.produce.send(converted);
    results.forEach((r, j) => {
      const i = slots[j]!;
      entries[i] =
        r instanceof VelaError
          ? {
              status: statusOf(r, logger, 'SendMessage'),
              message_id: converted[j]!.messageId,
              transaction_id: '',
              offset: 0,
            }
          : {
              status: OK_STATUS,
              message_id: r.messageId,
              transaction_id: r.transactionId ?? '',
              offset: r.queueOffset,
              ...(r.recallHandle ? { recall_handle: r.recallHandle } : {}),
            };
    });
  }
  return { status: batchStatus(entries.map((e) => e.status)), entries };
}
