/**
 * Messages as SDK users see them: `Message` (what `Producer.send` takes), `SendReceipt` (what it
 * returns), and `MessageView` (what consumers receive), with their conversions to and from the wire.
 * A received message remembers, out of sight, where it came from (endpoint, group, topic, receipt
 * handle) so that `ack`/`changeInvisibleDuration` need nothing but the message.
 */
import { hostname } from 'node:os';
import * as zlib from 'node:zlib';
import { Code } from '../common/codes.js';
import { fromMillis, toMillis } from '../protocol/codec.js';
import { digestMatches } from '../protocol/body-digest.js';
import { WireEncoding, WireMessageType, type Resource, type WireMessage } from '../protocol/wire-types.js';
import { clientError } from './errors.js';

/** A message to send. */
export interface Message {
  /** Required. */
  topic: string;
  /** Required and non-empty; strings are sent as UTF-8. */
  body: Buffer | Uint8Array | string;
  /** One tag, for consumers' tag filters (`TagA`, no `|`). @defaultValue none */
  tag?: string;
  /** Business keys, for lookup (`queryMsgByKey`). @defaultValue none */
  keys?: string | string[];
  /** Makes the message a FIFO message: messages of one group are stored and delivered in order. */
  messageGroup?: string;
  /** Makes the message a DELAY message, delivered at this time (epoch ms or a Date). */
  deliveryTimestamp?: number | Date;
  /** User properties. @defaultValue none */
  properties?: Record<string, string>;
}

/** The broker's acknowledgement of a stored message. */
export interface SendReceipt {
  /** The id the producer generated (kept across retries). */
  readonly messageId: string;
  /** Offset of the message in its queue. */
  readonly offset: number;
  /**
   * The queue the broker chose. The broker picks the queue itself (FIFO: by message group) and its
   * SendMessage answer does not name it, so this is absent with Vela.
   */
  readonly queueId?: number;
  /** A transactional message's transaction id (what commit and rollback name). */
  readonly transactionId?: string;
  /** A delay message's handle for `Producer.recallMessage` (absent when it was due at once). */
  readonly recallHandle?: string;
}

