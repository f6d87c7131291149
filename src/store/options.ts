/**
 * The storage engine's options: the settings of `common/config.ts` (their defaults and meanings live
 * there, once) plus what the store needs at run time and cannot read from a config file.
 */
import type { FlushPolicy, StoreSettings } from '../common/config.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';

export interface DiskUsage {
  totalBytes: number;
  usedBytes: number;
}

/** Reports how full the file system holding `dir` is. */
export type DiskUsageProbe = (dir: string) => Promise<DiskUsage>;

export interface StoreOptions extends Partial<StoreSettings> {
  /** Directory holding every file of the store. Required. */
  dataDir: string;
  /**
   * `sync`: an append resolves only after an fsync covers it (group commit).
   * `async`: an append resolves once written to the OS; fsync runs every `flushIntervalMs`.
   * @defaultValue 'sync'
   */
  flush?: FlushPolicy;
  /** @defaultValue statfs of `dataDir` */
  diskUsage?: DiskUsageProbe;
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue a silent logger */
  logger?: Logger;
}
