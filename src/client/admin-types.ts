/** What the SDK's Admin sends and gets back (admin.ts): the admin HTTP API's shapes. */
import type { GroupRetryPolicy, QueueProgress, StoredMessageInfo } from '../common/admin-api.js';
export type {
  ConsumerConnection,
  GroupInfo,
  GroupRetryPolicy,
  StoredMessageInfo,
  TopicInfo,
} from '../common/admin-api.js';

export interface AdminCredentials {
  accessKey: string;
  secretKey: string;
}

export type UserType = 'Super' | 'Normal';
export type UserStatus = 'enable' | 'disable';

/** A user as the broker shows it: never with its secret key. */
export interface UserInfo {
  username: string;
  userType: UserType;
  userStatus: UserStatus;
}

export type AclAction = 'All' | 'Pub' | 'Sub' | 'Create' | 'Update' | 'Delete' | 'Get' | 'List';

/** createAcl / updateAcl, as mqadmin's flags. */
export interface AclInput {
  /** `User:<username>` */
  subject: string;
  /** `Topic:orders`, `Topic:order-*`, `Group:*`, `Cluster:*`, `*` */
  resources: string[];
  actions: AclAction[];
  /** IPs or CIDR ranges; none: from anywhere. */
  sourceIps?: string[];
  decision: 'Allow' | 'Deny';
}

export interface AclEntryInfo {
  resource: string;
  actions: AclAction[];
  sourceIps: string[];
  decision: 'Allow' | 'Deny';
}

export interface AclInfo {
  subject: string;
  policies: { policyType: string; entries: AclEntryInfo[] }[];
}

export type TopicMessageType = 'NORMAL' | 'FIFO' | 'DELAY' | 'TRANSACTION' | 'MIXED';

export interface TopicInput {
  /** Sets the `message.type` attribute. @defaultValue 'NORMAL' (for a new topic) */
  messageType?: TopicMessageType;
  /** @defaultValue 8 */
  readQueueNums?: number;
  /** @defaultValue 8 */
  writeQueueNums?: number;
  /** RocketMQ permission bits (6 = read + write). @defaultValue 6 */
  perm?: number;
  /** Further attributes, e.g. `{ 'message.type': 'FIFO' }`. */
  attributes?: Record<string, string>;
}

export interface TimerStatus {
  /** Delay messages waiting, all topics listed. */
  scheduled: number;
  /** When the next is due (epoch ms), null when none waits. */
  nextDueAt: number | null;
  topics: { topic: string; scheduled: number; nextDueAt: number | null }[];
}

export interface TransactionStatus {
  open: number;
  /** Per topic: open transactions and the store time of the oldest. */
  topics: { topic: string; open: number; oldestAt: number }[];
}

export interface GroupInput {
  /** Redeliveries before the dead-letter queue. @defaultValue 16 */
  retryMaxTimes?: number;
  /** FIFO consumption. @defaultValue false */
  consumeMessageOrderly?: boolean;
  /** @defaultValue CUSTOMIZED 10 s, 30 s, 1 m … 2 h */
  groupRetryPolicy?: GroupRetryPolicy;
  /** Retry interval of FIFO groups. @defaultValue 1000 */
  fifoRetryIntervalMs?: number;
  /** @defaultValue true */
  consumeBroadcastEnable?: boolean;
  /** @defaultValue true */
  consumeEnable?: boolean;
}

export interface QueueStatus {
  brokerName: string;
  queueId: number;
  minOffset: number;
  maxOffset: number;
  lastUpdateTimestamp: number;
}

export interface ConsumerProgress {
  group: string;
  queues: (QueueProgress & { topic: string; brokerName: string })[];
  totalLag: number;
  inflight: number;
}

/** Where `resetOffset` moves a group: to the first message stored at or after a time, or to an offset. */
export type ResetTarget = { timestamp: number | Date } | { offset: number; queueId?: number };

export interface ResetOffsetResult {
  group: string;
  topic: string;
  queues: { queueId: number; oldOffset: number | null; newOffset: number }[];
}

export interface DeadLetterPage {
  group: string;
  dlqTopic: string;
  messages: (StoredMessageInfo & { originTopic: string; originMessageId: string })[];
  nextOffset: number;
  maxOffset: number;
  deadLetteredSinceStart: number;
}
