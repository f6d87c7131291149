/** Vela's public entry point. */
export { MessageStore, StateLog, tagHash, keyHash, planRetention } from './store/index.js';
export type {
  AppendResult,
  ReadOptions,
  ReadResult,
  ReadStatus,
  QueueState,
  RetentionReport,
  RecoveryReport,
  MessageInput,
  StoredMessage,
  StateLogOptions,
  StateReplay,
} from './store/index.js';
export { Code, codeName } from './common/codes.js';
export { VelaError, ErrorCatalogue, isVelaError } from './common/errors.js';
export type { ErrorKind } from './common/errors.js';
export type { StoreOptions, FlushPolicy } from './common/config.js';
export { createLogger, silentLogger } from './common/logger.js';
export type { Logger, LoggerOptions } from './common/logger.js';
export * from './client/index.js';