export const MessageType = {
  NORMAL: 'NORMAL',
  FIFO: 'FIFO',
  DELAY: 'DELAY',
  TRANSACTION: 'TRANSACTION',
  UNSPECIFIED: 'UNSPECIFIED',
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

const TYPE_NAMES: Record<number, MessageType> = {
  [WireMessageType.NORMAL]: 'NORMAL',
  [WireMessageType.FIFO]: 'FIFO',
  [WireMessageType.DELAY]: 'DELAY',
  [WireMessageType.TRANSACTION]: 'TRANSACTION',
};

const BORN_HOST = hostname();

/** A message validated and converted for SendMessage, with a rough size for batching. */
export interface PreparedMessage {
  readonly topic: string;
  readonly messageId: string;
  readonly fifo: boolean;
  /** A half message of a transaction (never batched, never retried). */
  readonly transactional: boolean;
  readonly bytes: number;
  readonly wire: WireMessage;
}

function bodyOf(body: Message['body']): Buffer {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw clientError(Code.BAD_REQUEST, 'message.body must be a Buffer, Uint8Array or string');
}

/** Validate a message and build its wire form (the id is fixed here, so retries keep it). */
export function prepareMessage(
  m: Message,
  namespace: string,
  messageId: string,
  transactional = false,
): PreparedMessage {
  if (!m || typeof m.topic !== 'string' || m.topic === '') {
    throw clientError(Code.ILLEGAL_TOPIC, 'message.topic is required');
  }
  const body = bodyOf(m.body);
  if (body.length === 0) throw clientError(Code.MESSAGE_BODY_EMPTY, 'message.body is empty');
  const fifo = m.messageGroup !== undefined && m.messageGroup !== '';
  const delivery = m.deliveryTimestamp instanceof Date ? m.deliveryTimestamp.getTime() : m.deliveryTimestamp;
  if (delivery !== undefined && !Number.isFinite(delivery)) {
    throw clientError(Code.ILLEGAL_DELIVERY_TIME, 'message.deliveryTimestamp must be a time');
  }
  if (fifo && delivery !== undefined) {
    throw clientError(
      Code.BAD_REQUEST,
      'a message cannot have both a messageGroup (FIFO) and a deliveryTimestamp (DELAY)',
    );
  }
  if (transactional && (fifo || delivery !== undefined)) {
    throw clientError(
      Code.BAD_REQUEST,
      'a transactional message cannot have a messageGroup (FIFO) or a deliveryTimestamp (DELAY)',
    );
  }
  const keys = m.keys === undefined ? [] : Array.isArray(m.keys) ? [...m.keys] : [m.keys];
  const properties = { ...(m.properties ?? {}) };
  const type = transactional
    ? WireMessageType.TRANSACTION
    : fifo
      ? WireMessageType.FIFO
      : delivery !== undefined
        ? WireMessageType.DELAY
        : WireMessageType.NORMAL;
  let bytes = body.length + 128 + m.topic.length + (m.tag?.length ?? 0);
  for (const k of keys) bytes += k.length + 2;
  for (const [k, v] of Object.entries(properties)) bytes += k.length + String(v).length + 4;
  const wire: WireMessage = {
    topic: { resource_namespace: namespace, name: m.topic },
    user_properties: properties,
    system_properties: {
      ...(m.tag !== undefined ? { tag: m.tag } : {}),
      keys,
      message_id: messageId,
      body_encoding: WireEncoding.IDENTITY,
      message_type: type,
      born_timestamp: fromMillis(Date.now()),
      born_host: BORN_HOST,
      ...(fifo ? { message_group: m.messageGroup } : {}),
      ...(delivery !== undefined ? { delivery_timestamp: fromMillis(delivery) } : {}),
    },
    body,
  };
  return { topic: m.topic, messageId, fifo, transactional, bytes, wire };
}

/** Where a received message came from: what settling it needs. */
export interface DeliveryRef {
  /** Key of the connection it arrived on. */
  endpointKey: string;
  group: Resource;
  topic: Resource;
  receiptHandle: string;
  /** The consumer that received it (acks through another are refused). */
  owner: object;
}

const deliveries = new WeakMap<MessageView, DeliveryRef>();

/** The delivery behind a received message (SDK-internal). */
export function deliveryOf(m: MessageView): DeliveryRef | undefined {
  return deliveries.get(m);
}

/** A message as delivered to a consumer. */
export class MessageView {
  readonly messageId: string;
  readonly topic: string;
  readonly body: Buffer;
  readonly tag: string | undefined;
  readonly keys: readonly string[];
  readonly messageGroup: string | undefined;
  readonly properties: Readonly<Record<string, string>>;
  readonly messageType: MessageType;
  /** 1 on the first delivery, then 2, 3 … on each redelivery. */
  readonly deliveryAttempt: number;
  readonly queueId: number;
  readonly queueOffset: number;
  readonly bornTimestamp: number | undefined;
  readonly bornHost: string;
  readonly storeTimestamp: number | undefined;
  readonly storeHost: string | undefined;
  readonly deliveryTimestamp: number | undefined;
  /** The body did not match its digest (push consumers nack such messages without a listener call). */
  readonly corrupted: boolean;

  /** @internal Use a consumer to receive messages. */
  constructor(wire: WireMessage, ref: DeliveryRef) {
    const sp = wire.system_properties ?? {};
    // A lean-decoded message without a body has an empty array there, not a Buffer.
    const raw = wire.body?.length ? wire.body : EMPTY_BODY;
    this.messageId = sp.message_id ?? '';
    this.topic = wire.topic?.name ?? '';
    this.tag = sp.tag || undefined;
    this.keys = Object.freeze([...(sp.keys ?? [])]);
    this.messageGroup = sp.message_group || undefined;
    this.properties = Object.freeze({ ...(wire.user_properties ?? {}) });
    this.messageType = TYPE_NAMES[sp.message_type ?? 0] ?? 'UNSPECIFIED';
    this.deliveryAttempt = Math.max(1, sp.delivery_attempt ?? 1);
    this.queueId = sp.queue_id ?? 0;
    this.queueOffset = sp.queue_offset ?? 0;
    this.bornTimestamp = toMillis(sp.born_timestamp);
    this.bornHost = sp.born_host ?? '';
    this.storeTimestamp = toMillis(sp.store_timestamp);
    this.storeHost = sp.store_host || undefined;
    this.deliveryTimestamp = toMillis(sp.delivery_timestamp);
    const d = sp.body_digest;
    let corrupted = d ? !digestMatches(raw, d.type, d.checksum ?? '') : false;
    let body = raw;
    if (!corrupted && sp.body_encoding === WireEncoding.GZIP) {
      try {
        body = zlib.gunzipSync(raw);
      } catch {
        corrupted = true;
      }
    }
    this.body = body;
    this.corrupted = corrupted;
    deliveries.set(this, { ...ref, receiptHandle: sp.receipt_handle ?? ref.receiptHandle });
  }

  /** The body as UTF-8 text. */
  text(): string {
    return this.body.toString('utf8');
  }

  /** The id of the first delivery of this message (retries are new messages with new ids). */
  get originMessageId(): string {
    return this.properties.ORIGIN_MESSAGE_ID ?? this.messageId;
  }

  /** The current receipt handle (replaced by `changeInvisibleDuration`). */
  get receiptHandle(): string {
    return deliveries.get(this)?.receiptHandle ?? '';
  }
}

const EMPTY_BODY = Buffer.alloc(0);
