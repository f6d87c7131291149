/**
 * Options and their defaults, resolved once into frozen objects. Each field documents its default;
 * the CLI, environment variables and the config file use the same names.
 */
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';

export type FlushPolicy = 'sync' | 'async';

export interface DiskUsage {
  totalBytes: number;
  usedBytes: number;
}

/** Reports how full the file system holding `dir` is. */
export type DiskUsageProbe = (dir: string) => Promise<DiskUsage>;

export interface StoreOptions {
  /** Directory holding every file of the store. Required. */
  dataDir: string;
  /**
   * `sync`: an append resolves only after an fsync covers it (group commit).
   * `async`: an append resolves once written to the OS; fsync runs every `flushIntervalMs`.
   * @defaultValue 'sync'
   */
  flush?: FlushPolicy;
  /** fsync interval under `async` flush. @defaultValue 500 */
  flushIntervalMs?: number;
  /** Bytes per log segment. @defaultValue 268435456 (256 MiB) */
  segmentSize?: number;
  /** Entries per queue-index file (24 bytes each). @defaultValue 262144 (6 MiB files) */
  indexEntriesPerFile?: number;
  /** How often index entries are written out. @defaultValue 200 */
  indexFlushIntervalMs?: number;
  /** How often a recovery checkpoint is written. @defaultValue 1000 */
  checkpointIntervalMs?: number;
  /** Segments whose newest record is older than this are deleted. @defaultValue 259200000 (72 h) */
  retentionMs?: number;
  /** How often retention runs. @defaultValue 10000 */
  retentionCheckIntervalMs?: number;
  /** How often disk use is measured. @defaultValue 1000 */
  diskCheckIntervalMs?: number;
  /** Above this disk use, oldest segments are deleted (up to 10 a run) even if not expired. @defaultValue 0.75 */
  diskCleanupRatio?: number;
  /** Above this disk use, oldest segments are deleted at once, without the per-run limit. @defaultValue 0.85 */
  diskForceCleanupRatio?: number;
  /** Above this disk use, appends are refused (`STORE_DISK_FULL` → TOO_MANY_REQUESTS). @defaultValue 0.9 */
  diskRefuseRatio?: number;
  /** Verify each record's checksum when it is read. @defaultValue true */
  verifyChecksumOnRead?: boolean;
  /** @defaultValue statfs of `dataDir` */
  diskUsage?: DiskUsageProbe;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue a silent logger */
  logger?: Logger;
}

export const STORE_DEFAULTS = Object.freeze({
  flush: 'sync' as FlushPolicy,
  flushIntervalMs: 500,
  segmentSize: 256 * 1024 * 1024,
  indexEntriesPerFile: 262_144,
  indexFlushIntervalMs: 200,
  checkpointIntervalMs: 1000,
  retentionMs: 72 * 3600_000,
  retentionCheckIntervalMs: 10_000,
  diskCheckIntervalMs: 1000,
  diskCleanupRatio: 0.75,
  diskForceCleanupRatio: 0.85,
  diskRefuseRatio: 0.9,
  verifyChecksumOnRead: true,
});
