/**
 * The message store's public types and its options, resolved once into a frozen object.
 */
import { STORE_DEFAULTS, type FlushPolicy } from '../common/config.js';
import type { StoreOptions, DiskUsageProbe } from './options.js';
import { systemClock, type Clock } from '../common/clock.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { statfsDiskUsage } from './disk-usage.js';
import { nodeStoreFs, type StoreFs } from './store-fs.js';
import type { RetentionReason } from './retention.js';
import type { StoredMessage } from './record-codec.js';

export interface AppendResult {
  messageId: string;
  queueId: number;
  queueOffset: number;
  logPosition: number;
  size: number;
  storeTimestamp: number;
}

export interface ReadOptions {
  /** Most messages to return. @defaultValue 32 */
  maxCount?: number;
  /** Stop adding messages past this many bytes (the first is always returned). @defaultValue 1 MiB */
  maxBytes?: number;
  /** Only messages whose tag hash is in this set (see `tagHash`); entries are skipped via the index. */
  tagHashes?: ReadonlySet<number> | null;
  /** With a filter, how many index entries one read may skip over. @defaultValue 4096 */
  maxScan?: number;
  /**
   * Read up to the queue's appended end (`appendedOffset`), not only its durable one: messages whose
   * records are not durable yet come from memory. A rollback (`onRollback`) may take them back, so
   * whoever hands them out waits for `whenDurable` before anyone hears of them.
   */
  appended?: boolean;
}

export type ReadStatus =
  /** Messages returned (possibly none when the filter matched nothing in the scanned range). */
  | 'FOUND'
  /** `offset` is at the end of the queue. */
  | 'NO_NEW_MESSAGE'
  /** `offset` is past the end of the queue; `nextOffset` is the end. */
  | 'OFFSET_OVERFLOW'
  /** `offset` was removed by retention; `nextOffset` is the first stored one. */
  | 'OFFSET_TOO_SMALL'
  /** No message was ever stored in this queue. */
  | 'NO_SUCH_QUEUE';

export interface ReadResult {
  status: ReadStatus;
  messages: StoredMessage[];
  /** Where the next read should start. */
  nextOffset: number;
  minOffset: number;
  maxOffset: number;
  /** Offsets skipped because their record failed its checksum (each is logged). */
  corruptOffsets: number[];
}

export interface QueueState {
  topic: string;
  queueId: number;
  minOffset: number;
  /** Offset the next message will get; also the count of messages ever stored. */
  maxOffset: number;
  lastStoreTimestamp: number;
}

export interface RetentionReport {
  deletedSegments: { base: number; end: number; reason: RetentionReason }[];
  usageBefore: number;
  usageAfter: number;
  logStart: number;
}

export interface RecoveryReport {
  clean: boolean;
  /** Log bytes re-read after the checkpoint. */
  scannedBytes: number;
  /** Records re-indexed. */
  recoveredRecords: number;
  /** Bytes cut from a damaged tail. */
  truncatedBytes: number;
  problem?: { position: number; reason: string };
  quarantined: string[];
  durationMs: number;
}

export type ArrivalListener = (topic: string, queueId: number, maxOffset: number) => void;

/** A queue whose appended messages past `end` were taken back (their records never became durable). */
export interface RolledBackQueue {
  topic: string;
  queueId: number;
  /** The queue's end now: offsets from here on are given to the next messages appended. */
  end: number;
}

/**
 * Told synchronously, before any later append, that messages past each queue's end were taken back.
 * After a transient failure (no space, no descriptors) appends wait for the returned promise; a
 * rejection makes the store read-only.
 */
export type RollbackListener = (queues: readonly RolledBackQueue[]) => Promise<void> | void;

/** Options of `MessageStore.open`: the store options, plus what only embedders and tests inject. */
export interface MessageStoreOptions extends StoreOptions {
  /** The file system underneath (tests put fault injection or a power-cut model here). @defaultValue Node's */
  fs?: StoreFs;
  /** Sealed log segments kept open for reads. @defaultValue 32 */
  maxOpenSegments?: number;
  /** Open index descriptors beyond which idle ones are closed at each checkpoint. @defaultValue 512 */
  maxOpenIndexFiles?: number;
}

export interface ResolvedStoreOptions {
  dataDir: string;
  flush: FlushPolicy;
  flushIntervalMs: number;
  segmentSize: number;
  indexEntriesPerFile: number;
  indexFlushIntervalMs: number;
  checkpointIntervalMs: number;
  retentionMs: number;
  retentionCheckIntervalMs: number;
  diskCheckIntervalMs: number;
  diskCleanupRatio: number;
  diskForceCleanupRatio: number;
  diskRefuseRatio: number;
  verifyChecksumOnRead: boolean;
  logReadCacheBytes: number;
  logChunkCacheBytes: number;
  inlineWriteBytes: number;
  accessMessageInMemoryMaxRatio: number;
  indexReadCacheEntries: number;
  diskUsage: DiskUsageProbe;
  clock: Clock;
  logger: Logger;
  fs: StoreFs;
  maxOpenSegments: number;
  maxOpenIndexFiles: number;
}

export function resolveStoreOptions(o: MessageStoreOptions): Readonly<ResolvedStoreOptions> {
  if (!o.dataDir) throw new VelaError('STORE_BAD_ARGUMENT', 'dataDir is required');
  return Object.freeze({
    flush: 'sync',
    ...STORE_DEFAULTS,
    maxOpenSegments: 32,
    maxOpenIndexFiles: 512,
    ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)),
    dataDir: o.dataDir,
    diskUsage: o.diskUsage ?? statfsDiskUsage,
    clock: o.clock ?? systemClock,
    logger: o.logger ?? silentLogger(),
    fs: o.fs ?? nodeStoreFs,
  }) as Readonly<ResolvedStoreOptions>;
}

/** The key of a queue in the store's maps. */
export const queueKey = (topic: string, queueId: number) => `${queueId}\u0000${topic}`;
