/**
 * The send path: validate each message (server-semantics §6.3–6.4), check its type against the
 * topic's `message.type`, choose the queue (FIFO: by message group, on the server, so every client
 * maps a group to the same queue), and append to the store. A send resolves only when the message is
 * durable under the store's flush policy.
 */
import { createHash } from 'node:crypto';
import { VelaError } from '../common/errors.js';
import type { ProduceLimits } from '../common/config.js';
import type { MessageStore, MessageInput } from '../store/index.js';
import { MessageType, Perm, type TopicConfig } from './metadata.js';
import { checkTopicName } from './names.js';
import type { TopicRegistry } from './topic-registry.js';

export type SendableType = Exclude<MessageType, 'MIXED'>;

export interface ProduceMessage {
  topic: string;
  messageId: string;
  body: Buffer;
  tag?: string;
  keys?: string[];
  messageGroup?: string;
  properties?: Record<string, string>;
  bornTimestamp?: number;
  bornHost?: string;
  deliveryTimestamp?: number;
  /** As declared by the producer; derived from the message when absent. */
  messageType?: SendableType;
  bodyEncoding?: 'IDENTITY' | 'GZIP';
  traceContext?: string;
  /**
   * The queue the producer chose (Remoting producers choose queues themselves, e.g. for ordered
   * sends with a selector). Absent: the server chooses. Ignored for FIFO messages, whose queue
   * follows from their message group.
   */
  queueId?: number;
  /**
   * Whether the message's type must match the topic's `message.type`. @defaultValue true.
   * RocketMQ's broker leaves that check to the proxy, so its Remoting clients never meet it.
   */
  checkType?: boolean;
}

export interface SendReceipt {
  messageId: string;
  queueId: number;
  queueOffset: number;
  /** Where the message is stored (RocketMQ's commit-log offset, in its offset message id). */
  logPosition?: number;
  transactionId?: string;
}

/** Property names RocketMQ reserves for itself (MessageConst); users may not set them. */
export const RESERVED_PROPERTY_KEYS: ReadonlySet<string> = new Set([
  'KEYS',
  'TAGS',
  'WAIT',
  'DELAY',
  'RETRY_TOPIC',
  'REAL_TOPIC',
  'REAL_QID',
  'TRAN_MSG',
  'PGROUP',
  'MIN_OFFSET',
  'MAX_OFFSET',
  'BUYER_ID',
  'ORIGIN_MESSAGE_ID',
  'TRANSFER_FLAG',
  'CORRECTION_FLAG',
  'MQ2_FLAG',
  'RECONSUME_TIME',
  'MSG_REGION',
  'TRACE_ON',
  'UNIQ_KEY',
  'MAX_RECONSUME_TIMES',
  'CONSUME_START_TIME',
  'POP_CK',
  'POP_CK_OFFSET',
  '1ST_POP_TIME',
  'TRAN_PREPARED_QUEUE_OFFSET',
  'DUP_INFO',
  'EXTEND_UNIQ_INFO',
  'INSTANCE_ID',
  'CORRELATION_ID',
  'REPLY_TO_CLIENT',
  'TTL',
  'ARRIVE_TIME',
  'PUSH_REPLY_TIME',
  'CLUSTER',
  'MSG_TYPE',
  '__transactionId__',
  'TRANSACTION_CHECK_TIMES',
  'CHECK_IMMUNITY_TIME_IN_SECONDS',
  '__SHARDINGKEY',
  '__BORNHOST',
  'BORN_TIMESTAMP',
  'TIMER_DELAY_SEC',
  'TIMER_DELIVER_MS',
  'TIMER_DELAY_MS',
  'TIMER_OUT_MS',
  'TIMER_ENQUEUE_MS',
  'TIMER_DEQUEUE_MS',
  'TIMER_ROLL_TIMES',
  'TIMER_DEL_UNIQKEY',
  'TRACE_CONTEXT',
  'DLQ_ORIGIN_TOPIC',
  'DLQ_ORIGIN_MESSAGE_ID',
]);

/** Stored `sysFlag` bits: message type in bits 0–2, GZIP body in bit 3. */
export const SysFlag = {
  TYPE_MASK: 0b111,
  GZIP: 0b1000,
} as const;
const TYPE_CODES: Record<SendableType, number> = { NORMAL: 1, FIFO: 2, DELAY: 3, TRANSACTION: 4 };
const TYPE_BY_CODE: SendableType[] = ['NORMAL', 'NORMAL', 'FIFO', 'DELAY', 'TRANSACTION'];

