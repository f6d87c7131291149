/**
 * The send path: validate each message (server-semantics §6.3–6.4), check its type against the
 * topic's `message.type`, choose the queue (FIFO: by message group, on the server, so every client
 * maps a group to the same queue), and append to the store. A send resolves only when the message is
 * durable under the store's flush policy.
 */
import { VelaError } from '../common/errors.js';
import type { ProduceLimits } from '../common/config.js';
import type { MessageStore, MessageInput, AppendResult } from '../store/index.js';
import { MessageType, Perm, type TopicConfig } from './metadata.js';
import { checkTopicName } from './names.js';
import type { TopicRegistry } from './topic-registry.js';
import type { TimerService } from './timer/timer-service.js';
import type { TransactionService } from './transaction/transaction-service.js';

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
  /** The client that sent it (asked to resolve its transaction if it becomes orphaned). */
  producerClientId?: string;
  /** TRANSACTION: check the transaction this long after it was stored (capped), not the broker's time-out. */
  transactionRecoveryMs?: number;
  /**
   * RocketMQ's Remoting `flag`: an int the application sets, kept with the message (in the internal
   * property `__VELA_FLAG`) and delivered to Remoting consumers; gRPC has no such field.
   * @defaultValue 0
   */
  flag?: number;
}

export interface SendReceipt {
  messageId: string;
  queueId: number;
  /** The queue offset; for a DELAY message not yet due, its offset on the timer topic. */
  queueOffset: number;
  /** Where the message is stored (RocketMQ's commit-log offset, in its offset message id). */
  logPosition?: number;
  /** TRANSACTION: the id EndTransaction names. */
  transactionId?: string;
  /** DELAY (not yet due): the handle RecallMessage takes. */
  recallHandle?: string;
}

