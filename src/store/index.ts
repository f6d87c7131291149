/** The storage engine's public surface. */
export { MessageStore } from './message-store.js';
export type {
  AppendResult,
  ReadOptions,
  ReadResult,
  ReadStatus,
  QueueState,
  RetentionReport,
  RecoveryReport,
  ArrivalListener,
} from './message-store.js';
export { StateLog } from './state-log.js';
export type { StateLogOptions, StateReplay } from './state-log.js';
export { tagHash, keyHash } from './record-codec.js';
export type { MessageInput, StoredMessage } from './record-codec.js';
export { planRetention } from './retention.js';
export type { RetentionPlan, RetentionPolicy, SegmentInfo } from './retention.js';
