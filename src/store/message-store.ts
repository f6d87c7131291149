/**
 * The message store: the one durable home of messages, and the facade the broker talks to.
 *
 *   <dataDir>/LOCK                               pid of the process that owns the directory
 *   <dataDir>/commitlog/<20-digit base>.log      the log of all messages (segment-log.ts)
 *   <dataDir>/consumequeue/<topic>/<queue>/*.cq  queue indexes (queue-index.ts)
 *   <dataDir>/index/<segment base>.keys          message-id / key index (key-index.ts)
 *   <dataDir>/checkpoint.json                    recovery checkpoint (checkpoint.ts)
 *   <dataDir>/consumequeue-deleted/              queue indexes of deleted topics, on their way out
 *
 * An append assigns queue offsets and a store time synchronously (so storage order is call order),
 * encodes the records straight into the log's write buffer and resolves when the log says they are
 * durable under the flush policy. Only then do they become readable and are listeners told, so no
 * consumer ever sees a message the store could still lose.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { STORE_DEFAULTS, type FlushPolicy } from '../common/config.js';
import type { StoreOptions, DiskUsageProbe } from './options.js';
import { systemClock, type Clock } from '../common/clock.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { SegmentLog } from './segment-log.js';
import { QueueIndex } from './queue-index.js';
import { KeyIndex } from './key-index.js';
import { readCheckpoint, writeCheckpoint, type Checkpoint } from './checkpoint.js';
import { planRetention, type RetentionReason } from './retention.js';
import { statfsDiskUsage } from './disk-usage.js';
import { acquireDirLock, releaseDirLock } from './dir-lock.js';
import { SerialExecutor } from '../common/serial-executor.js';
import {
  checkFrame,
  decodeMessageFrame,
  decodeMessageIndexFields,
  encodeMessageFrame,
  FrameCheck,
  frameLength,
  keyHash,
  messageFrameUpperBound,
  RecordType,
  tagHash,
  MAX_FRAME_SIZE,
  type MessageInput,
  type StoredMessage,
} from './record-codec.js';

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

interface ResolvedStoreOptions {
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
  diskUsage: DiskUsageProbe;
  clock: Clock;
  logger: Logger;
}

function resolve(o: StoreOptions): Readonly<ResolvedStoreOptions> {
  if (!o.dataDir) throw new VelaError('STORE_BAD_ARGUMENT', 'dataDir is required');
  return Object.freeze({
    flush: 'sync',
    ...STORE_DEFAULTS,
    ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)),
    dataDir: o.dataDir,
    diskUsage: o.diskUsage ?? statfsDiskUsage,
    clock: o.clock ?? systemClock,
    logger: o.logger ?? silentLogger(),
  }) as Readonly<ResolvedStoreOptions>;
}

const queueKey = (topic: string, queueId: number) => `${queueId}\u0000${topic}`;
/** Where the queue indexes of a deleted topic go before they are removed (emptied at every open). */
const DELETED_QUEUES_DIR = 'consumequeue-deleted';
const READ_COALESCE_GAP = 64 * 1024;
const READ_MAX_SPAN = 4 * 1024 * 1024;

export class MessageStore {
  private readonly queues = new Map<string, QueueIndex>();
  /** Queues holding entries not yet durable. */
  private readonly uncommitted = new Set<QueueIndex>();
  private readonly segmentLastStore = new Map<number, number>();
  private readonly listeners = new Set<ArrivalListener>();
  private readonly maintenance = new SerialExecutor();
  private readonly timers: NodeJS.Timeout[] = [];
  private lastStoreTimestamp = 0;
  private diskRatio = 0;
  private refusing = false;
  private closed = false;
  private closing: Promise<void> | null = null;
  private retentionRunning: Promise<RetentionReport> | null = null;
  private log!: SegmentLog;
  private keys!: KeyIndex;
  private recovery!: RecoveryReport;

  private constructor(private readonly o: Readonly<ResolvedStoreOptions>) {}

  /** Open the store in `options.dataDir`, recovering from a crash if there was one. */
  static async open(options: StoreOptions): Promise<MessageStore> {
    const store = new MessageStore(resolve(options));
    await store.start();
    return store;
  }

