/**
 * Whether the store takes writes, and why not: disk use at or over the refusal threshold (measured
 * every `diskCheckIntervalMs`); a write that ran out of space (refused until space is freed, or
 * until `SPACE_RETRY_MS` has passed, since a lifted quota does not show in statfs); or a fatal I/O
 * failure (read-only until a restart, see io-errors.ts). The first two are flow control
 * (TOO_MANY_REQUESTS: producers back off); the last is STORE_IO_ERROR.
 */
import type { Clock } from '../common/clock.js';
import type { DiskUsageProbe } from './options.js';
import type { Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { readOnlyError, rootCause } from './io-errors.js';

/** After running out of space, writes are tried again once this much is free … */
const SPACE_MARGIN = 1 << 20;
/** … or after this long, whichever comes first. */
const SPACE_RETRY_MS = 10_000;

export class StoreHealth {
  /** Disk use at the last check, 0–1. */
  diskRatio = 0;
  private refusing = false;
  private spaceExhausted: { available: number; at: number } | null = null;
  private fatal: Error | null = null;

  constructor(
    private readonly o: {
      dataDir: string;
      diskUsage: DiskUsageProbe;
      diskRefuseRatio: number;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  /** The fatal failure that made the store read-only, if any. */
  get readOnly(): Error | null {
    return this.fatal;
  }

  /** Why a write would be refused now, or null. */
  refusal(): VelaError | null {
    if (this.fatal) return readOnlyError(this.fatal);
    if (this.refusing) {
      return new VelaError(
        'STORE_DISK_FULL',
        `disk use ${(this.diskRatio * 100).toFixed(1)}% ≥ ${this.o.diskRefuseRatio * 100}%`,
      );
    }
    if (this.spaceExhausted) return new VelaError('STORE_DISK_FULL', 'no space left on the device');
    return null;
  }

  /** Measure disk use and update the refusals; returns the ratio used. */
  async checkDisk(): Promise<number> {
    const u = await this.o.diskUsage(this.o.dataDir);
    this.diskRatio = u.totalBytes > 0 ? u.usedBytes / u.totalBytes : 0;
    const refuse = this.diskRatio >= this.o.diskRefuseRatio;
    if (refuse !== this.refusing) {
      this.refusing = refuse;
      const pct = (this.diskRatio * 100).toFixed(1);
      if (refuse) this.o.logger.error({ diskUsedPct: pct }, 'disk nearly full: refusing writes');
      else this.o.logger.warn({ diskUsedPct: pct }, 'disk use back under the limit: accepting writes');
    }
    const x = this.spaceExhausted;
    if (x) {
      const available = u.totalBytes - u.usedBytes;
      if (x.available < 0) x.available = available;
      else if (available >= x.available + SPACE_MARGIN || this.o.clock.now() - x.at >= SPACE_RETRY_MS) {
        this.spaceExhausted = null;
        this.o.logger.warn({ availableBytes: available }, 'disk space freed: trying writes again');
      }
    }
    return this.diskRatio;
  }

  /** A write ran out of space. Returns true the first time (until space is freed). */
  noteSpaceExhausted(): boolean {
    if (this.spaceExhausted) return false;
    this.spaceExhausted = { available: -1, at: this.o.clock.now() };
    this.o.logger.error('disk full: refusing writes until space is freed');
    return true;
  }

  /**
   * The store cannot trust its files any more (a failed fsync): every write is refused until a
   * restart recovers from what is on disk. Returns the cause the first time, null after.
   */
  goReadOnly(err: unknown, what: string): Error | null {
    if (this.fatal) return null;
    const cause = rootCause(err);
    this.fatal = cause;
    this.o.logger.fatal(
      { err: cause, dataDir: this.o.dataDir },
      `${what}: the store is READ-ONLY; every write is refused until the broker is restarted`,
    );
    return cause;
  }
}
