/** Validation of topic and consumer-group names (RocketMQ's rules, server-semantics §6.4). */
import { VelaError } from '../common/errors.js';

const NAME = /^[%|a-zA-Z0-9_-]+$/;
export const MAX_TOPIC_LENGTH = 127;
export const MAX_GROUP_LENGTH = 120;
/** Topics that only the broker itself may use. */
const SYSTEM_TOPICS = new Set([
  'TBW102',
  'SCHEDULE_TOPIC_XXXX',
  'BenchmarkTest',
  'RMQ_SYS_TRANS_HALF_TOPIC',
  'RMQ_SYS_TRACE_TOPIC',
  'RMQ_SYS_TRANS_OP_HALF_TOPIC',
  'TRANS_CHECK_MAX_TIME_TOPIC',
  'SELF_TEST_TOPIC',
  'OFFSET_MOVED_EVENT',
  'CHECKPOINT_TOPIC',
]);

export const RETRY_PREFIX = '%RETRY%';
export const DLQ_PREFIX = '%DLQ%';

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

/** Topics the broker owns: retry and dead-letter topics, RocketMQ's system topics (metrics' `is_system`). */
export function isSystemTopic(name: string): boolean {
  return (
    name.startsWith(RETRY_PREFIX) ||
    name.startsWith(DLQ_PREFIX) ||
    name.startsWith('%SYS%') ||
    name.startsWith('rmq_sys_') ||
    SYSTEM_TOPICS.has(name)
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
