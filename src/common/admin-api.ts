/**
 * The admin HTTP API's shapes, in one place: what the broker answers (admin/, broker/lag.ts,
 * broker/delivery-history.ts), what the SDK's `Admin` returns (client/admin-types.ts) and what the
 * web console reads (dashboard/ui/api.ts, which imports these as types only). Plain data: no Node
 * types, so the browser build can use them too.
 */

/** A topic as `topicList` / `GET /api/topics/:topic` show it. */
export interface TopicInfo {
  topic: string;
  readQueueNums: number;
  writeQueueNums: number;
  perm: number;
  messageType: string;
  attributes: Record<string, string>;
}

/** mqadmin's `groupRetryPolicy`: a customized table or an exponential curve (milliseconds). */
export type GroupRetryPolicy =
  | { type: 'CUSTOMIZED'; customizedRetryPolicy: { next: number[] } }
  | { type: 'EXPONENTIAL'; exponentialRetryPolicy: { initial: number; max: number; multiplier: number } };

/** A consumer group's configuration, as `updateSubGroup` sets it. */
export interface GroupInfo {
  group: string;
  retryMaxTimes: number;
  consumeMessageOrderly: boolean;
  consumeBroadcastEnable: boolean;
  consumeEnable: boolean;
  groupRetryPolicy: GroupRetryPolicy;
  fifoRetryIntervalMs: number;
}

/** A client connected to the broker (gRPC or Remoting). */
export interface ConsumerConnection {
  clientId: string;
  clientType: string;
  remoteAddress: string;
  language: string;
  version: string;
  topics: string[];
  connectedAt: number;
  lastSeen: number;
}

/** A stored message, body included (base64). */
export interface StoredMessageInfo {
  messageId: string;
  topic: string;
  queueId: number;
  queueOffset: number;
  tag?: string;
  keys: string[];
  messageGroup?: string;
  messageType: string;
  properties: Record<string, string>;
  bornTimestamp: number;
  bornHost: string;
  storeTimestamp: number;
  reconsumeTimes: number;
  bodySize: number;
  /** Base64. */
  body: string;
}

/** One queue in `consumerProgress` (push/simple groups' message-granularity figures). */
export interface QueueProgress {
  queueId: number;
  brokerOffset: number;
  consumerOffset: number;
  inflight: number;
  /** FIFO deliveries failed and waiting, or due again. */
  ready: number;
  lag: number;
  lastStoreTimestamp: number;
}

/** How a group consumes a topic: by message (push and simple consumers) or by queue (pull). */
export type ConsumeKind = 'POP' | 'PULL';

/** One queue's consumption figures (see broker/lag.ts for what each means). */
export interface QueueLag {
  queueId: number;
  minOffset: number;
  brokerOffset: number;
  consumerOffset: number;
  committedOffset: number;
  ready: number;
  inflight: number;
  waitingRetry: number;
  lag: number;
  lagLatencyMs: number;
  queueingLatencyMs: number;
  lastStoreTimestamp: number;
  /** When the group last consumed from the queue (pull commits), 0 if unknown. */
  lastConsumeTimestamp: number;
}

export interface TopicLag {
  group: string;
  topic: string;
  kind: ConsumeKind;
  queues: QueueLag[];
  /** The group's retry topic for this topic (push and simple consumers). */
  retry: { backlog: number; inflight: number; lagLatencyMs: number };
}

export type DeliveryOutcome =
  | 'IN_FLIGHT'
  | 'ACKED'
  | 'NACKED'
  | 'EXPIRED'
  | 'RELEASED'
  | 'FORWARDED_TO_DLQ'
  | 'PULLED'
  | 'RESENT_FROM_DLQ';

/** What a failed delivery led to. */
export type DeliveryNext = 'RETRY' | 'FIFO_RETRY' | 'DLQ';

/** One delivery of a message (broker/delivery-history.ts). */
export interface DeliveryRecord {
  group: string;
  topic: string;
  /** The id the client saw (a retry has its own id). */
  messageId: string;
  /** 1 for the first delivery. */
  attempt: number;
  clientId: string;
  /** POP: push and simple consumers; PULL: pull consumers; ADMIN: an operator's action. */
  via: 'POP' | 'PULL' | 'ADMIN';
  /** Where the delivered copy is stored: the topic's queue or the group's retry topic. */
  retry: boolean;
  queueId: number;
  queueOffset: number;
  at: number;
  outcome: DeliveryOutcome;
  settledAt?: number;
  next?: DeliveryNext;
}