export function messageTypeOf(sysFlag: number): SendableType {
  return TYPE_BY_CODE[sysFlag & SysFlag.TYPE_MASK] ?? 'NORMAL';
}

/** Internal property holding the producer's trace context. */
export const TRACE_CONTEXT_PROPERTY = 'TRACE_CONTEXT';
/** Internal property holding the body's MD5 (uppercase hex), computed once at send for every delivery. */
export const BODY_MD5_PROPERTY = '__VELA_BODY_MD5';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function utf8Length(s: string): number {
  return Buffer.byteLength(s);
}

/** Java's String.hashCode: stable across runs and clients. */
function javaHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

export class ProduceService {
  private readonly roundRobin = new Map<string, number>();

  constructor(
    private readonly store: MessageStore,
    private readonly topics: TopicRegistry,
    private readonly limits: ProduceLimits,
    private readonly options: {
      autoCreateTopics: boolean;
      now: () => number;
      admit?: (topic: string) => void;
      /** Told of each stored batch and how long the store took to make it durable (stats). */
      onStored?: (topic: string, stored: readonly MessageInput[], durableMs: number) => void;
    },
  ) {}

  /**
   * Send a batch to one topic. Batch-level problems (empty, several topics, unknown or read-only
   * topic) throw; each message then gets its own receipt or its own error.
   */
  async send(messages: readonly ProduceMessage[]): Promise<(SendReceipt | VelaError)[]> {
    if (messages.length === 0) throw new VelaError('MESSAGE_CORRUPTED', 'the request carries no message');
    const topicName = messages[0]!.topic;
    if (messages.some((m) => m.topic !== topicName)) {
      throw new VelaError('MESSAGE_CORRUPTED', 'all messages of one request must share one topic');
    }
    checkTopicName(topicName);
    let topic = this.topics.get(topicName);
    if (!topic && this.options.autoCreateTopics) topic = await this.topics.upsert(topicName, {});
    if (!topic) throw new VelaError('TOPIC_NOT_FOUND', topicName);
    if ((topic.perm & Perm.WRITE) === 0)
      throw new VelaError('FORBIDDEN', `topic ${topicName} is not writable`);
    this.options.admit?.(topicName);

    const results: (SendReceipt | VelaError)[] = new Array(messages.length);
    const inputs: MessageInput[] = [];
    const slots: number[] = [];
    for (let i = 0; i < messages.length; i++) {
      try {
        inputs.push(this.prepare(messages[i]!, topic));
        slots.push(i);
      } catch (err) {
        if (!(err instanceof VelaError)) throw err;
        results[i] = err;
      }
    }
    if (inputs.length > 0) {
      const started = performance.now();
      const stored = await this.store.append(inputs);
      this.options.onStored?.(topic.name, inputs, performance.now() - started);
      for (let j = 0; j < stored.length; j++) {
        const r = stored[j]!;
        results[slots[j]!] = {
          messageId: r.messageId,
          queueId: r.queueId,
          queueOffset: r.queueOffset,
          logPosition: r.logPosition,
        };
      }
    }
    return results;
  }

