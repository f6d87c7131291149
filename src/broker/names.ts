/** Validation of topic and consumer-group names (RocketMQ's rules, server-semantics §6.4). */
import { VelaError } from '../common/errors.js';

const NAME = /^[%|a-zA-Z0-9_-]+$/;
export const MAX_TOPIC_LENGTH = 127;
export const MAX_GROUP_LENGTH = 120;
/** Topics that only the broker itself may use (RocketMQ's TopicValidator). */
const SYSTEM_TOPICS = new Set([
  'TBW102',
  'SCHEDULE_TOPIC_XXXX',
  'SCHEDULE_TOPIC_XXXX_V2',
  'BenchmarkTest',
  'RMQ_SYS_TRANS_HALF_TOPIC',
  'RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC',
  'RMQ_SYS_TRACE_TOPIC',
  'RMQ_SYS_TRANS_OP_HALF_TOPIC',
  'RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC',
  'TRANS_CHECK_MAX_TIME_TOPIC',
  'SELF_TEST_TOPIC',
  'OFFSET_MOVED_EVENT',
  'CHECKPOINT_TOPIC',
]);

export const RETRY_PREFIX = '%RETRY%';
export const DLQ_PREFIX = '%DLQ%';
/**
 * Name prefixes of the broker's own namespaces: retry and dead-letter topics, system resources, and
 * RocketMQ's light message queues. Nothing may be created in them from outside.
 */
const RESERVED_PREFIXES = [RETRY_PREFIX, DLQ_PREFIX, '%SYS%', '%LMQ%'];
/** Vela keeps a broadcast consumer's state under `<group>%BROADCAST%<consumer>`. */
const BROADCAST_MARK = '%BROADCAST%';

export function checkTopicName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.trim().length === 0)
    throw new VelaError('ILLEGAL_TOPIC', 'the topic name is blank');
  if (name.length > MAX_TOPIC_LENGTH) {
    throw new VelaError(
      'ILLEGAL_TOPIC',
      `"${name.slice(0, 40)}…" is longer than ${MAX_TOPIC_LENGTH} characters`,
    );
  }
  if (!NAME.test(name))
    throw new VelaError('ILLEGAL_TOPIC', `"${name}" may only contain letters, digits, %, |, - and _`);
  if (SYSTEM_TOPICS.has(name) || name.startsWith('rmq_sys_')) {
    throw new VelaError('ILLEGAL_TOPIC', `"${name}" is a system topic`);
  }
}

/**
 * A name a new topic may have: a legal one outside the system namespaces (`%RETRY%…`, `%DLQ%…`,
 * `%SYS%…`, `%LMQ%…`, RocketMQ's `RMQ_SYS_…` / `rmq_sys_…` and its system topics). Topics that already
 * exist keep their names (checkTopicName).
 */
export function checkNewTopicName(name: unknown): asserts name is string {
  checkTopicName(name);
  const prefix = RESERVED_PREFIXES.find((p) => name.startsWith(p));
  if (prefix || /^rmq_sys_/i.test(name)) {
    throw new VelaError(
      'ILLEGAL_TOPIC',
      `"${name}" is in a system namespace (${prefix ?? 'RMQ_SYS_'}…): the broker's own topics live there`,
    );
  }
}

export function checkGroupName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.trim().length === 0) {
    throw new VelaError('ILLEGAL_CONSUMER_GROUP', 'the consumer group name is blank');
  }
  if (name.length > MAX_GROUP_LENGTH) {
    throw new VelaError(
      'ILLEGAL_CONSUMER_GROUP',
      `"${name.slice(0, 40)}…" is longer than ${MAX_GROUP_LENGTH} characters`,
    );
  }
  if (!NAME.test(name)) {
    throw new VelaError(
      'ILLEGAL_CONSUMER_GROUP',
      `"${name}" may only contain letters, digits, %, |, - and _`,
    );
  }
  if (name.startsWith('CID_RMQ_SYS_'))
    throw new VelaError('ILLEGAL_CONSUMER_GROUP', `"${name}" is a system group`);
}

