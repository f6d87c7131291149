/**
 * The SDK's public surface: `import { Producer, PushConsumer, SimpleConsumer, Admin } from 'vela'`.
 * Everything else in src/client is internal.
 */
export { Producer } from './producer.js';
export type { ProducerOptions, SendOptions, TransactionChecker, TransactionCheckResult } from './producer.js';
export { Transaction } from './transaction.js';
export type { TransactionResolution } from './transaction.js';
export { PushConsumer, ConsumeResult } from './push-consumer.js';
export type { PushConsumerOptions, MessageListener, ConsumeContext } from './push-consumer.js';
export { SimpleConsumer } from './simple-consumer.js';
export type { SimpleConsumerOptions, ReceiveOptions, MessagesOptions } from './simple-consumer.js';
export type { ConsumerOptions, Subscriptions, FilterExpression } from './consumer-base.js';
export type { ClientOptions, ClientTls, SessionCredentials } from './options.js';
export { MessageView, MessageType } from './message.js';
export type { Message, SendReceipt } from './message.js';
export { VelaClientError, isVelaClientError, isRetriableCode } from './errors.js';
export { newMessageId, decodeMessageId } from './message-id.js';
export { Admin } from './admin.js';
export type {
  AdminOptions,
  TopicInput,
  TopicInfo,
  TopicMessageType,
  GroupInput,
  GroupInfo,
  GroupRetryPolicy,
  QueueStatus,
  ConsumerProgress,
  ConsumerConnection,
  StoredMessageInfo,
  DeadLetterPage,
  ResetTarget,
  ResetOffsetResult,
  TimerStatus,
  TransactionStatus,
  AdminCredentials,
  UserInfo,
  UserType,
  UserStatus,
  AclAction,
  AclInput,
  AclInfo,
  AclEntryInfo,
} from './admin.js';
export { PullConsumer } from './pull-consumer.js';
export type { PullConsumerOptions, QueueRef, StartPosition } from './pull-consumer.js';