  /** Validate one message and turn it into a store record. */
  private prepare(m: ProduceMessage, topic: TopicConfig): MessageInput {
    const L = this.limits;
    if (typeof m.messageId !== 'string' || m.messageId.trim() === '' || m.messageId.length > 128) {
      throw new VelaError('ILLEGAL_MESSAGE_ID', 'the message id must be 1–128 characters');
    }
    if (!m.body || m.body.length === 0) throw new VelaError('MESSAGE_BODY_EMPTY');
    if (m.body.length > L.maxBodySize) {
      throw new VelaError('MESSAGE_BODY_TOO_LARGE', `${m.body.length} bytes > ${L.maxBodySize}`);
    }
    let propertiesSize = 0;
    if (m.tag !== undefined && m.tag !== '') {
      if (m.tag.trim() === '' || m.tag.includes('|') || CONTROL.test(m.tag)) {
        throw new VelaError(
          'ILLEGAL_MESSAGE_TAG',
          `"${m.tag}" (tags may not be blank or contain | or control characters)`,
        );
      }
      propertiesSize += utf8Length(m.tag);
    }
    for (const k of m.keys ?? []) {
      if (k.trim() === '' || CONTROL.test(k)) throw new VelaError('ILLEGAL_MESSAGE_KEY', `"${k}"`);
      propertiesSize += utf8Length(k);
    }
    if (m.messageGroup !== undefined && m.messageGroup !== '') {
      const g = m.messageGroup;
      if (g.trim() === '' || CONTROL.test(g) || g.length > L.maxMessageGroupLength) {
        throw new VelaError(
          'ILLEGAL_MESSAGE_GROUP',
          `message groups are 1–${L.maxMessageGroupLength} printable characters`,
        );
      }
    }
    const props = m.properties ?? {};
    const propKeys = Object.keys(props);
    if (propKeys.length > L.maxUserProperties) {
      throw new VelaError(
        'MESSAGE_PROPERTIES_TOO_LARGE',
        `${propKeys.length} user properties > ${L.maxUserProperties}`,
      );
    }
    for (const k of propKeys) {
      const v = props[k]!;
      if (k.trim() === '' || CONTROL.test(k) || RESERVED_PROPERTY_KEYS.has(k) || k.startsWith('__VELA_')) {
        throw new VelaError(
          'ILLEGAL_MESSAGE_PROPERTY_KEY',
          `"${k}" is blank, has control characters or is reserved`,
        );
      }
      if (CONTROL.test(v))
        throw new VelaError('ILLEGAL_MESSAGE_PROPERTY_KEY', `the value of "${k}" has control characters`);
      propertiesSize += utf8Length(k) + utf8Length(v);
    }
    if (propertiesSize > L.maxPropertiesSize) {
      throw new VelaError('MESSAGE_PROPERTIES_TOO_LARGE', `${propertiesSize} bytes > ${L.maxPropertiesSize}`);
    }

    const type = m.messageType ?? (m.messageGroup ? 'FIFO' : m.deliveryTimestamp ? 'DELAY' : 'NORMAL');
    const checkType = m.checkType !== false;
    if (checkType && topic.messageType !== MessageType.MIXED && type !== topic.messageType) {
      throw new VelaError(
        'MESSAGE_TYPE_CONFLICT',
        `a ${type} message cannot go to ${topic.name}, a ${topic.messageType} topic`,
      );
    }
    if (type === 'FIFO' && !m.messageGroup)
      throw new VelaError('ILLEGAL_MESSAGE_GROUP', 'a FIFO message needs a message group');
    if (checkType && type !== 'FIFO' && m.messageGroup) {
      throw new VelaError('MESSAGE_TYPE_CONFLICT', `a ${type} message cannot carry a message group`);
    }
    if (type === 'DELAY' || type === 'TRANSACTION') {
      throw new VelaError('NOT_IMPLEMENTED', `${type} messages are not supported by this broker yet`);
    }
    if (m.deliveryTimestamp)
      throw new VelaError('ILLEGAL_DELIVERY_TIME', `only DELAY messages carry a delivery time`);

    const properties: Record<string, string> = {
      ...props,
      [BODY_MD5_PROPERTY]: createHash('md5').update(m.body).digest('hex').toUpperCase(),
    };
    if (m.traceContext) properties[TRACE_CONTEXT_PROPERTY] = m.traceContext;
    return {
      topic: topic.name,
      queueId: this.chooseQueue(topic, m.messageGroup, m.queueId),
      messageId: m.messageId,
      body: m.body,
      ...(m.tag ? { tag: m.tag } : {}),
      ...(m.keys?.length ? { keys: m.keys } : {}),
      ...(m.messageGroup ? { messageGroup: m.messageGroup } : {}),
      properties,
      bornTimestamp: m.bornTimestamp ?? this.options.now(),
      ...(m.bornHost ? { bornHost: m.bornHost } : {}),
      sysFlag: TYPE_CODES[type] | (m.bodyEncoding === 'GZIP' ? SysFlag.GZIP : 0),
    };
  }

  private chooseQueue(topic: TopicConfig, messageGroup: string | undefined, chosen?: number): number {
    const n = topic.writeQueueNums;
    if (messageGroup) return Math.abs(javaHash(messageGroup) % n);
    if (chosen !== undefined) {
      if (!Number.isInteger(chosen) || chosen < 0 || chosen >= Math.max(n, topic.readQueueNums)) {
        throw new VelaError('BAD_REQUEST', `queue ${chosen} is not a queue of ${topic.name} (0…${n - 1})`);
      }
      return chosen;
    }
    const next = ((this.roundRobin.get(topic.name) ?? -1) + 1) % n;
    this.roundRobin.set(topic.name, next);
    return next;
  }
}