/** A name a new consumer group may have: a legal one outside the system namespaces. */
export function checkNewGroupName(name: unknown): asserts name is string {
  checkGroupName(name);
  const prefix = RESERVED_PREFIXES.find((p) => name.startsWith(p));
  if (prefix) {
    throw new VelaError(
      'ILLEGAL_CONSUMER_GROUP',
      `"${name}" is in a system namespace (${prefix}…): the broker's own names live there`,
    );
  }
  if (name.includes(BROADCAST_MARK)) {
    throw new VelaError(
      'ILLEGAL_CONSUMER_GROUP',
      `"${name}" contains ${BROADCAST_MARK}, which names a broadcast consumer's state`,
    );
  }
}

/** Topics the broker owns: retry and dead-letter topics, RocketMQ's system topics (metrics' `is_system`). */
export function isSystemTopic(name: string): boolean {
  return (
    RESERVED_PREFIXES.some((p) => name.startsWith(p)) || /^rmq_sys_/i.test(name) || SYSTEM_TOPICS.has(name)
  );
}

/** RocketMQ's own consumer groups. */
export function isSystemGroup(name: string): boolean {
  return name.startsWith('CID_RMQ_SYS_');
}

/** The dead-letter topic of a group. */
export function dlqTopicOf(group: string): string {
  return `${DLQ_PREFIX}${group}`;
}

/** Longest client id (`x-mq-client-id`): it is kept with every delivery the client holds. */
export const MAX_CLIENT_ID_LENGTH = 512;
/** Longest namespace (`x-mq-namespace`, `resource_namespace`): it becomes part of stored names. */
export const MAX_NAMESPACE_LENGTH = 64;
/** Bounds on the properties a client declares in its Settings (kept with its session). */
export const MAX_CLIENT_PROPERTIES = 64;
export const MAX_CLIENT_PROPERTY_KEY_LENGTH = 128;
export const MAX_CLIENT_PROPERTY_VALUE_LENGTH = 1024;
/** Longest broadcast consumer name: it names the consumer's kept state (`<group>%BROADCAST%<name>`). */
export const MAX_CONSUMER_NAME_LENGTH = 64;
const NAMESPACE = /^[a-zA-Z0-9_-]*$/;
const CONSUMER_NAME = /^[a-zA-Z0-9_-]+$/;

export function checkClientId(id: string): void {
  if (id.length > MAX_CLIENT_ID_LENGTH) {
    throw new VelaError(
      'BAD_REQUEST',
      `the client id is longer than ${MAX_CLIENT_ID_LENGTH} characters (${id.length})`,
    );
  }
}

export function checkNamespace(ns: string): void {
  if (ns.length > MAX_NAMESPACE_LENGTH || !NAMESPACE.test(ns)) {
    throw new VelaError(
      'BAD_REQUEST',
      `a namespace is at most ${MAX_NAMESPACE_LENGTH} letters, digits, '_' or '-' ("${ns.slice(0, 40)}" is not)`,
    );
  }
}

/** A client's declared properties; `consumerNameKey` names the one that must be a legal consumer name. */
export function checkClientProperties(props: Record<string, string>, consumerNameKey: string): void {
  const entries = Object.entries(props);
  if (entries.length > MAX_CLIENT_PROPERTIES)
    throw new VelaError('BAD_REQUEST', `a client declares at most ${MAX_CLIENT_PROPERTIES} properties`);
  for (const [k, v] of entries) {
    if (k.length > MAX_CLIENT_PROPERTY_KEY_LENGTH || String(v).length > MAX_CLIENT_PROPERTY_VALUE_LENGTH) {
      throw new VelaError(
        'BAD_REQUEST',
        `client property "${k.slice(0, 40)}": keys are at most ${MAX_CLIENT_PROPERTY_KEY_LENGTH} characters, values ${MAX_CLIENT_PROPERTY_VALUE_LENGTH}`,
      );
    }
  }
  const name = props[consumerNameKey];
  if (
    name !== undefined &&
    name !== '' &&
    (name.length > MAX_CONSUMER_NAME_LENGTH || !CONSUMER_NAME.test(name))
  ) {
    throw new VelaError(
      'ILLEGAL_CONSUMER_GROUP',
      `${consumerNameKey} is at most ${MAX_CONSUMER_NAME_LENGTH} letters, digits, '_' or '-' ("${name.slice(0, 40)}" is not)`,
    );
  }
}
