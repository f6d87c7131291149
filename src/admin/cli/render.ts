/**
 * What each `vela admin` command prints (without `--json`): the admin API's answers laid out as
 * mqadmin lays out the same information.
 */
import type { AdminOperations, GroupView, TopicView } from '../operations.js';
import { escapeControl } from '../../common/escape.js';
import { formatKeyValues, formatPerm, formatTable, formatTime } from './table.js';

type Answer<K extends keyof AdminOperations> = AdminOperations[K] extends (...args: never[]) => infer R
  ? Awaited<R>
  : never;
export type TopicStatus = Answer<'topicStatus'>;
export type TopicRoute = Answer<'topicRoute'>;
export type ConsumerProgress = Answer<'consumerProgress'>;
export type ConsumerConnections = Answer<'consumerConnection'>;
export type MessageViews = Answer<'queryMsgById'>;
export type BrokerInfo = Answer<'brokerInfo'>;
export type TimerStatus = Answer<'timerStatus'>;
export type TransactionStatus = Answer<'transactionStatus'>;

export function renderTopicConfig(t: TopicView): string {
  const attrs = Object.entries(t.attributes)
    .map(([k, v]) => escapeControl(`+${k}=${v}`))
    .join(', ');
  return (
    `TopicConfig [topicName=${escapeControl(t.topic)}, readQueueNums=${t.readQueueNums}, ` +
    `writeQueueNums=${t.writeQueueNums}, perm=${formatPerm(t.perm)}, messageType=${escapeControl(t.messageType)}, ` +
    `attributes={${attrs}}]\n`
  );
}

export function renderTopicList(topics: TopicView[]): string {
  return formatTable(
    ['Topic', 'Message Type', 'Read Queues', 'Write Queues', 'Perm'],
    topics.map((t) => [t.topic, t.messageType, t.readQueueNums, t.writeQueueNums, formatPerm(t.perm)]),
  );
}

export function renderTopicStatus(status: TopicStatus): string {
  return formatTable(
    ['Broker Name', 'QID', 'Min Offset', 'Max Offset', 'Last Updated'],
    status.map((q) => [q.brokerName, q.queueId, q.minOffset, q.maxOffset, formatTime(q.lastUpdateTimestamp)]),
  );
}

export function renderTopicRouteTable(route: TopicRoute): string {
  return formatTable(
    ['Broker Name', 'Broker Addr', 'Read Queues', 'Write Queues', 'Perm', 'Message Type'],
    route.queueDatas.map((q) => {
      const b = route.brokerDatas.find((d) => d.brokerName === q.brokerName);
      return [
        q.brokerName,
        b ? Object.values(b.brokerAddrs).join(',') : '',
        q.readQueueNums,
        q.writeQueueNums,
        formatPerm(q.perm),
        route.messageType,
      ];
    }),
  );
}

export function renderGroupConfig(g: GroupView): string {
  return (
    `SubscriptionGroupConfig [groupName=${escapeControl(g.group)}, consumeEnable=${g.consumeEnable}, ` +
    `consumeBroadcastEnable=${g.consumeBroadcastEnable}, consumeMessageOrderly=${g.consumeMessageOrderly}, ` +
    `retryMaxTimes=${g.retryMaxTimes}, groupRetryPolicy=${JSON.stringify(g.groupRetryPolicy)}, ` +
    `fifoRetryIntervalMs=${g.fifoRetryIntervalMs}]\n`
  );
}

export function renderGroupList(groups: GroupView[]): string {
  return formatTable(
    ['Group', 'Retry Max Times', 'Orderly', 'Broadcast', 'Consume Enable', 'Retry Policy'],
    groups.map((g) => [
      g.group,
      g.retryMaxTimes,
      g.consumeMessageOrderly,
      g.consumeBroadcastEnable,
      g.consumeEnable,
      JSON.stringify(g.groupRetryPolicy),
    ]),
  );
}

