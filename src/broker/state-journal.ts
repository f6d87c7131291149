/**
 * The broker's durable state: every change (topic and group metadata, consumption state) is a typed
 * record (state-records.ts) appended to the store's `StateLog` and group-committed like messages.
 * Parts of the broker that own state register as participants: they apply records, and give and
 * take snapshots. The journal compacts itself into a snapshot once it has grown past `compactBytes`.
 *
 * Two ways to change state, and the snapshot position honours both:
 * - `commit(...)`: append first, and the journal applies the records through the participants once
 *   they are durable (nobody sees a change that could still be lost). Until a record is applied, no
 *   snapshot position passes it, so a snapshot never claims a record whose effect it lacks.
 * - `append(...)`: the caller has already applied the records to memory; any snapshot taken from
 *   now on includes them.
 * Records from the snapshot position on are replayed over the snapshot, which may already reflect
 * some of them: applying a record must be idempotent (set this, delete that).
 *
 * Snapshots are streamed: serialized and written in chunks of a few tens of KiB while the event loop
 * keeps serving, so the state is never one huge string. A participant gives its part either as a copy
 * taken synchronously (`snapshot()`; an array is written element by element) or, for a large state,
 * as a live walk (`snapshotItems()`) read a chunk at a time while the state goes on changing: sound
 * because every change made meanwhile has a record at or after the snapshot position, replayed over
 * the snapshot (records must then also be absolute: "set this to", "delete that", never "add one").
 */
import type { FlushPolicy } from '../common/config.js';
import { systemClock, type Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { StateLog } from '../store/index.js';
import { decodeStateRecord, encodeStateRecord, type StateRecord } from './state-records.js';
import { BINARY_RECORD, decodeBinaryRecord, encodeBinaryRecord } from './state-binary.js';

export type { StateRecord } from './state-records.js';

export interface StateParticipant {
  /** Key of this participant's part of the snapshot. */
  readonly stateKey: string;
  /** Apply a record if it is one of this participant's kinds; return whether it was. Idempotent. */
  apply(record: StateRecord): boolean;
  /** A copy of this participant's state, taken synchronously; an array is written element by element. */
  snapshot(): unknown;
  /**
   * Optional, for a large state: its elements, walked lazily while the snapshot is written (and while
   * the state keeps changing). `restore` then receives them as an array.
   */
  snapshotItems?(): Iterable<unknown>;
  restore(data: unknown): void;
}

export interface StateJournalOptions {
  dir: string;
  flush: FlushPolicy;
  logger: Logger;
  /** Compact once the journal after the last snapshot passes this. @defaultValue 64 MiB */
  compactBytes?: number;
  /** Flushes up to this size are written on the event loop (`StateLogOptions`). @defaultValue 0 */
  inlineWriteBytes?: number;
  /** Times compaction retries after a failure. @defaultValue the system clock */
  clock?: Clock;
}

/** Snapshot chunks are cut once they pass this many characters. */
const CHUNK_CHARS = 64 * 1024;
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 60_000;

interface PendingCommit {
  position: number;
  applied: boolean;
}

export class StateJournal {
  private compacting: Promise<void> | null = null;
  private readonly compactBytes: number;
  /** Committed records not yet applied, in journal order. */
  private readonly pending: PendingCommit[] = [];
  private retryAt = 0;
  private retryMs = 0;

  private constructor(
    private readonly log: StateLog,
    private readonly participants: readonly StateParticipant[],
    private readonly logger: Logger,
    private readonly clock: Clock,
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
    const parts = new Map<string, { items: unknown[]; value?: unknown; whole: boolean }>();
    const log = await StateLog.open(
      {
        dir: opts.dir,
        flush: opts.flush,
        logger: opts.logger,
        ...(opts.inlineWriteBytes !== undefined ? { inlineWriteBytes: opts.inlineWriteBytes } : {}),
        ...(opts.clock ? { clock: opts.clock } : {}),
      },
      {
        onSnapshot: (chunk, version) => {
          const data = JSON.parse(chunk.toString('utf8')) as Record<string, unknown>;
          if (version === 1) {
            for (const [key, value] of Object.entries(data))
              parts.set(key, { items: [], value, whole: true });
            return;
          }
          const c = data as { p: string; i?: unknown[]; v?: unknown };
          let part = parts.get(c.p);
          if (!part) parts.set(c.p, (part = { items: [], whole: false }));
          if (c.i) for (const item of c.i) part.items.push(item);
          else {
            part.value = c.v;
            part.whole = true;
          }
        },
        onSnapshotDone: () => {
          for (const p of participants) {
            const part = parts.get(p.stateKey);
            if (part) p.restore(part.whole ? part.value : part.items);
          }
          parts.clear();
        },
        onRecord: (buf) => {
          const rec =
            buf[0] === BINARY_RECORD
              ? decodeBinaryRecord(buf)
              : decodeStateRecord(JSON.parse(buf.toString('utf8')));
          records++;
          if (!rec || !participants.some((p) => p.apply(rec))) unknown++;
        },
      },
    );
    if (unknown > 0)
      opts.logger.warn({ unknown }, 'state journal had records no part of the broker understood');
    opts.logger.debug({ records }, 'state journal replayed');
    return new StateJournal(
      log,
      participants,
      opts.logger,
      opts.clock ?? systemClock,
      opts.compactBytes ?? 64 * 1024 * 1024,
    );
  }

  /** Append records the caller has already applied to memory; resolves once durable. */
  append(...records: StateRecord[]): Promise<void> {
    const p = this.log.appendMany(records.map(encode));
    this.maybeCompact();
    return p;
  }

  /** Resolves once every record appended so far is durable (at once when none is pending). */
  whenDurable(): Promise<void> {
    return this.log.appendMany([]);
  }

  /**
   * Append records and, once they are durable, apply them through the participants (in journal
   * order) before resolving. A record that could not be made durable is never applied.
   */
  commit(...records: StateRecord[]): Promise<void> {
    const entry: PendingCommit = { position: this.log.endPosition, applied: false };
    const durable = this.log.appendMany(records.map(encode));
    this.pending.push(entry);
    this.maybeCompact();
    const done = () => {
      entry.applied = true;
      while (this.pending.length > 0 && this.pending[0]!.applied) this.pending.shift();
    };
    return durable.then(
      () => {
        try {
          for (const rec of records) {
            if (!this.participants.some((p) => p.apply(rec)))
              this.logger.error({ kind: rec.kind }, 'no part of the broker applies this state record');
          }
        } finally {
          done();
        }
      },
      (err: unknown) => {
        done();
        throw err;
      },
    );
  }

  /** Snapshot every participant now (synchronously) and let the journal drop what it covers. */
  compact(): Promise<void> {
    // Never past a committed record that is not applied yet: its effect is not in memory.
    const position = this.pending.find((e) => !e.applied)?.position ?? this.log.endPosition;
    const parts: [string, unknown][] = this.participants.map((p) => [
      p.stateKey,
      p.snapshotItems ? p.snapshotItems() : p.snapshot(),
    ]);
    return this.log.compact(chunks(parts), position);
  }

  async close(): Promise<void> {
    await this.compacting;
    try {
      if (!this.log.failure) await this.compact();
    } catch (err) {
      this.logger.error({ err }, 'closing snapshot of the state journal failed; the journal replays instead');
    }
    await this.log.close();
  }

  private maybeCompact(): void {
    if (this.compacting || this.log.bytesSinceSnapshot <= this.compactBytes) return;
    const now = this.clock.now();
    if (now < this.retryAt) return;
    this.compacting = this.compact()
      .then(
        () => {
          this.retryMs = 0;
          this.retryAt = 0;
        },
        (err: unknown) => {
          // Back off (a full disk would otherwise be retried on every append): 1 s, 2 s, … 60 s.
          this.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryMs * 2));
          this.retryAt = this.clock.now() + this.retryMs;
          this.logger.error({ err, retryInMs: this.retryMs }, 'state journal compaction failed');
        },
      )
      .finally(() => (this.compacting = null));
  }
}

