/**
 * Conversions between wire messages and the broker's: producer messages in, delivered messages out
 * (with the MD5 body digest, receipt handle and delivery attempt the official clients require).
 */
import { createHash } from 'node:crypto';
import { VelaError } from '../common/errors.js';
import type { ProduceMessage, SendableType } from '../broker/produce.js';
import { messageTypeOf, SysFlag, TRACE_CONTEXT_PROPERTY } from '../broker/produce.js';
import type { StoredMessage } from '../store/index.js';
import { fromMillis, toMillis } from './codec.js';
import { WireDigestType, WireEncoding, WireMessageType, type WireMessage } from './wire-types.js';
import { fromInternal, toInternal } from './namespace.js';

const TYPE_FROM_WIRE: Record<number, SendableType | undefined> = {
  [WireMessageType.NORMAL]: 'NORMAL',
  [WireMessageType.FIFO]: 'FIFO',
  [WireMessageType.DELAY]: 'DELAY',
  [WireMessageType.TRANSACTION]: 'TRANSACTION',
};
const TYPE_TO_WIRE: Record<SendableType, number> = { NORMAL: 1, FIFO: 2, DELAY: 3, TRANSACTION: 4 };

export function fromWireMessage(m: WireMessage, namespace: string): ProduceMessage {
  const sp = m.system_properties ?? {};
  const name = m.topic?.name ?? '';
  const declared = sp.message_type ?? WireMessageType.UNSPECIFIED;
  if (declared === WireMessageType.LITE || declared === WireMessageType.PRIORITY) {
    throw new VelaError(
      'NOT_IMPLEMENTED',
      `${declared === WireMessageType.LITE ? 'LITE' : 'PRIORITY'} messages are not supported`,
    );
  }
  const messageType = TYPE_FROM_WIRE[declared];
  const deliveryTimestamp = toMillis(sp.delivery_timestamp);
  const bornTimestamp = toMillis(sp.born_timestamp);
  return {
    topic: toInternal(namespace || m.topic?.resource_namespace || '', name),
    messageId: sp.message_id ?? '',
    body: m.body ?? Buffer.alloc(0),
    ...(sp.tag !== undefined ? { tag: sp.tag } : {}),
    ...(sp.keys?.length ? { keys: sp.keys } : {}),
    ...(sp.message_group ? { messageGroup: sp.message_group } : {}),
    properties: m.user_properties ?? {},
    ...(bornTimestamp ? { bornTimestamp } : {}),
    ...(sp.born_host ? { bornHost: sp.born_host } : {}),
    ...(deliveryTimestamp ? { deliveryTimestamp } : {}),
    ...(messageType ? { messageType } : {}),
    bodyEncoding: sp.body_encoding === WireEncoding.GZIP ? 'GZIP' : 'IDENTITY',
    ...(sp.trace_context ? { traceContext: sp.trace_context } : {}),
  };
}

export interface DeliveryInfo {
  receiptHandle?: string;
  deliveryAttempt?: number;
  invisibleMs?: number;
  storeHost: string;
}

export function toWireMessage(m: StoredMessage, d: DeliveryInfo): WireMessage {
  const { namespace, name } = fromInternal(m.topic);
  const properties = m.properties;
  let user = properties;
  let traceContext: string | undefined;
  if (TRACE_CONTEXT_PROPERTY in properties) {
    ({ [TRACE_CONTEXT_PROPERTY]: traceContext, ...user } = properties);
  }
  return {
    topic: { resource_namespace: namespace, name },
    user_properties: user,
    system_properties: {
      ...(m.tag ? { tag: m.tag } : {}),
      keys: m.keys,
      message_id: m.messageId,
      body_digest: {
        type: WireDigestType.MD5,
        checksum: createHash('md5').update(m.body).digest('hex').toUpperCase(),
      },
      body_encoding: m.sysFlag & SysFlag.GZIP ? WireEncoding.GZIP : WireEncoding.IDENTITY,
      message_type: TYPE_TO_WIRE[messageTypeOf(m.sysFlag)],
      born_timestamp: fromMillis(m.bornTimestamp),
      born_host: m.bornHost,
      store_timestamp: fromMillis(m.storeTimestamp),
      store_host: d.storeHost,
      ...(m.deliveryTimestamp ? { delivery_timestamp: fromMillis(m.deliveryTimestamp) } : {}),
      ...(d.receiptHandle ? { receipt_handle: d.receiptHandle } : {}),
      queue_id: m.queueId,
      queue_offset: m.queueOffset,
      ...(d.invisibleMs !== undefined ? { invisible_duration: fromMillis(d.invisibleMs) } : {}),
      delivery_attempt: Math.max(1, d.deliveryAttempt ?? 1),
      ...(m.messageGroup ? { message_group: m.messageGroup } : {}),
      ...(traceContext ? { trace_context: traceContext } : {}),
    },
    body: m.body,
  };
}
