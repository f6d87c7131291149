/**
 * Transactions at the edge: EndTransaction (commit or roll back a half message), and the Telemetry
 * command by which the broker asks a producer to resolve an orphaned transaction
 * (`RecoverOrphanedTransactionCommand`, with the message as the official clients decode it: MD5
 * body digest included, or the Node client drops the command).
 */
import type { Broker } from '../../broker/broker.js';
import type { ClientCommand } from '../../broker/client-channels.js';
import type {
  TransactionResolution,
  TransactionSource,
} from '../../broker/transaction/transaction-service.js';
import { VelaError } from '../../common/errors.js';
import { resourceName, type CallContext } from '../context.js';
import { toWireMessage } from '../convert.js';
import { OK_STATUS } from '../status.js';
import {
  WireTransactionResolution,
  WireTransactionSource,
  type Resource,
  type Status,
  type TelemetryCommand,
} from '../wire-types.js';

export interface EndTransactionWire {
  topic?: Resource;
  message_id?: string;
  transaction_id?: string;
  resolution?: number;
  source?: number;
  trace_context?: string;
}

const RESOLUTIONS: Record<number, TransactionResolution> = {
  [WireTransactionResolution.COMMIT]: 'COMMIT',
  [WireTransactionResolution.ROLLBACK]: 'ROLLBACK',
};
const SOURCES: Record<number, TransactionSource> = {
  [WireTransactionSource.CLIENT]: 'CLIENT',
  [WireTransactionSource.SERVER_CHECK]: 'SERVER_CHECK',
};

export async function endTransaction(
  broker: Broker,
  ctx: CallContext,
  req: EndTransactionWire,
): Promise<{ status: Status }> {
  const topic = resourceName(ctx, req.topic);
  if (!req.transaction_id) throw new VelaError('INVALID_TRANSACTION_ID', 'a transaction id is required');
  if (!req.message_id) throw new VelaError('INVALID_TRANSACTION_ID', 'a message id is required');
  const resolution = RESOLUTIONS[req.resolution ?? 0];
  if (!resolution) throw new VelaError('BAD_REQUEST', 'the resolution must be COMMIT or ROLLBACK');
  broker.sessions.touch(ctx.clientId);
  await broker.transactions.end({
    topic,
    messageId: req.message_id,
    transactionId: req.transaction_id,
    resolution,
    source: SOURCES[req.source ?? 0] ?? 'UNSPECIFIED',
  });
  return { status: OK_STATUS };
}

/** A broker command in its Telemetry form. */
export function telemetryCommandOf(command: ClientCommand, storeHost: string): TelemetryCommand {
  return {
    recover_orphaned_transaction_command: {
      message: toWireMessage(command.message, { storeHost }),
      transaction_id: command.transactionId,
    },
  };
}
