/**
 * How the admin API shows the broker's objects: topics, groups and stored messages as plain data.
 */
import type { GroupConfig, TopicConfig } from '../broker/metadata.js';
import type { BrokerMessage } from '../broker/message.js';
import { messageTypeOf } from '../broker/produce.js';
import { formatRetryPolicy } from '../broker/retry-policy.js';
import type { GroupInfo, StoredMessageInfo, TopicInfo } from '../common/admin-api.js';

/** A topic as the API shows it. */
export type TopicView = TopicInfo;
/** A group's configuration as the API shows it. */
export type GroupView = GroupInfo;

export const topicView = (t: TopicConfig): TopicView => ({
  topic: t.name,
  readQueueNums: t.readQueueNums,
  writeQueueNums: t.writeQueueNums,
  perm: t.perm,
  messageType: t.messageType,
  attributes: { ...t.attributes, 'message.type': t.messageType },
});

export const groupView = (g: GroupConfig): GroupView => ({
  group: g.name,
  retryMaxTimes: g.retryMaxTimes,
  consumeMessageOrderly: g.consumeMessageOrderly,
  consumeBroadcastEnable: g.consumeBroadcastEnable,
  consumeEnable: g.consumeEnable,
  groupRetryPolicy: formatRetryPolicy(g.retryPolicy),
  fifoRetryIntervalMs: g.fifoRetryIntervalMs,
});

export function messageView(m: BrokerMessage): StoredMessageInfo & { logPosition: number } {
  return {
    messageId: m.messageId,
    topic: m.topic,
    queueId: m.queueId,
    queueOffset: m.queueOffset,
    tag: m.tag,
    keys: m.keys,
    messageGroup: m.messageGroup,
    messageType: messageTypeOf(m.sysFlag),
    properties: m.properties,
    bornTimestamp: m.bornTimestamp,
    bornHost: m.bornHost,
    storeTimestamp: m.storeTimestamp,
    reconsumeTimes: m.reconsumeTimes,
    bodySize: m.body.length,
    body: m.body.toString('base64'),
    logPosition: m.logPosition,
  };
}
