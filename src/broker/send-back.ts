/**
 * Retries of queue-granularity consumers (RocketMQ 4.x `consumerSendMsgBack`): a message a consumer
 * failed goes, as a new record, to its group's retry topic `%RETRY%<group>`, which the group's
 * consumers subscribe to and pull like any topic, or to `%DLQ%<group>` once it has been reconsumed
 * `maxReconsumeTimes` times (or the client asks for the DLQ with a negative delay level).
 *
 * The wait before a retry is one of RocketMQ's 18 delay levels (1 s … 2 h). A retry waits on the
 * broker's timer (timer/, like every delay message) and is appended to the retry topic at its time,
 * in the queue of its level (queue = level − 1), carrying its due time. Records stored with a due
 * time directly (by versions before the timer, or a service built without one) are held back by the
 * pull until due, stopping at the first one that is not (pull.ts); within a queue due times only grow. Level 0 means "the broker
 * decides": the group's retry policy for that attempt, rounded up to a level (the default policy is
 * exactly RocketMQ's 3 + reconsumeTimes).
 *
 * The retry keeps the message's `UNIQ_KEY` (its message id), as RocketMQ does, and records the first
 * topic in `RETRY_TOPIC` and the first id in `ORIGIN_MESSAGE_ID`.
 */
import { VelaError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { MessageInput, MessageStore, StoredMessage } from '../store/index.js';
import type { GroupConfig, TopicConfig } from './metadata.js';
import { DLQ_PREFIX, RETRY_PREFIX, dlqTopicOf } from './names.js';
import { FAILED_DELIVERY, recordOf } from './consume/retry-records.js';
import { DELAY_LEVELS_MS, MAX_DELAY_LEVEL, retryDelayMs } from './retry-policy.js';
import type { TopicRegistry } from './topic-registry.js';
import type { TimerService } from './timer/timer-service.js';

export { DELAY_LEVELS_MS, MAX_DELAY_LEVEL };

export const RETRY_TOPIC = 'RETRY_TOPIC';
export const ORIGIN_MESSAGE_ID = 'ORIGIN_MESSAGE_ID';
export const DLQ_ORIGIN_TOPIC = 'DLQ_ORIGIN_TOPIC';
export const DLQ_ORIGIN_MESSAGE_ID = 'DLQ_ORIGIN_MESSAGE_ID';
/** On a dead letter stored by this path: a resend of it goes back to `%RETRY%<group>`. */
export const SENT_BACK_DEAD_LETTER = '__VELA_SEND_BACK';

/** Whether a dead letter was stored by this path (undefined: not known, stored by an older version). */
export function deadLetteredBySendBack(m: StoredMessage): boolean | undefined {
  return m.properties[SENT_BACK_DEAD_LETTER] === '1' ? true : undefined;
}

/**
 * A dead letter sent back to a queue-granularity group: a new record in its retry topic, due at once,
 * its attempts counted afresh; it keeps its message id (`UNIQ_KEY`), as retries on this path do.
 */
export function groupResendRecord(m: StoredMessage, group: string): MessageInput {
  const firstTopic = m.properties[DLQ_ORIGIN_TOPIC] ?? m.properties[RETRY_TOPIC] ?? m.topic;
  const originId = m.properties[ORIGIN_MESSAGE_ID] ?? m.messageId;
  const {
    [DLQ_ORIGIN_TOPIC]: _t,
    [DLQ_ORIGIN_MESSAGE_ID]: _i,
    [SENT_BACK_DEAD_LETTER]: _s,
    [FAILED_DELIVERY]: _f,
    ...properties
  } = m.properties;
  return {
    topic: groupRetryTopic(group),
    queueId: 0,
    messageId: m.messageId,
    body: m.body,
    ...(m.tag ? { tag: m.tag } : {}),
    ...(m.keys.length ? { keys: m.keys } : {}),
    ...(m.messageGroup ? { messageGroup: m.messageGroup } : {}),
    bornTimestamp: m.bornTimestamp,
    ...(m.bornHost ? { bornHost: m.bornHost } : {}),
    sysFlag: m.sysFlag,
    reconsumeTimes: 0,
    properties: { ...properties, [RETRY_TOPIC]: firstTopic, [ORIGIN_MESSAGE_ID]: originId },
  };
}

/** A group's retry topic for queue-granularity consumers. */
export function groupRetryTopic(group: string): string {
  return `${RETRY_PREFIX}${group}`;
}

/** The group of a `%RETRY%<group>` topic, or undefined for other topics. */
export function groupOfRetryTopic(topic: string): string | undefined {
  return topic.startsWith(RETRY_PREFIX) ? topic.slice(RETRY_PREFIX.length) : undefined;
}

/** The smallest delay level whose delay is at least `ms` (18 for anything over 2 h). */
export function levelForDelay(ms: number): number {
  for (let i = 0; i < DELAY_LEVELS_MS.length; i++) if (DELAY_LEVELS_MS[i]! >= ms) return i + 1;
  return MAX_DELAY_LEVEL;
}

export interface SendBackRequest {
  /** The failed message. */
  message: StoredMessage;
  group: string;
  /** 0: the broker decides; < 0: straight to the DLQ; 1…18: that level (higher is clamped). */
  delayLevel: number;
  /** The id the client knows the message by (`ORIGIN_MESSAGE_ID` when absent). */
  originMessageId?: string;
  /** Retries after which the message goes to the DLQ. @defaultValue the group's retryMaxTimes */
  maxReconsumeTimes?: number;
}

export interface SendBackResult {
  topic: string;
  queueId: number;
  queueOffset: number;
  deadLettered: boolean;
  /** When the retry is due (0 for a dead letter). */
  dueAt: number;
}

export class SendBackService {
  /** Dead letters sent by this path since start, per group. */
  readonly deadLettered = new Map<string, number>();

  constructor(
    private readonly store: MessageStore,
    private readonly topics: TopicRegistry,
    private readonly now: () => number,
    private readonly logger: Logger,
    /** Where retries wait for their time; without it they are stored at once with their due time. */
    private readonly timer?: TimerService,
  ) {}

  /** The group's retry topic, created on first use (one queue per delay level, read + write). */
  async ensureRetryTopic(group: string): Promise<TopicConfig> {
    const name = groupRetryTopic(group);
    const t = this.topics.get(name);
    if (t) return t;
    return this.topics.upsert(
      name,
      { readQueueNums: MAX_DELAY_LEVEL, writeQueueNums: MAX_DELAY_LEVEL },
      { system: true },
    );
  }

  private async ensureDlq(group: string): Promise<string> {
    const name = dlqTopicOf(group);
    if (!this.topics.get(name))
      await this.topics.upsert(name, { readQueueNums: 1, writeQueueNums: 1 }, { system: true });
    return name;
  }

  /** Store the failed message as a retry (or a dead letter) of `group`. */
  async sendBack(req: SendBackRequest, group: GroupConfig): Promise<SendBackResult> {
    const m = req.message;
    if (m.topic.startsWith(DLQ_PREFIX)) {
      throw new VelaError('BAD_REQUEST', `${m.topic} is a dead-letter queue: its messages are not retried`);
    }
    const max = req.maxReconsumeTimes ?? group.retryMaxTimes;
    const firstTopic = m.properties[RETRY_TOPIC] ?? m.topic;
    const originId = m.properties[ORIGIN_MESSAGE_ID] ?? (req.originMessageId || m.messageId);
    const reconsumeTimes = m.reconsumeTimes + 1;
    if (m.reconsumeTimes >= max || req.delayLevel < 0) {
      const topic = await this.ensureDlq(group.name);
      const properties = {
        ...m.properties,
        [RETRY_TOPIC]: firstTopic,
        [ORIGIN_MESSAGE_ID]: originId,
        [DLQ_ORIGIN_TOPIC]: firstTopic,
        [DLQ_ORIGIN_MESSAGE_ID]: originId,
        [SENT_BACK_DEAD_LETTER]: '1',
      };
      const record = recordOf(m, topic, 0, m.messageId, properties, undefined, reconsumeTimes);
      const [r] = await this.store.append([record]);
      this.deadLettered.set(group.name, (this.deadLettered.get(group.name) ?? 0) + 1);
      this.logger.warn(
        {
          group: group.name,
          topic: firstTopic,
          messageId: originId,
          reconsumeTimes: m.reconsumeTimes,
          dlq: topic,
        },
        'message moved to the dead-letter queue',
      );
      return { topic, queueId: 0, queueOffset: r!.queueOffset, deadLettered: true, dueAt: 0 };
    }
    const level =
      req.delayLevel > 0
        ? Math.min(req.delayLevel, MAX_DELAY_LEVEL)
        : levelForDelay(retryDelayMs(group.retryPolicy, reconsumeTimes));
    const topic = (await this.ensureRetryTopic(group.name)).name;
    const dueAt = this.now() + DELAY_LEVELS_MS[level - 1]!;
    const properties = { ...m.properties, [RETRY_TOPIC]: firstTopic, [ORIGIN_MESSAGE_ID]: originId };
    const record = recordOf(m, topic, level - 1, m.messageId, properties, dueAt, reconsumeTimes);
    if (!this.timer) {
      const [r] = await this.store.append([record]);
      return { topic, queueId: level - 1, queueOffset: r!.queueOffset, deadLettered: false, dueAt };
    }
    await this.timer.prepareTopic(topic);
    const waiting = this.timer.scheduleRecord(record, dueAt);
    const [r] = await this.store.append([waiting]);
    this.timer.scheduled([{ input: waiting, result: r! }]); // at once, as the append resolves
    return { topic, queueId: level - 1, queueOffset: r!.queueOffset, deadLettered: false, dueAt };
  }
}
