/**
 * The broker's durable state: every change (topic and group metadata, consumption state) is a typed
 * record (state-records.ts) appended to the store's `StateLog` and group-committed like messages. Parts of the
 * broker that own state register as participants: they apply records, and give and take snapshots.
 * The journal compacts itself into a snapshot once it has grown past `compactBytes`.
 */
import type { FlushPolicy } from '../common/config.js';
import type { Logger } from '../common/logger.js';
import { StateLog } from '../store/index.js';
import { decodeStateRecord, encodeStateRecord, type StateRecord } from './state-records.js';

export type { StateRecord } from './state-records.js';

export interface StateParticipant {
  /** Key of this participant's part of the snapshot. */
  readonly stateKey: string;
  /** Apply a record if it is one of this participant's kinds; return whether it was. */
  apply(record: StateRecord): boolean;
  snapshot(): unknown;
  restore(data: unknown): void;
}

export interface StateJournalOptions {
  dir: string;
  flush: FlushPolicy;
  logger: Logger;
  /** Compact once the journal after the last snapshot passes this. @defaultValue 64 MiB */
  compactBytes?: number;
}

export class StateJournal {
  private compacting: Promise<void> | null = null;
  private readonly compactBytes: number;

  private constructor(
    private readonly log: StateLog,
    private readonly participants: readonly StateParticipant[],
    private readonly logger: Logger,
    compactBytes: number,
  ) {
    this.compactBytes = compactBytes;
  }

  static async open(
    opts: StateJournalOptions,
    participants: readonly StateParticipant[],
  ): Promise<StateJournal> {
    let records = 0;
    let unknown = 0;
    const log = await StateLog.open(
      { dir: opts.dir, flush: opts.flush, logger: opts.logger },
      {
        onSnapshot: (data) => {
          const parts = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
          for (const p of participants) if (p.stateKey in parts) p.restore(parts[p.stateKey]);
        },
        onRecord: (buf) => {
          const rec = decodeStateRecord(JSON.parse(buf.toString('utf8')));
          records++;
          if (!rec || !participants.some((p) => p.apply(rec))) unknown++;
        },
      },
    );
    if (unknown > 0)
      opts.logger.warn({ unknown }, 'state journal had records no part of the broker understood');
    opts.logger.debug({ records }, 'state journal replayed');
    return new StateJournal(log, participants, opts.logger, opts.compactBytes ?? 64 * 1024 * 1024);
  }

  /** Append records; resolves once durable. The caller applies them to memory itself. */
  append(...records: StateRecord[]): Promise<void> {
    const p = this.log.appendMany(records.map((r) => Buffer.from(encodeStateRecord(r))));
    if (this.log.bytesSinceSnapshot > this.compactBytes && !this.compacting) {
      this.compacting = this.compact()
        .catch((err) => this.logger.error({ err }, 'state journal compaction failed'))
        .finally(() => (this.compacting = null));
    }
    return p;
  }

  /** Snapshot every participant now (synchronously) and let the journal drop what it covers. */
  compact(): Promise<void> {
    const parts: Record<string, unknown> = {};
    for (const p of this.participants) parts[p.stateKey] = p.snapshot();
    return this.log.compact(Buffer.from(JSON.stringify(parts)));
  }

  async close(): Promise<void> {
    await this.compacting;
    await this.compact();
    await this.log.close();
  }
}