  get options(): Readonly<ResolvedStoreOptions> {
    return this.o;
  }

  /** What the last open found and repaired. */
  get recoveryReport(): RecoveryReport {
    return this.recovery;
  }

  /**
   * Append messages (one batch = one promise). Resolves when every message is durable under the flush
   * policy, with each message's queue offset and log position, in input order.
   */
  append(messages: readonly MessageInput[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new VelaError('STORE_CLOSED'));
    if (this.refusing) {
      return Promise.reject(
        new VelaError(
          'STORE_DISK_FULL',
          `disk use ${(this.diskRatio * 100).toFixed(1)}% ≥ ${this.o.diskRefuseRatio * 100}%`,
        ),
      );
    }
    try {
      for (const m of messages) validateInput(m);
      const now = Math.max(this.o.clock.now(), this.lastStoreTimestamp);
      this.lastStoreTimestamp = now;
      const results: AppendResult[] = new Array(messages.length);
      let segmentBase = -1;
      for (let i = 0; i < messages.length; i++) {
        const m = messages[i]!;
        const q = this.queueFor(m.topic, m.queueId);
        const r = this.log.reserve(messageFrameUpperBound(m));
        const len = encodeMessageFrame(r.buf, r.off, m, q.nextOffset, now);
        this.log.commit(len);
        const queueOffset = q.add(r.position, now, len, tagHash(m.tag));
        this.uncommitted.add(q);
        this.keys.add(keyHash(m.messageId), r.position, r.segmentBase);
        if (m.keys) for (const k of m.keys) this.keys.add(keyHash(k), r.position, r.segmentBase);
        if (r.segmentBase !== segmentBase) {
          if (segmentBase >= 0) this.segmentLastStore.set(segmentBase, now);
          segmentBase = r.segmentBase;
        }
        results[i] = {
          messageId: m.messageId,
          queueId: m.queueId,
          queueOffset,
          logPosition: r.position,
          size: len,
          storeTimestamp: now,
        };
      }
      if (segmentBase >= 0) this.segmentLastStore.set(segmentBase, now);
      return this.log.whenDurable().then(() => results);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Read messages of a queue from `offset`. */
  async read(topic: string, queueId: number, offset: number, opts: ReadOptions = {}): Promise<ReadResult> {
    if (this.closed) throw new VelaError('STORE_CLOSED');
    const q = this.queues.get(queueKey(topic, queueId));
    const corruptOffsets: number[] = [];
    if (!q) {
      return {
        status: 'NO_SUCH_QUEUE',
        messages: [],
        nextOffset: 0,
        minOffset: 0,
        maxOffset: 0,
        corruptOffsets,
      };
    }
    const base = {
      messages: [] as StoredMessage[],
      minOffset: q.minOffset,
      maxOffset: q.committed,
      corruptOffsets,
    };
    if (offset < q.minOffset) return { ...base, status: 'OFFSET_TOO_SMALL', nextOffset: q.minOffset };
    if (offset === q.committed) return { ...base, status: 'NO_NEW_MESSAGE', nextOffset: offset };
    if (offset > q.committed) return { ...base, status: 'OFFSET_OVERFLOW', nextOffset: q.committed };

    const maxCount = Math.max(1, opts.maxCount ?? 32);
    const maxBytes = opts.maxBytes ?? 1024 * 1024;
    const filter = opts.tagHashes ?? null;
    const scan = filter ? Math.max(maxCount, opts.maxScan ?? 4096) : maxCount;
    let entries;
    try {
      entries = await q.read(offset, scan);
    } catch (err) {
      // Retention may have removed the file under us.
      if (offset < q.minOffset) return { ...base, status: 'OFFSET_TOO_SMALL', nextOffset: q.minOffset };
      throw err;
    }
    let nextOffset = offset;
    const wanted: typeof entries = [];
    let bytes = 0;
    for (const e of entries) {
      if (wanted.length >= maxCount || (wanted.length > 0 && bytes + e.size > maxBytes)) break;
      nextOffset = e.offset + 1;
      if (filter && !filter.has(e.tagHash)) continue;
      wanted.push(e);
      bytes += e.size;
    }
    const messages = base.messages;
    let i = 0;
    while (i < wanted.length) {
      // Coalesce neighbouring records into one read.
      let j = i + 1;
      const start = wanted[i]!.logPosition;
      let end = start + wanted[i]!.size;
      while (j < wanted.length) {
        const e = wanted[j]!;
        if (e.logPosition < end || e.logPosition - end > READ_COALESCE_GAP) break;
        if (e.logPosition + e.size - start > READ_MAX_SPAN) break;
        end = e.logPosition + e.size;
        j++;
      }
      let buf: Buffer;
      try {
        buf = await this.log.read(start, end - start);
      } catch (err) {
        if (start < this.log.startPosition) break; // deleted by retention meanwhile
        throw err;
      }
      for (let k = i; k < j; k++) {
        const e = wanted[k]!;
        const off = e.logPosition - start;
        if (!this.frameOk(buf, off, e.size)) {
          corruptOffsets.push(e.offset);
          this.o.logger.error(
            { topic, queueId, offset: e.offset, logPosition: e.logPosition },
            'corrupt record skipped',
          );
          continue;
        }
        const m = decodeMessageFrame(buf, off, e.logPosition);
        m.queueOffset = e.offset;
        messages.push(m);
      }
      i = j;
    }
    return { ...base, status: 'FOUND', messages, nextOffset };
  }

  /** The record at a log position (as returned by `append`), checksum verified. */
  async getMessage(logPosition: number): Promise<StoredMessage | null> {
    if (logPosition < this.log.startPosition || logPosition >= this.log.durableEnd) return null;
    let buf = await this.log.read(logPosition, 4096);
    if (buf.length < 4) return null;
    const len = frameLength(buf, 0);
    if (len > MAX_FRAME_SIZE) return null;
    if (len > buf.length) buf = await this.log.read(logPosition, len);
    if (checkFrame(buf, 0, buf.length) !== FrameCheck.OK || buf[8] !== RecordType.MESSAGE) return null;
    return decodeMessageFrame(buf, 0, logPosition);
  }

  /** Messages with this message id, newest first. */
  async findById(messageId: string, opts: { topic?: string; limit?: number } = {}): Promise<StoredMessage[]> {
    return this.findByHash(keyHash(messageId), opts, (m) => m.messageId === messageId);
  }

  /** Messages carrying this key, newest first. */
  async findByKey(key: string, opts: { topic?: string; limit?: number } = {}): Promise<StoredMessage[]> {
    return this.findByHash(keyHash(key), opts, (m) => m.keys.includes(key));
  }

  /** The first offset stored at or after `timestamp` (the queue's max offset if none). */
  async offsetForTimestamp(topic: string, queueId: number, timestamp: number): Promise<number> {
    const q = this.queues.get(queueKey(topic, queueId));
    return q ? q.offsetForTimestamp(timestamp) : 0;
  }

  queueState(topic: string, queueId: number): QueueState {
    const q = this.queues.get(queueKey(topic, queueId));
    return {
      topic,
      queueId,
      minOffset: q?.minOffset ?? 0,
      maxOffset: q?.committed ?? 0,
      lastStoreTimestamp: q?.lastStoreTimestamp ?? 0,
    };
  }

  /** Every queue that holds or held messages. */
  listQueues(): QueueState[] {
    return [...this.queues.values()].map((q) => this.queueState(q.topic, q.queueId));
  }

  /** Be told (synchronously, once per durable batch and queue) when new messages become readable. */
  onArrival(listener: ArrivalListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Storage figures for metrics and the admin API. */
  stats(): {
    logStart: number;
    logEnd: number;
    segments: number;
    queues: number;
    diskUsedRatio: number;
    refusingWrites: boolean;
  } {
    return {
      logStart: this.log.startPosition,
      logEnd: this.log.durableEnd,
      segments: this.log.segmentRanges().length,
      queues: this.queues.size,
      diskUsedRatio: this.diskRatio,
      refusingWrites: this.refusing,
    };
  }

  /** Measure disk use now and update the write refusal (also done every `diskCheckIntervalMs`). */
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
    return this.diskRatio;
  }

  /** Delete what retention allows now (also runs every `retentionCheckIntervalMs`). */
  runRetention(): Promise<RetentionReport> {
    if (this.retentionRunning) return this.retentionRunning;
    this.retentionRunning = this.maintenance
      .run(() => this.retain())
      .finally(() => (this.retentionRunning = null));
    return this.retentionRunning;
  }

  /**
   * Delete a topic's queues: their index files are removed and their memory and file handles
   * released, and a checkpoint is written so that recovery never indexes the topic's earlier
   * records again (the log bytes themselves go with retention). A later append to the topic starts
   * its queues at offset 0. The caller makes sure nothing appends to the topic meanwhile. Resolves
   * with the number of queues deleted.
   */
  deleteTopic(topic: string): Promise<number> {
    if (this.closed) return Promise.reject(new VelaError('STORE_CLOSED'));
    // Nothing to delete (the usual case when a topic is created): no wait behind maintenance.
    if (![...this.queues.values()].some((q) => q.topic === topic)) return Promise.resolve(0);
    return this.maintenance.run(async () => {
      if (![...this.queues.values()].some((q) => q.topic === topic)) return 0;
      // Records of the topic still on their way to disk belong to its past as well.
      await this.log.whenDurable().catch(() => {});
      const doomed = [...this.queues].filter(([, q]) => q.topic === topic);
      for (const [key, q] of doomed) {
        this.queues.delete(key);
        this.uncommitted.delete(q);
      }
      for (const [, q] of doomed) await q.discard();
      // Out of the way first (a crash from here on leaves nothing that loads as a queue), then a
      // checkpoint past the topic's records, then the files.
      const trash = join(this.o.dataDir, DELETED_QUEUES_DIR);
      const moved = join(trash, `${Date.now()}-${randomBytes(4).toString('hex')}`);
      await mkdir(trash, { recursive: true });
      await rename(join(this.o.dataDir, 'consumequeue', encodeURIComponent(topic)), moved).catch((err) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      });
      await this.writeCheckpointNow(false);
      await rm(moved, { recursive: true, force: true });
      this.o.logger.info({ topic, queues: doomed.length }, 'topic deleted from the store');
      return doomed.length;
    });
  }

  /** Write index entries out and record a recovery checkpoint (also runs every `checkpointIntervalMs`). */
  checkpoint(): Promise<void> {
    return this.maintenance.run(() => this.writeCheckpointNow(false));
  }

  /** Flush everything, write a clean checkpoint, release the directory. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) this.closing = this.shutdown();
    return this.closing;
  }

  // ------------------------------------------------------------------------------------------------

  private async start(): Promise<void> {
    const o = this.o;
    const t0 = performance.now();
    await mkdir(o.dataDir, { recursive: true });
    await acquireDirLock(o.dataDir);
    try {
      await rm(join(o.dataDir, DELETED_QUEUES_DIR), { recursive: true, force: true });
      const ckpt = await readCheckpoint(o.dataDir);
      this.log = await SegmentLog.open({
        dir: join(o.dataDir, 'commitlog'),
        segmentSize: o.segmentSize,
        flush: o.flush,
        flushIntervalMs: o.flushIntervalMs,
        logger: o.logger,
        onDurable: (end) => this.onDurable(end),
        onRollback: () => this.onRollback(),
      });
      this.keys = await KeyIndex.load(join(o.dataDir, 'index'));
      await this.loadQueues();
      this.recovery = await this.recover(ckpt);
      this.recovery.durationMs = Math.round(performance.now() - t0);
      const level = this.recovery.problem ? 'warn' : 'info';
      o.logger[level](
        { recovery: this.recovery },
        this.recovery.problem ? 'store recovered a damaged log' : 'store opened',
      );
      await this.checkDisk();
      await this.writeCheckpointNow(false);
    } catch (err) {
      await releaseDirLock(o.dataDir);
      throw err;
    }
    this.every(o.indexFlushIntervalMs, () => this.maintenance.run(() => this.persistIndexes()));
    this.every(o.checkpointIntervalMs, () => this.checkpoint());
    this.every(o.retentionCheckIntervalMs, () => this.runRetention());
    this.every(o.diskCheckIntervalMs, async () => {
      const ratio = await this.checkDisk();
      if (ratio >= o.diskCleanupRatio) await this.runRetention();
    });
  }

  private every(ms: number, fn: () => Promise<unknown>): void {
    const t = setInterval(() => {
      if (this.closed) return;
      fn().catch((err) => this.o.logger.error({ err }, 'store maintenance task failed'));
    }, ms);
    t.unref();
    this.timers.push(t);
  }

  private async loadQueues(): Promise<void> {
    const root = join(this.o.dataDir, 'consumequeue');
    await mkdir(root, { recursive: true });
    for (const topicDir of await readdir(root)) {
      const topic = decodeURIComponent(topicDir);
      for (const qdir of await readdir(join(root, topicDir))) {
        const queueId = Number(qdir);
        if (!Number.isInteger(queueId) || !(await stat(join(root, topicDir, qdir))).isDirectory()) continue;
        const q = await QueueIndex.load(
          topic,
          queueId,
          join(root, topicDir, qdir),
          this.o.indexEntriesPerFile,
        );
        this.queues.set(queueKey(topic, queueId), q);
      }
    }
  }

  private async recover(ckpt: Checkpoint | null): Promise<RecoveryReport> {
    const log = this.log;
    // 1. Keep only index entries the checkpoint vouches for (they were fsynced before it was written).
    const counts = new Map<string, number>();
    for (const [topic, queueId, count] of ckpt?.queues ?? []) counts.set(queueKey(topic, queueId), count);
    for (const [key, q] of this.queues) await q.truncateTo(counts.get(key) ?? 0);
    await this.keys.truncateToCounts(ckpt?.keys ?? {});
    for (const [base, ts] of Object.entries(ckpt?.segments ?? {}))
      this.segmentLastStore.set(Number(base), ts);

    // 2. Decide where to re-read the log from. A log shorter than the checkpoint (its tail was cut
    //    outside our control) is re-read from the start of its last segment, a known record boundary.
    let from = Math.max(ckpt?.logPosition ?? 0, log.startPosition);
    if (log.endPosition < from) {
      const last = log.segmentRanges().at(-1);
      from = last ? last.base : log.startPosition;
      this.o.logger.warn(
        { checkpoint: ckpt?.logPosition, logEnd: log.endPosition },
        'log is shorter than its checkpoint',
      );
      for (const q of this.queues.values()) await q.truncateFromPosition(from);
      await this.keys.truncateFromPosition(from);
    }

    // 3. Re-index every valid record past that point.
    let recoveredRecords = 0;
    const scan = await log.scan(from, (buf, off, position, type) => {
      if (type !== RecordType.MESSAGE) return;
      const f = decodeMessageIndexFields(buf, off);
      const size = frameLength(buf, off);
      const q = this.queueFor(f.topic, f.queueId);
      // An index lost with its checkpoint restarts at the offsets the records carry.
      if (q.isEmpty && f.queueOffset > q.nextOffset) q.resetEmptyTo(f.queueOffset);
      if (f.queueOffset !== q.nextOffset) {
        this.o.logger.warn(
          { topic: f.topic, queueId: f.queueId, recordOffset: f.queueOffset, indexOffset: q.nextOffset },
          'recovered record does not continue its queue index; indexing it at the next offset',
        );
      }
      q.add(position, f.storeTimestamp, size, tagHash(f.tag));
      const segBase = this.segmentBaseOf(position);
      this.keys.add(keyHash(f.messageId), position, segBase);
      for (const k of f.keys) this.keys.add(keyHash(k), position, segBase);
      this.segmentLastStore.set(segBase, f.storeTimestamp);
      this.lastStoreTimestamp = Math.max(this.lastStoreTimestamp, f.storeTimestamp);
      recoveredRecords++;
    });

    // 4. Cut a damaged tail (keeping its bytes in quarantine when it is not a plain torn write).
    let truncatedBytes = 0;
    let quarantined: string[] = [];
    if (scan.problem) {
      this.o.logger.error(
        { position: scan.problem.position, reason: scan.problem.reason, logEnd: log.endPosition },
        'damaged log tail: truncating to the last valid record',
      );
      ({ truncatedBytes, quarantined } = await log.truncate(
        scan.validEnd,
        scan.problem.reason !== 'torn record',
      ));
    }
    for (const q of this.queues.values()) q.commitBelow(Infinity);
    this.keys.commitBelow(Infinity);
    for (const q of this.queues.values()) {
      await q.applyLogStart(log.startPosition);
      this.lastStoreTimestamp = Math.max(this.lastStoreTimestamp, q.lastStoreTimestamp);
    }
    await this.keys.dropBelow(log.startPosition);
    for (const s of log.segmentRanges()) {
      if (!this.segmentLastStore.has(s.base)) {
        const mtime = (await stat(join(this.o.dataDir, 'commitlog', segName(s.base)))).mtimeMs;
        this.segmentLastStore.set(s.base, mtime);
      }
    }
    return {
      clean: ckpt?.clean === true && !scan.problem && scan.validEnd === from,
      scannedBytes: scan.validEnd - from,
      recoveredRecords,
      truncatedBytes,
      ...(scan.problem ? { problem: scan.problem } : {}),
      quarantined,
      durationMs: 0,
    };
  }

  private segmentBaseOf(position: number): number {
    const ranges = this.log.segmentRanges();
    for (let i = ranges.length - 1; i >= 0; i--) if (ranges[i]!.base <= position) return ranges[i]!.base;
    return 0;
  }

  private queueFor(topic: string, queueId: number): QueueIndex {
    const key = queueKey(topic, queueId);
    let q = this.queues.get(key);
    if (!q) {
      const dir = join(this.o.dataDir, 'consumequeue', encodeURIComponent(topic), String(queueId));
      q = QueueIndex.create(topic, queueId, dir, this.o.indexEntriesPerFile);
      this.queues.set(key, q);
    }
    return q;
  }

  private onDurable(end: number): void {
    const arrived: QueueIndex[] = [];
    for (const q of this.uncommitted) {
      const before = q.committed;
      if (q.commitBelow(end)) this.uncommitted.delete(q);
      if (q.committed > before) arrived.push(q);
    }
    this.keys.commitBelow(end);
    if (this.listeners.size === 0) return;
    for (const q of arrived) {
      for (const l of this.listeners) {
        try {
          l(q.topic, q.queueId, q.committed);
        } catch (err) {
          this.o.logger.error({ err }, 'arrival listener threw');
        }
      }
    }
  }

  private onRollback(): void {
    for (const q of this.uncommitted) q.rollback();
    this.uncommitted.clear();
    this.keys.rollback();
  }

  private frameOk(buf: Buffer, off: number, size: number): boolean {
    if (off + size > buf.length) return false;
    if (!this.o.verifyChecksumOnRead) return frameLength(buf, off) === size;
    return checkFrame(buf, off, off + size) === FrameCheck.OK && frameLength(buf, off) === size;
  }

  private async findByHash(
    hash: number,
    opts: { topic?: string; limit?: number },
    match: (m: StoredMessage) => boolean,
  ): Promise<StoredMessage[]> {
    const limit = opts.limit ?? 32;
    const out: StoredMessage[] = [];
    for (const pos of await this.keys.find(hash, limit * 4)) {
      const m = await this.getMessage(pos);
      if (m && match(m) && (!opts.topic || m.topic === opts.topic)) {
        // Only what its queue still holds: not removed by retention, not of a deleted topic (nor of
        // an earlier life of a topic deleted and created again).
        const q = this.queues.get(queueKey(m.topic, m.queueId));
        if (!q || (await q.entryAt(m.queueOffset))?.logPosition !== m.logPosition) continue;
        out.push(m);
        if (out.length >= limit) break;
      }
    }
    return out;
  }

  private async persistIndexes(): Promise<void> {
    for (const q of this.queues.values()) if (q.pendingBytes > 0) await q.persist();
    await this.keys.persist();
  }

  private async writeCheckpointNow(clean: boolean): Promise<void> {
    // Capture the position and the matching index counts in one synchronous step.
    const logPosition = this.log.durableEnd;
    const queues: [string, number, number][] = [];
    for (const q of this.queues.values()) queues.push([q.topic, q.queueId, q.committed]);
    const keys = this.keys.durableCounts();
    await this.persistIndexes();
    await this.log.sync();
    for (const q of this.queues.values()) await q.sync();
    await this.keys.sync();
    const segments: Record<string, number> = {};
    for (const s of this.log.segmentRanges()) {
      const ts = this.segmentLastStore.get(s.base);
      if (ts !== undefined) segments[s.base] = ts;
    }
    await writeCheckpoint(this.o.dataDir, {
      version: 1,
      logPosition,
      clean,
      queues,
      keys,
      segments,
      writtenAt: this.o.clock.now(),
    });
  }

  private async retain(): Promise<RetentionReport> {
    const usage = await this.o.diskUsage(this.o.dataDir);
    const segments = this.log.segmentRanges().map((s) => ({
      ...s,
      lastStoreTimestamp: this.segmentLastStore.get(s.base) ?? this.o.clock.now(),
    }));
    const plan = planRetention(segments, this.o.clock.now(), usage, {
      retentionMs: this.o.retentionMs,
      cleanupRatio: this.o.diskCleanupRatio,
      forceRatio: this.o.diskForceCleanupRatio,
      maxDeletesPerRun: 10,
    });
    const report: RetentionReport = {
      deletedSegments: [],
      usageBefore: plan.usageBefore,
      usageAfter: plan.usageAfter,
      logStart: this.log.startPosition,
    };
    if (plan.delete.length === 0) return report;
    const below = plan.delete.at(-1)!.segment.end;
    const removed = await this.log.deleteSegmentsBefore(below);
    const reasons = new Map(plan.delete.map((d) => [d.segment.base, d.reason]));
    for (const r of removed) {
      this.segmentLastStore.delete(r.base);
      report.deletedSegments.push({ ...r, reason: reasons.get(r.base) ?? 'expired' });
    }
    const logStart = this.log.startPosition;
    for (const q of this.queues.values()) await q.applyLogStart(logStart);
    await this.keys.dropBelow(logStart);
    report.logStart = logStart;
    this.o.logger.info(
      { deleted: report.deletedSegments, usageBefore: plan.usageBefore, logStart },
      'retention deleted log segments',
    );
    return report;
  }

  private async shutdown(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.maintenance.run(async () => {
      await this.log.whenDurable().catch(() => {});
      this.closed = true;
      await this.writeCheckpointNow(true);
      for (const q of this.queues.values()) await q.close();
      await this.keys.close();
      await this.log.close();
    });
    await releaseDirLock(this.o.dataDir);
    this.o.logger.info('store closed');
  }
}

function segName(base: number): string {
  return `${String(base).padStart(20, '0')}.log`;
}

function checkLength(s: string | undefined): void {
  // A UTF-8 string has at most 3 bytes per UTF-16 unit: only long strings need measuring.
  if (s !== undefined && s.length > 21_845 && Buffer.byteLength(s) > 0xffff) {
    throw new VelaError('STORE_BAD_ARGUMENT', 'a string field is longer than 65535 bytes');
  }
}

function validateInput(m: MessageInput): void {
  if (typeof m.topic !== 'string' || m.topic.length === 0)
    throw new VelaError('STORE_BAD_ARGUMENT', 'topic is required');
  if (!Number.isInteger(m.queueId) || m.queueId < 0 || m.queueId > 0x7fffffff) {
    throw new VelaError('STORE_BAD_ARGUMENT', `invalid queue id ${m.queueId}`);
  }
  if (typeof m.messageId !== 'string' || m.messageId.length === 0) {
    throw new VelaError('STORE_BAD_ARGUMENT', 'messageId is required');
  }
  if (!(m.body instanceof Uint8Array)) throw new VelaError('STORE_BAD_ARGUMENT', 'body must be bytes');
  checkLength(m.topic);
  checkLength(m.messageId);
  checkLength(m.tag);
  checkLength(m.messageGroup);
  checkLength(m.bornHost);
  if (m.keys) {
    if (m.keys.length > 0xffff) throw new VelaError('STORE_BAD_ARGUMENT', 'too many keys');
    for (const k of m.keys) checkLength(k);
  }
  if (m.properties) for (const k in m.properties) checkLength(k);
}
