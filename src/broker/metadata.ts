/**
 * Topic and consumer-group metadata: the shapes, their defaults, and their validation.
 * Registries (`topic-registry.ts`, `group-registry.ts`) keep them durable.
 */
import { VelaError } from '../common/errors.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy.js';

export const MessageType = {
  NORMAL: 'NORMAL',
  FIFO: 'FIFO',
  DELAY: 'DELAY',
  TRANSACTION: 'TRANSACTION',
  MIXED: 'MIXED',
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** RocketMQ permission bits. */
export const Perm = { READ: 4, WRITE: 2, INHERIT: 1 } as const;

export interface TopicConfig {
  name: string;
  /** @defaultValue 8 */
  readQueueNums: number;
  /** @defaultValue 8 */
  writeQueueNums: number;
  /** RocketMQ perm bits: 6 = read + write. @defaultValue 6 */
  perm: number;
  /** The `message.type` attribute. @defaultValue NORMAL */
  messageType: MessageType;
  /** Other attributes, as given (`-a +key=value`). */
  attributes: Record<string, string>;
}

export interface GroupConfig {
  name: string;
  /** @defaultValue 16 (up to 17 deliveries) */
  retryMaxTimes: number;
  /** FIFO consumption. @defaultValue false */
  consumeMessageOrderly: boolean;
  /** @defaultValue true */
  consumeBroadcastEnable: boolean;
  /** @defaultValue true */
  consumeEnable: boolean;
  /** @defaultValue CUSTOMIZED with the stepped table of design §3 */
  retryPolicy: RetryPolicy;
  /** Retry interval of FIFO groups. @defaultValue 1000 */
  fifoRetryIntervalMs: number;
}

export const DEFAULT_QUEUE_NUMS = 8;

export function topicDefaults(name: string): TopicConfig {
  return {
    name,
    readQueueNums: DEFAULT_QUEUE_NUMS,
    writeQueueNums: DEFAULT_QUEUE_NUMS,
    perm: Perm.READ | Perm.WRITE,
    messageType: MessageType.NORMAL,
    attributes: {},
  };
}

export function groupDefaults(name: string): GroupConfig {
  return {
    name,
    retryMaxTimes: 16,
    consumeMessageOrderly: false,
    consumeBroadcastEnable: true,
    consumeEnable: true,
    retryPolicy: DEFAULT_RETRY_POLICY,
    fifoRetryIntervalMs: 1000,
  };
}

const MESSAGE_TYPES = new Set<string>(Object.values(MessageType));

export function parseMessageType(value: string, allowMixed: boolean): MessageType {
  const v = value.toUpperCase();
  if (!MESSAGE_TYPES.has(v)) {
    throw new VelaError(
      'ILLEGAL_TOPIC_CONFIG',
      `message.type must be one of ${[...MESSAGE_TYPES].join(', ')}`,
    );
  }
  if (v === 'MIXED' && !allowMixed) {
    throw new VelaError(
      'ILLEGAL_TOPIC_CONFIG',
      'message.type MIXED is disabled (start the broker with --enable-mixed-message-type)',
    );
  }
  return v as MessageType;
}

/** Bounds on what a topic's attributes may hold: they are kept in memory and in every state snapshot. */
export const MAX_TOPIC_ATTRIBUTES = 32;
export const MAX_ATTRIBUTE_KEY_LENGTH = 64;
export const MAX_ATTRIBUTE_VALUE_LENGTH = 1024;
const ATTRIBUTE_KEY = /^[A-Za-z0-9._-]+$/;

/** Longest retry interval (a retry policy step, a FIFO group's retry interval): one year. */
export const MAX_RETRY_INTERVAL_MS = 365 * 24 * 3600_000;

export function checkTopicConfig(t: TopicConfig): void {
  const bad = (why: string) => new VelaError('ILLEGAL_TOPIC_CONFIG', why);
  const attributes = Object.entries(t.attributes);
  if (attributes.length > MAX_TOPIC_ATTRIBUTES)
    throw bad(`a topic has at most ${MAX_TOPIC_ATTRIBUTES} attributes (${attributes.length} given)`);
  for (const [k, v] of attributes) {
    if (k.length > MAX_ATTRIBUTE_KEY_LENGTH || !ATTRIBUTE_KEY.test(k)) {
      throw bad(
        `attribute names are 1 to ${MAX_ATTRIBUTE_KEY_LENGTH} letters, digits, '.', '_' or '-' ("${k.slice(0, 40)}" is not)`,
      );
    }
    if (typeof v !== 'string' || v.length > MAX_ATTRIBUTE_VALUE_LENGTH)
      throw bad(`attribute ${k}: a value is a string of at most ${MAX_ATTRIBUTE_VALUE_LENGTH} characters`);
  }
  for (const [k, v] of [
    ['readQueueNums', t.readQueueNums],
    ['writeQueueNums', t.writeQueueNums],
  ] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 1024) throw bad(`${k} must be an integer from 1 to 1024`);
  }
  if (!Number.isInteger(t.perm) || t.perm < 0 || t.perm > 7) throw bad('perm must be an integer from 0 to 7');
}

export function checkGroupConfig(g: GroupConfig): void {
  const bad = (why: string) => new VelaError('ILLEGAL_GROUP_CONFIG', why);
  if (!Number.isInteger(g.retryMaxTimes) || g.retryMaxTimes < 0 || g.retryMaxTimes > 1000) {
    throw bad('retryMaxTimes must be an integer from 0 to 1000');
  }
  if (
    !Number.isFinite(g.fifoRetryIntervalMs) ||
    g.fifoRetryIntervalMs < 0 ||
    g.fifoRetryIntervalMs > MAX_RETRY_INTERVAL_MS
  ) {
    throw bad(`fifoRetryIntervalMs must be from 0 to ${MAX_RETRY_INTERVAL_MS} ms (a year)`);
  }
}