export function renderConsumerProgress(p: ConsumerProgress): string {
  const table = formatTable(
    ['Topic', 'Broker Name', 'QID', 'Broker Offset', 'Consumer Offset', 'In-flight', 'Diff', 'Last Time'],
    p.queues.map((q) => [
      q.topic,
      q.brokerName,
      q.queueId,
      q.brokerOffset,
      q.consumerOffset,
      q.inflight + q.ready,
      q.lag,
      formatTime(q.lastStoreTimestamp),
    ]),
  );
  const warnings = (p.warnings ?? []).map((w) => `WARNING: ${escapeControl(w)}\n`).join('');
  return `${table}\nConsume Diff Total: ${p.totalLag}  In-flight Total: ${p.inflight}\n${warnings}`;
}

export function renderConsumerConnection(conns: ConsumerConnections): string {
  return formatTable(
    ['ClientId', 'Client Type', 'Client Addr', 'Language', 'Version', 'Topics', 'Connected Since'],
    conns.map((c) => [
      c.clientId,
      c.clientType,
      c.remoteAddress,
      c.language,
      c.version,
      c.topics.join(','),
      formatTime(c.connectedAt),
    ]),
  );
}

/** Bodies up to this many characters are shown inline; longer or binary ones are left to `--json`. */
const BODY_PREVIEW_CHARS = 1024;

function bodyText(base64: string, size: number): string {
  const buf = Buffer.from(base64, 'base64');
  const text = buf.toString('utf8');
  // eslint-disable-next-line no-control-regex
  const printable = !text.includes('\uFFFD') && !/[\u0000-\u0008\u000E-\u001F]/.test(text);
  // What is printed still has its remaining control characters (\r, \v, \f, DEL, C1) escaped.
  if (!printable) return `<${size} bytes of binary data; --json gives them in base64>`;
  if (text.length > BODY_PREVIEW_CHARS) {
    return `${text.slice(0, BODY_PREVIEW_CHARS)}… <${size} bytes in all; --json gives them in base64>`;
  }
  return text;
}

export function renderMessages(messages: MessageViews): string {
  return messages
    .map((m) =>
      formatKeyValues([
        ['Message ID', m.messageId],
        ['Topic', m.topic],
        ['Tags', m.tag ? `[${m.tag}]` : '[]'],
        ['Keys', `[${m.keys.join(', ')}]`],
        ['Message Group', m.messageGroup ?? ''],
        ['Message Type', m.messageType],
        ['Queue ID', m.queueId],
        ['Queue Offset', m.queueOffset],
        ['CommitLog Offset', m.logPosition],
        ['Reconsume Times', m.reconsumeTimes],
        ['Born Timestamp', formatTime(m.bornTimestamp)],
        ['Store Timestamp', formatTime(m.storeTimestamp)],
        ['Born Host', m.bornHost],
        ['Properties', JSON.stringify(m.properties)],
        ['Body Size', m.bodySize],
        ['Message Body', { text: bodyText(m.body, m.bodySize) }],
      ]),
    )
    .join('\n');
}

export function renderMessageList(messages: MessageViews): string {
  return formatTable(
    ['Message ID', 'QID', 'Offset', 'Tag', 'Keys', 'Store Time'],
    messages.map((m) => [
      m.messageId,
      m.queueId,
      m.queueOffset,
      m.tag ?? '',
      m.keys.join(','),
      formatTime(m.storeTimestamp),
    ]),
  );
}

/** Nested objects flattened to dotted keys, mqadmin's `key : value` style. */
export function renderTimerStatus(status: TimerStatus): string {
  return (
    formatTable(
      ['Topic', 'Scheduled', 'Next Due'],
      status.topics.map((t) => [t.topic, t.scheduled, formatTime(t.nextDueAt)]),
    ) + `Total scheduled: ${status.scheduled}, next due: ${formatTime(status.nextDueAt)}\n`
  );
}

export function renderTransactionStatus(status: TransactionStatus): string {
  return (
    formatTable(
      ['Topic', 'Open', 'Oldest Stored'],
      status.topics.map((t) => [t.topic, t.open, formatTime(t.oldestAt)]),
    ) + `Total open transactions: ${status.open}\n`
  );
}

export function renderBrokerStatus(info: BrokerInfo): string {
  const pairs: [string, string | number | boolean][] = [];
  const walk = (prefix: string, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    } else {
      pairs.push([prefix, typeof v === 'object' ? JSON.stringify(v) : (v as string | number | boolean)]);
    }
  };
  walk('', info);
  return formatKeyValues(pairs);
}