function encode(r: StateRecord): Buffer {
  return encodeBinaryRecord(r) ?? Buffer.from(encodeStateRecord(r));
}

/**
 * The snapshot as chunks of JSON: `{"p": key, "i": [items…]}` for arrays and item walks (cut every
 * ~64 KiB, one element serialized at a time), `{"p": key, "v": value}` for anything else.
 */
function* chunks(parts: [string, unknown][]): Generator<Buffer> {
  for (const [key, data] of parts) {
    if (!Array.isArray(data) && !isWalk(data)) {
      yield Buffer.from(JSON.stringify({ p: key, v: data }));
      continue;
    }
    const prefix = `{"p":${JSON.stringify(key)},"i":[`;
    let items: string[] = [];
    let chars = 0;
    let any = false;
    for (const item of data as Iterable<unknown>) {
      any = true;
      const s = JSON.stringify(item) ?? 'null';
      items.push(s);
      chars += s.length + 1;
      if (chars >= CHUNK_CHARS) {
        yield Buffer.from(`${prefix}${items.join(',')}]}`);
        items = [];
        chars = 0;
      }
    }
    if (items.length > 0 || !any) yield Buffer.from(`${prefix}${items.join(',')}]}`);
  }
}

/** A lazy walk (`snapshotItems`): an iterator, as opposed to a plain value such as an object. */
function isWalk(data: unknown): data is Iterable<unknown> {
  return (
    typeof data === 'object' &&
    data !== null &&
    typeof (data as Iterable<unknown>)[Symbol.iterator] === 'function' &&
    typeof (data as Iterator<unknown>).next === 'function'
  );
}