/** Where the send path hands DELAY and TRANSACTION messages (timer/, transaction/). */
export interface SpecialSends {
  timer: TimerService;
  transactions: TransactionService;
  maxDelayMs: number;
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
/**
 * Internal property holding the body's MD5 (uppercase hex): earlier builds stored it at send; the
 * gRPC edge now computes the digest at delivery and reads this only from messages that have it.
 */
export const BODY_MD5_PROPERTY = '__VELA_BODY_MD5';
/** Internal property holding a Remoting message's `flag` (absent when 0). */
export const FLAG_PROPERTY = '__VELA_FLAG';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function utf8Length(s: string): number {
  return Buffer.byteLength(s);
}

/** `3 d`, `90 min`, `12 s`, `250 ms`: a span for error messages. */
function formatSpan(ms: number): string {
  if (ms >= 86_400_000 && ms % 3_600_000 === 0) return `${+(ms / 86_400_000).toFixed(2)} d`;
  if (ms >= 3_600_000) return `${+(ms / 3_600_000).toFixed(2)} h`;
  if (ms >= 60_000) return `${+(ms / 60_000).toFixed(2)} min`;
  if (ms >= 1000) return `${+(ms / 1000).toFixed(2)} s`;
  return `${ms} ms`;
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
      special?: SpecialSends;
      /** Told of each stored batch and how long the store took to make it durable (stats). */
      onStored?: (topic: string, stored: readonly MessageInput[], durableMs: number) => void;
    },
  ) {}

  /**
   * Send a batch to one topic. Batch-level problems (empty, several topics, unknown or read-only
   * topic) throw; each message then gets its own receipt or its own error — or, with `allOrNone`
   * (RocketMQ's batches), the first invalid message's error is thrown and none is stored.
   */
  async send(
    messages: readonly ProduceMessage[],
    opts: { allOrNone?: boolean } = {},
  ): Promise<(SendReceipt | VelaError)[]> {
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
    const kinds: ('DELAY' | 'TRANSACTION' | undefined)[] = [];
    const now = this.options.now();
    let delayed = false;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      try {
        let input = this.prepare(m, topic, now);
        let kind: 'DELAY' | 'TRANSACTION' | undefined;
        const special = this.options.special!;
        if (m.deliveryTimestamp !== undefined && m.deliveryTimestamp > now) {
          kind = 'DELAY';
          input = special.timer.scheduleRecord(input, m.deliveryTimestamp);
          delayed = true;
        } else if (messageTypeOf(input.sysFlag ?? 0) === 'TRANSACTION') {
          kind = 'TRANSACTION';
          input = special.transactions.halfRecord(input, m.producerClientId ?? '', m.transactionRecoveryMs);
        }
        inputs.push(input);
        slots.push(i);
        kinds.push(kind);
      } catch (err) {
        if (!(err instanceof VelaError)) throw err;
        if (opts.allOrNone) throw err;
        results[i] = err;
      }
    }
    if (inputs.length > 0) {
      if (delayed) await this.options.special!.timer.prepareTopic(topic.name);
      const started = performance.now();
      const stored = await this.store.append(inputs);
      // Index what was diverted before anything else runs (see TimerService.scheduled).
      const handles = this.indexSpecial(inputs, stored, kinds);
      this.options.onStored?.(topic.name, inputs, performance.now() - started);
      for (let j = 0; j < stored.length; j++) {
        const r = stored[j]!;
        const input = inputs[j]!;
        const receipt: SendReceipt = {
          messageId: r.messageId,
          queueId: kinds[j] ? Number(input.properties?.REAL_QID ?? 0) : r.queueId,
          queueOffset: r.queueOffset,
          logPosition: r.logPosition,
        };
        if (kinds[j] === 'DELAY') receipt.recallHandle = handles[j]!;
        if (kinds[j] === 'TRANSACTION') receipt.transactionId = handles[j]!;
        results[slots[j]!] = receipt;
      }
    }
    return results;
  }

  /** Hand scheduled and half messages to their services; the recall handle or transaction id of each. */
  private indexSpecial(
    inputs: readonly MessageInput[],
    stored: readonly AppendResult[],
    kinds: readonly ('DELAY' | 'TRANSACTION' | undefined)[],
  ): (string | undefined)[] {
    const out: (string | undefined)[] = new Array(inputs.length);
    const delays: number[] = [];
    const halves: number[] = [];
    kinds.forEach((k, j) => {
      if (k === 'DELAY') delays.push(j);
      else if (k === 'TRANSACTION') halves.push(j);
    });
    const special = this.options.special;
    if (!special) return out;
    if (delays.length > 0) {
      const handles = special.timer.scheduled(delays.map((j) => ({ input: inputs[j]!, result: stored[j]! })));
      delays.forEach((j, n) => (out[j] = handles[n]));
    }
    if (halves.length > 0) {
      const ids = special.transactions.prepared(
        halves.map((j) => ({ input: inputs[j]!, result: stored[j]! })),
      );
      halves.forEach((j, n) => (out[j] = ids[n]));
    }
    return out;
  }

  /** Validate one message and turn it into a store record. */
  private prepare(m: ProduceMessage, topic: TopicConfig, now: number): MessageInput {
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
    if ((type === 'DELAY' || type === 'TRANSACTION') && !this.options.special) {
      throw new VelaError('NOT_IMPLEMENTED', `${type} messages are not supported by this broker`);
    }
    if (type === 'DELAY') {
      const due = m.deliveryTimestamp;
      if (due === undefined || !Number.isFinite(due) || due <= 0) {
        throw new VelaError('ILLEGAL_DELIVERY_TIME', 'a DELAY message needs a delivery timestamp');
      }
      const max = this.options.special!.maxDelayMs;
      if (due - now > max) {
        throw new VelaError(
          'ILLEGAL_DELIVERY_TIME',
          `${new Date(due).toISOString()} is ${formatSpan(due - now)} ahead; the longest delay is ${formatSpan(max)} (timer.maxDelayMs)`,
        );
      }
    } else if (m.deliveryTimestamp) {
      throw new VelaError('ILLEGAL_DELIVERY_TIME', `only DELAY messages carry a delivery time`);
    }

    const properties: Record<string, string> = { ...props };
    if (m.traceContext) properties[TRACE_CONTEXT_PROPERTY] = m.traceContext;
    if (m.flag) properties[FLAG_PROPERTY] = String(m.flag | 0);
    return {
      topic: topic.name,
      queueId: this.chooseQueue(topic, m.messageGroup, m.queueId),
      messageId: m.messageId,
      body: m.body,
      ...(m.tag ? { tag: m.tag } : {}),
      ...(m.keys?.length ? { keys: m.keys } : {}),
      ...(m.messageGroup ? { messageGroup: m.messageGroup } : {}),
      properties,
      bornTimestamp: m.bornTimestamp ?? now,
      ...(m.bornHost ? { bornHost: m.bornHost } : {}),
      ...(type === 'DELAY' ? { deliveryTimestamp: m.deliveryTimestamp! } : {}),
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
