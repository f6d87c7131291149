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
import { DecodedMessage } from './hot-codec.js';

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
      tag: m.tag,
      keys,
      message_id: messageId,
      body_encoding: WireEncoding.IDENTITY,
      message_type: type,
      born_timestamp: fromMillis(Date.now()),
      born_host: BORN_HOST,
      message_group: fifo ? m.messageGroup : undefined,
      delivery_timestamp: delivery !== undefined ? fromMillis(delivery) : undefined,
      queue_id: undefined,
    },
    body,
  };
  return { topic: m.topic, messageId, fifo, transactional, bytes, wire };
}

/**
 * `wire` addressed to one queue (a copy: retries may pick another). Written out field by field, not
 * as `{ ...wire, system_properties: { ...sp, queue_id } }`: where a spread always sees one shape, V8's
 * fast clone gives each copy a map of its own, and the encoder's reads of them then miss their
 * inline caches (~23 misses per message, measured in `bench:compare` W1a; docs/benchmarks.md).
 */
export function wireOnQueue(wire: WireMessage, queueId: number): WireMessage {
  const sp = wire.system_properties!;
  return {
    topic: wire.topic,
    user_properties: wire.user_properties,
    system_properties: {
      tag: sp.tag,
      keys: sp.keys,
      message_id: sp.message_id,
      body_encoding: sp.body_encoding,
      message_type: sp.message_type,
      born_timestamp: sp.born_timestamp,
      born_host: sp.born_host,
      message_group: sp.message_group,
      delivery_timestamp: sp.delivery_timestamp,
      queue_id: queueId,
    },
    body: wire.body,
  };
}

/** Where received messages came from: what settling them needs (shared by the messages of one answer). */
export interface DeliverySource {
  /** Key of the connection it arrived on. */
  endpointKey: string;
  group: Resource;
  topic: Resource;
  /** The consumer that received it (acks through another are refused). */
  owner: object;
}

/** A delivery source with the receipt handle to use when the message carries none. */
export interface DeliveryRef extends DeliverySource {
  receiptHandle: string;
}

let sourceOfView: (m: MessageView) => DeliverySource | undefined;
let setHandleOfView: (m: MessageView, receiptHandle: string) => void;

/** The delivery behind a received message (SDK-internal); undefined for anything else. */
export function deliveryOf(m: MessageView): DeliverySource | undefined {
  return sourceOfView(m);
}

/** Replace a received message's receipt handle (after ChangeInvisibleDuration; SDK-internal). */
export function setReceiptHandle(m: MessageView, receiptHandle: string): void {
  setHandleOfView(m, receiptHandle);
}

const EMPTY_KEYS: readonly string[] = Object.freeze([]);
const EMPTY_PROPERTIES: Readonly<Record<string, string>> = Object.freeze({});

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
  #source: DeliverySource;
  #receiptHandle: string;

  static {
    sourceOfView = (m) => (m instanceof MessageView ? m.#source : undefined);
    setHandleOfView = (m, receiptHandle) => {
      m.#receiptHandle = receiptHandle;
    };
  }

  /** @internal Use a consumer to receive messages. */
  constructor(wire: WireMessage | DecodedMessage, ref: DeliveryRef) {
    // The decoder's objects are fresh and ours: their keys and properties are frozen, not copied.
    const fresh = wire instanceof DecodedMessage;
    const d = fresh ? wire : decodedOf(wire);
    this.messageId = d.messageId;
    this.topic = d.topic;
    this.tag = d.tag || undefined;
    this.keys = d.keys ? Object.freeze(fresh ? d.keys : [...d.keys]) : EMPTY_KEYS;
    this.messageGroup = d.messageGroup || undefined;
    this.properties = d.properties ? Object.freeze(d.properties) : EMPTY_PROPERTIES;
    this.messageType = TYPE_NAMES[d.messageType] ?? 'UNSPECIFIED';
    this.deliveryAttempt = d.deliveryAttempt > 1 ? d.deliveryAttempt : 1;
    this.queueId = d.queueId;
    this.queueOffset = d.queueOffset;
    this.bornTimestamp = d.bornTimestamp;
    this.bornHost = d.bornHost;
    this.storeTimestamp = d.storeTimestamp;
    this.storeHost = d.storeHost || undefined;
    this.deliveryTimestamp = d.deliveryTimestamp;
    const raw = d.body;
    let corrupted =
      d.digestType !== 0 || d.checksum !== '' ? !digestMatches(raw, d.digestType, d.checksum) : false;
    let body = raw;
    if (!corrupted && d.bodyEncoding === WireEncoding.GZIP) {
      try {
        body = zlib.gunzipSync(raw);
      } catch {
        corrupted = true;
      }
    }
    this.body = body;
    this.corrupted = corrupted;
    this.#source = ref;
    this.#receiptHandle = d.receiptHandle || ref.receiptHandle;
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
    return this.#receiptHandle;
  }
}

/** A protobufjs-decoded message (a transaction check's, on Telemetry) in the decoder's flat form. */
function decodedOf(wire: WireMessage): DecodedMessage {
  const sp = wire.system_properties ?? {};
  const d = new DecodedMessage();
  d.topic = wire.topic?.name ?? '';
  d.namespace = wire.topic?.resource_namespace ?? '';
  const props = wire.user_properties;
  if (props && Object.keys(props).length > 0) d.properties = { ...props };
  d.tag = sp.tag ?? '';
  if (sp.keys?.length) d.keys = sp.keys;
  d.messageId = sp.message_id ?? '';
  if (sp.body_digest) {
    d.digestType = sp.body_digest.type ?? 0;
    d.checksum = sp.body_digest.checksum ?? '';
  }
  d.bodyEncoding = sp.body_encoding ?? 0;
  d.messageType = sp.message_type ?? 0;
  d.bornTimestamp = toMillis(sp.born_timestamp);
  d.bornHost = sp.born_host ?? '';
  d.storeTimestamp = toMillis(sp.store_timestamp);
  d.storeHost = sp.store_host ?? '';
  d.deliveryTimestamp = toMillis(sp.delivery_timestamp);
  d.receiptHandle = sp.receipt_handle ?? '';
  d.queueId = sp.queue_id ?? 0;
  d.queueOffset = sp.queue_offset ?? 0;
  d.deliveryAttempt = sp.delivery_attempt ?? 0;
  d.messageGroup = sp.message_group ?? '';
  // A lean-decoded message without a body has an empty array there, not a Buffer.
  if (wire.body?.length) d.body = Buffer.isBuffer(wire.body) ? wire.body : Buffer.from(wire.body);
  return d;
}
