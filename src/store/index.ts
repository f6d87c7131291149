/** The storage engine's public surface: `import { MessageStore } from 'vela/store'`. */
export { MessageStore } from './message-store.js';
export type {
  MessageStoreOptions,
  AppendResult,
  ReadOptions,
  ReadResult,
  ReadStatus,
  QueueState,
  RetentionReport,
  RecoveryReport,
  ArrivalListener,
  RolledBackQueue,
  RollbackListener,
} from './store-types.js';
export { StateLog } from './state-log.js';
export type { StateLogOptions, StateReplay } from './state-log.js';
export { tagHash, keyHash, MessageRecordSpans } from './record-codec.js';
export type { MessageInput, StoredMessage } from './record-codec.js';
export { planRetention } from './retention.js';
export type { RetentionPlan, RetentionPolicy, SegmentInfo } from './retention.js';
export type { StoreOptions, DiskUsage, DiskUsageProbe } from './options.js';
export { VelaError, isVelaError } from '../common/errors.js';
export type { ErrorKind } from '../common/errors.js';
export type { FlushPolicy, StoreSettings } from '../common/config.js';
export { STORE_DEFAULTS } from '../common/config.js';
export { nodeStoreFs } from './store-fs.js';
export type { StoreFs, StoreStat } from './store-fs.js';
export { ScheduleIndex, ScheduleKind } from './schedule-index.js';
export type {
  ScheduleEntry,
  EntryArrays,
  SlabState,
  SlabSummary,
  ScheduleIndexOptions,
} from './schedule-index.js';
