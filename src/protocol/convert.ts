/**
 * Conversions between wire messages and the broker's: producer messages in, delivered messages out
 * (with the body digest, receipt handle and delivery attempt the official clients require).
 */
import { VelaError } from '../common/errors.js';
import type { ProduceMessage, SendableType } from '../broker/produce.js';
import { BODY_MD5_PROPERTY, messageTypeOf, SysFlag, TRACE_CONTEXT_PROPERTY } from '../broker/produce.js';
import type { BrokerMessage } from '../broker/message.js';
import { fromMillis, toMillis } from './codec.js';
import {
  WireDigestType,
  WireEncoding,
  WireMessageType,
  type SystemProperties,
  type WireMessage,
} from './wire-types.js';
import { fromInternal, toInternal } from './namespace.js';
import { crc32Checksum, md5Checksum } from './body-digest.js';

const TYPE_FROM_WIRE: Record<number, SendableType | undefined> = {
  [WireMessageType.NORMAL]: 'NORMAL',
  [WireMessageType.FIFO]: 'FIFO',
  [WireMessageType.DELAY]: 'DELAY',
  [WireMessageType.TRANSACTION]: 'TRANSACTION',
};
const TYPE_TO_WIRE: Record<SendableType, number> = { NORMAL: 1, FIFO: 2, DELAY: 3, TRANSACTION: 4 };

/**
 * One SendMessage entry as the broker's produce service takes it.
 *
 * Built as one object literal with every field present (absent ones `undefined`), never by
 * spreading: where `{ ...x, more }` always sees one shape of `x`, V8's fast clone gives each copy a
 * map of its own (adding `more` to it makes a new map every time), and every property read of the
 * copies then misses its inline cache — 16 misses and ~2.5 µs per produced message in
 * `ProduceService.prepare` (docs/benchmarks.md). `producerClientId`: the sending client's id.
 */
export function fromWireMessage(
  m: WireMessage,
  namespace: string,
  producerClientId?: string,
): ProduceMessage {
  const sp = m.system_properties ?? {};
  const name = m.topic?.name ?? '';
  const declared = sp.message_type ?? WireMessageType.UNSPECIFIED;
  if (declared === WireMessageType.LITE || declared === WireMessageType.PRIORITY) {
    throw new VelaError(
      'NOT_IMPLEMENTED',
      `${declared === WireMessageType.LITE ? 'LITE' : 'PRIORITY'} messages are not supported`,
    );
  }
  const recovery = sp.orphaned_transaction_recovery_duration;
  const recoveryMs = recovery ? (recovery.seconds ?? 0) * 1000 + Math.floor((recovery.nanos ?? 0) / 1e6) : 0;
  return {
    topic: toInternal(namespace || m.topic?.resource_namespace || '', name),
    messageId: sp.message_id ?? '',
    body: m.body ?? Buffer.alloc(0),
    tag: sp.tag ?? undefined,
    keys: sp.keys?.length ? sp.keys : undefined,
    messageGroup: sp.message_group || undefined,
    properties: m.user_properties ?? {},
    bornTimestamp: toMillis(sp.born_timestamp) || undefined,
    bornHost: sp.born_host || undefined,
    deliveryTimestamp: toMillis(sp.delivery_timestamp) || undefined,
    messageType: TYPE_FROM_WIRE[declared],
    bodyEncoding: sp.body_encoding === WireEncoding.GZIP ? 'GZIP' : 'IDENTITY',
    traceContext: sp.trace_context || undefined,
    transactionRecoveryMs: recoveryMs > 0 ? recoveryMs : undefined,
    producerClientId,
  };
}

/** Properties the broker keeps for itself (`__VELA_…`, the trace context): never shown to clients. */
function isInternal(k: string): boolean {
  return k === TRACE_CONTEXT_PROPERTY || (k.charCodeAt(0) === 95 && k.startsWith('__VELA_'));
}

export interface DeliveryInfo {
  receiptHandle?: string;
  deliveryAttempt?: number;
  invisibleMs?: number;
  storeHost: string;
  /** The caller checks CRC32 digests (Vela's SDK, body-digest.ts); else MD5, as the official clients need. */
  crc32Digest?: boolean;
}

/**
 * The MD5 body digest the official clients require, computed at delivery as RocketMQ's proxy does
 * (messages stored by earlier builds carry it in the `__VELA_BODY_MD5` property, computed at send:
 * used as is).
 */
export function bodyDigest(m: BrokerMessage): string {
  return m.properties[BODY_MD5_PROPERTY] ?? md5Checksum(m.body);
}

/** Hot path (every delivery): plain assignments, no spreads. */
export function toWireMessage(m: BrokerMessage, d: DeliveryInfo): WireMessage {
  const { namespace, name } = fromInternal(m.topic);
  const properties = m.properties;
  let user = properties;
  let traceContext: string | undefined;
  let internal = false;
  for (const k in properties) {
    if (isInternal(k)) {
      internal = true;
      break;
    }
  }
  if (internal) {
    user = {};
    for (const k in properties) {
      if (k === TRACE_CONTEXT_PROPERTY) traceContext = properties[k];
      else if (!isInternal(k)) user[k] = properties[k]!;
    }
  }
  const sp: SystemProperties = {
    keys: m.keys,
    message_id: m.messageId,
    body_digest: d.crc32Digest
      ? { type: WireDigestType.CRC32, checksum: crc32Checksum(m.body, m.bodyCrc) }
      : { type: WireDigestType.MD5, checksum: bodyDigest(m) },
    body_encoding: m.sysFlag & SysFlag.GZIP ? WireEncoding.GZIP : WireEncoding.IDENTITY,
    message_type: TYPE_TO_WIRE[messageTypeOf(m.sysFlag)],
    born_timestamp: fromMillis(m.bornTimestamp),
    born_host: m.bornHost,
    store_timestamp: fromMillis(m.storeTimestamp),
    store_host: d.storeHost,
    queue_id: m.queueId,
    queue_offset: m.queueOffset,
    delivery_attempt: d.deliveryAttempt !== undefined && d.deliveryAttempt > 1 ? d.deliveryAttempt : 1,
  };
  if (m.tag) sp.tag = m.tag;
  if (m.deliveryTimestamp) sp.delivery_timestamp = fromMillis(m.deliveryTimestamp);
  if (d.receiptHandle) sp.receipt_handle = d.receiptHandle;
  if (d.invisibleMs !== undefined) sp.invisible_duration = fromMillis(d.invisibleMs);
  if (m.messageGroup) sp.message_group = m.messageGroup;
  if (traceContext) sp.trace_context = traceContext;
  return {
    topic: { resource_namespace: namespace, name },
    user_properties: user,
    system_properties: sp,
    body: m.body,
  };
}
