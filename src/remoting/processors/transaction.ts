/**
 * Transactions over Remoting: END_TRANSACTION (a producer commits or rolls back the half message its
 * prepared send stored, or answers a check), and CHECK_TRANSACTION_STATE, the broker's one-way
 * request to a producer of the half message's group when the transaction is orphaned. The broker's
 * transaction service decides everything (docs/broker.md, transactional messages); this edge only
 * translates.
 *
 * As in RocketMQ, END_TRANSACTION names the half message by its commit-log offset (Vela's log
 * position, inside the send's offset message id) and its half-queue offset (`tranStateTableOffset`,
 * the send's `queueOffset`); the half message is looked up there, so the answer to a check needs
 * nothing else. `commitOrRollback` is TRANSACTION_COMMIT_TYPE (8), TRANSACTION_ROLLBACK_TYPE (12) or
 * TRANSACTION_NOT_TYPE (0: the producer does not know yet; the broker checks again later).
 *
 * Checks reach any live connection of the producer group that sent the half message (RocketMQ picks
 * a channel of the group too), found through the broker's client channels: each connection whose
 * heartbeat names a producer group, or that sent a half message for it, takes checks for it until it
 * unregisters or closes.
 */
import type { ClientCommand } from '../../broker/client-channels.js';
import { VelaError } from '../../common/errors.js';
import {
  HALF_TOPIC,
  PRODUCER_CLIENT,
  encodeTransactionId,
  realTopicOf,
} from '../../broker/transaction/half-records.js';
import { RequestCode, ResponseCode } from '../codes.js';
import type { RemotingConnection } from '../connection.js';
import type { EndpointInfo, Reply, RequestContext } from '../context.js';
import { encodeMessageExt, offsetMessageId, Prop } from '../message-codec.js';
import { remotingProducerKey } from '../special-sends.js';

/** `MessageSysFlag` transaction types, as END_TRANSACTION's `commitOrRollback` carries them. */
export const TransactionType = { NOT: 0, COMMIT: 8, ROLLBACK: 12 } as const;

export async function endTransaction(ctx: RequestContext): Promise<Reply> {
  const h = ctx.header;
  const type = h.int('commitOrRollback');
  const fromCheck = h.optBool('fromTransactionCheck') ?? false;
  const position = h.optLong('commitLogOffset');
  const log = { producerGroup: h.optStr('producerGroup'), commitLogOffset: position, fromCheck };
  if (type === TransactionType.NOT) {
    ctx.logger.debug(log, 'the producer does not know the transaction state yet: it will be checked again');
    return {};
  }
  if (type !== TransactionType.COMMIT && type !== TransactionType.ROLLBACK) {
    throw new VelaError('BAD_REQUEST', `commitOrRollback ${type} is none of 0, 8 (commit), 12 (rollback)`);
  }
  const m = position === undefined ? null : await ctx.broker.messageAt(position);
  if (!m || m.topic !== HALF_TOPIC || m.logPosition !== position) {
    return {
      code: ResponseCode.SYSTEM_ERROR,
      remark: `no prepared transaction message at commit-log offset ${position ?? '(none)'}`,
    };
  }
  const tableOffset = h.optLong('tranStateTableOffset');
  if (tableOffset !== undefined && tableOffset !== m.queueOffset) {
    return { code: ResponseCode.SYSTEM_ERROR, remark: 'the transaction state table offset is wrong' };
  }
  const producerGroup = h.optStr('producerGroup');
  const sender = m.properties[PRODUCER_CLIENT];
  if (
    producerGroup &&
    sender?.startsWith(remotingProducerKey('')) &&
    sender !== remotingProducerKey(producerGroup)
  ) {
    return { code: ResponseCode.SYSTEM_ERROR, remark: `the producer group ${producerGroup} is wrong` };
  }
  try {
    await ctx.broker.transactions.end({
      topic: realTopicOf(m),
      messageId: m.messageId,
      transactionId: encodeTransactionId(m.queueOffset, m.logPosition),
      resolution: type === TransactionType.COMMIT ? 'COMMIT' : 'ROLLBACK',
      source: fromCheck ? 'SERVER_CHECK' : 'CLIENT',
    });
  } catch (err) {
    // END_TRANSACTION is one-way from the clients: nobody would hear of a refusal but the log.
    ctx.logger.warn({ ...log, err: (err as Error).message }, 'END_TRANSACTION refused');
    throw err;
  }
  return {};
}

/** The check a producer connection receives: the half message as sent, and where it lies. */
function checkRequest(
  endpoint: EndpointInfo,
  group: string,
  command: ClientCommand,
): { extFields: Record<string, string>; body: Buffer } {
  const m = command.message;
  const message = {
    ...m,
    properties: { ...m.properties, [Prop.TRAN_MSG]: 'true', [Prop.PRODUCER_GROUP]: group },
  };
  return {
    extFields: {
      topic: m.topic,
      tranStateTableOffset: String(m.queueOffset),
      commitLogOffset: String(m.logPosition),
      msgId: m.messageId,
      transactionId: command.transactionId,
      offsetMsgId: offsetMessageId(endpoint.host, m.logPosition),
    },
    body: encodeMessageExt(message, endpoint.host),
  };
}

/** From now on, `conn` takes orphaned-transaction checks for producer `group` (idempotent). */
export function takeTransactionChecks(ctx: RequestContext, group: string): void {
  const conn: RemotingConnection = ctx.conn;
  if (conn.isClosed || conn.transactionChecks.has(group)) return;
  const endpoint = ctx.endpoint;
  const detach = ctx.broker.channels.attach(remotingProducerKey(group), (command) => {
    if (conn.isClosed || command.kind !== 'RECOVER_ORPHANED_TRANSACTION') return false;
    const { extFields, body } = checkRequest(endpoint, group, command);
    conn.notify(RequestCode.CHECK_TRANSACTION_STATE, extFields, endpoint.nextOpaque(), body);
    return true;
  });
  conn.transactionChecks.set(group, detach);
}

/** `conn` no longer takes checks for `group` (its producer unregistered). */
export function stopTransactionChecks(conn: RemotingConnection, group: string): void {
  conn.transactionChecks.get(group)?.();
  conn.transactionChecks.delete(group);
}
