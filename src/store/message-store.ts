/**
 * The message store: the one durable home of messages, and the facade the broker talks to.
 *
 *   <dataDir>/LOCK                               pid of the process that owns the directory
 *   <dataDir>/commitlog/<20-digit base>.log      the log of all messages (segment-log.ts)
 *   <dataDir>/consumequeue/<topic>/<queue>/*.cq  queue indexes (queue-index.ts)
 *   <dataDir>/index/<segment base>.keys          message-id / key index (key-index.ts)
 *   <dataDir>/checkpoint.json                    recovery checkpoint (checkpoint.ts)
 *
 * An append assigns queue offsets and a store time synchronously (so storage order is call order),
 * encodes the records straight into the log's write buffer and resolves when the log says they are
 * durable under the flush policy. Only then do they become readable and are arrival listeners told.
 * A reader that asks for it (`appended`: the broker's receives) may read them from memory earlier,
 * and must then wait for `whenDurable` before anyone hears of them; `onRollback` tells it of
 * messages a failed write took back.
 *
 * Its size is coordination: the log (segment-log.ts), indexes (queue-index.ts, key-index.ts),
 * checkpoints (checkpoint.ts), recovery (recovery.ts), retention planning (retention.ts) and health
 * (store-health.ts) are their own modules; what stays here are the steps that must see all of them at
 * once (an append, a checkpoint's consistent cut, retention applying a plan to every index).
 */
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { isVelaError, VelaError } from '../common/errors.js';
import { SegmentLog } from './segment-log.js';
import { QueueIndex, type IndexEntry } from './queue-index.js';
import { QueueTable } from './queue-table.js';
import { KeyIndex } from './key-index.js';
import { readCheckpoint, writeCheckpoint, type Checkpoint } from './checkpoint.js';
import { planRetention } from './retention.js';
import { acquireDirLock, type DirLock } from './dir-lock.js';
import { SerialExecutor } from '../common/serial-executor.js';
import { ensureDir, errnoOf, fsyncDir, removeTree } from './store-fs.js';
import { isRetriable, readOnlyError } from './io-errors.js';
import { StoreHealth } from './store-health.js';
import { checkMessageInput } from './message-input.js';
import { loadQueues, recoverIndexes } from './recovery.js';
import { KeptKeyMap } from '../common/kept-key-map.js';
import {
  queueKey,
  resolveStoreOptions,
  type AppendResult,
  type ArrivalListener,
  type MessageStoreOptions,
  type QueueState,
  type ReadOptions,
  type ReadResult,
  type RecoveryReport,
  type RolledBackQueue,
  type RollbackListener,
  type ResolvedStoreOptions,
  type RetentionReport,
} from './store-types.js';
import {
  BATCH_CONTINUES,
  checkFrame,
  bodyCrcOf,
  DERIVE_BODY_CRC_FROM,
  decodeMessageFrame,
  encodeMessageFrame,
  FrameCheck,
  frameLength,
  keyHash,
  RecordType,
  tagHash,
  MAX_FRAME_SIZE,
  type MessageInput,
  type StoredMessage,
} from './record-codec.js';

const READ_COALESCE_GAP = 64 * 1024;
const READ_MAX_SPAN = 4 * 1024 * 1024;

/**
 * A read's answer, always the same object shape (one literal, never `{ ...base, more }`: where the
 * spread always sees one shape, V8's fast clone gives each copy a map of its own, and every reader's
 * property loads then miss their inline caches).
 */
function readResult(
  status: ReadResult['status'],
  messages: StoredMessage[],
  nextOffset: number,
  minOffset: number,
  maxOffset: number,
  corruptOffsets: number[],
): ReadResult {
  return { status, messages, nextOffset, minOffset, maxOffset, corruptOffsets };
}

/** One buffer the size of the records `wanted[i…j)`, for a read to copy them into. */
function bufferFor(wanted: readonly IndexEntry[], i: number, j: number): Buffer {
  let size = 0;
  for (let k = i; k < j; k++) size += wanted[k]!.size;
  return Buffer.allocUnsafe(size);
}

export class MessageStore {
  private readonly queues = new QueueTable();
  /** Queues with appended entries not yet durable (not a Set: kept-key-map.ts). */
  private readonly uncommitted = new KeptKeyMap<QueueIndex, true>();
  private readonly segmentLastStore = new Map<number, number>();
  private readonly listeners = new Set<ArrivalListener>();
  private readonly appendListeners = new Set<ArrivalListener>();
  private readonly rollbackListeners = new Set<RollbackListener>();
  /** What the rollback listeners do after the last rollback (awaited before appends resume). */
  private rollbackSettling: Promise<void> = Promise.resolve();
  private rollbackCount = 0;
  private readonly maintenance = new SerialExecutor();
  private readonly timers: NodeJS.Timeout[] = [];
  /** Deleted topics: their records below this log position are dead. */
  private readonly deletedTopics = new Map<string, number>();
  private lastStoreTimestamp = 0;
  private readonly health: StoreHealth;
  private indexTrouble = false;
  private closed = false;
  private closing: Promise<void> | null = null;
  private retentionRunning: Promise<RetentionReport> | null = null;
  private log!: SegmentLog;
  private keys!: KeyIndex;
  private lock!: DirLock;
  private recovery!: RecoveryReport;

  /** Newest log bytes taken to be in the page cache (read on the event loop). */
  private readonly inMemoryBytes: number;

  /** The same for each queue's index, in entries (messages of ~1 KiB). */
  private get inMemoryEntries(): number {
    return Math.floor(this.inMemoryBytes / 1024);
  }

  private constructor(private readonly o: Readonly<ResolvedStoreOptions>) {
    this.inMemoryBytes = Math.floor((totalmem() * o.accessMessageInMemoryMaxRatio) / 100);
    this.health = new StoreHealth(o);
  }

  /** Open the store in `options.dataDir`, recovering from a crash if there was one. */
  static async open(options: MessageStoreOptions): Promise<MessageStore> {
    const store = new MessageStore(resolveStoreOptions(options));
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
   * policy, with each message's queue offset and log position, in input order. A batch is stored all
   * or nothing: if any message is refused, none is stored; a crash in the middle of writing it leaves
   * none of it after recovery.
   */
  append(messages: readonly MessageInput[]): Promise<AppendResult[]> {
    const refused = this.writeRefusal();
    if (refused) return Promise.reject(refused);
    const n = messages.length;
    const bounds: number[] = new Array(n);
    try {
      for (let i = 0; i < n; i++) bounds[i] = checkMessageInput(messages[i]!);
      this.log.checkWritable();
    } catch (err) {
      return Promise.reject(err);
    }
    if (n === 0) return Promise.resolve([]);
    const now = Math.max(this.o.clock.now(), this.lastStoreTimestamp);
    const results: AppendResult[] = new Array(n);
    // Everything below can be taken back until the loop ends: nothing is handed to the flusher
    // before this turn is over.
    const logMark = this.log.mark();
    const keyMark = this.keys.mark();
    // The queues this batch touches, with where each stood (arrays: a batch touches a few queues).
    const touched: QueueIndex[] = [];
    const touchedAt: number[] = [];
    const touchedTs: number[] = [];
    let created: QueueIndex[] | null = null;
    try {
      let segmentBase = -1;
      for (let i = 0; i < n; i++) {
        const m = messages[i]!;
        let q = this.queues.at(m.topic, m.queueId);
        if (!q) (created ??= []).push((q = this.queueFor(m.topic, m.queueId)));
        if (!touched.includes(q)) {
          touched.push(q);
          touchedAt.push(q.nextOffset);
          touchedTs.push(q.lastStoreTimestamp);
        }
        const r = this.log.reserve(bounds[i]!);
        const len = encodeMessageFrame(r.buf, r.off, m, q.nextOffset, now, i < n - 1 ? BATCH_CONTINUES : 0);
        this.log.commit(len);
        const queueOffset = q.add(r.position, now, len, tagHash(m.tag));
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
    } catch (err) {
      this.log.rewind(logMark);
      this.keys.rewind(keyMark);
      for (let j = 0; j < touched.length; j++) touched[j]!.rewindTo(touchedAt[j]!, touchedTs[j]!);
      for (const q of created ?? []) this.queues.delete(queueKey(q.topic, q.queueId));
      return Promise.reject(err);
    }
    this.lastStoreTimestamp = now;
    for (const q of touched) this.uncommitted.set(q, true);
    const durable = this.log.whenDurable().then(() => results);
    if (this.appendListeners.size > 0) this.tell(this.appendListeners, touched, true);
    return durable;
  }

  /** Read messages of a queue from `offset`. */
  async read(topic: string, queueId: number, offset: number, opts: ReadOptions = {}): Promise<ReadResult> {
    if (this.closed) throw new VelaError('STORE_CLOSED');
    const q = this.queues.at(topic, queueId);
    const corruptOffsets: number[] = [];
    if (!q) return readResult('NO_SUCH_QUEUE', [], 0, 0, 0, corruptOffsets);
    const appended = opts.appended === true;
    const minOffset = q.minOffset;
    const maxOffset = appended ? q.nextOffset : q.committed;
    const at = (status: ReadResult['status'], next: number, messages: StoredMessage[] = []): ReadResult =>
      readResult(status, messages, next, minOffset, maxOffset, corruptOffsets);
    if (offset < minOffset) return at('OFFSET_TOO_SMALL', minOffset);
    if (offset === maxOffset) return at('NO_NEW_MESSAGE', offset);
    if (offset > maxOffset) return at('OFFSET_OVERFLOW', maxOffset);

    const maxCount = Math.max(1, opts.maxCount ?? 32);
    const maxBytes = opts.maxBytes ?? 1024 * 1024;
    const filter = opts.tagHashes ?? null;
    const scan = filter ? Math.max(maxCount, opts.maxScan ?? 4096) : maxCount;
    let entries;
    try {
      entries = await q.read(offset, scan, appended);
    } catch (err) {
      // Retention may have removed the file under us.
      if (offset < q.minOffset) return at('OFFSET_TOO_SMALL', q.minOffset);
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
    const messages: StoredMessage[] = [];
    let i = 0;
    while (i < wanted.length) {
      // Coalesce neighbouring records into one read.
      let j = i + 1;
      const start = wanted[i]!.logPosition;
      let end = start + wanted[i]!.size;
      // With `appended`, a run that starts durable stops where the durable bytes end: the files hold
      // nothing past it (those records come from memory, in a run of their own).
      const durableEnd = appended && start < this.log.durableEnd ? this.log.durableEnd : Infinity;
      while (j < wanted.length) {
        const e = wanted[j]!;
        if (e.logPosition < end || e.logPosition - end > READ_COALESCE_GAP) break;
        if (e.logPosition + e.size - start > READ_MAX_SPAN) break;
        if (e.logPosition >= durableEnd) break;
        end = e.logPosition + e.size;
        j++;
      }
      // Records still in memory are the ones this process encoded (and checksummed): no disk read
      // and no checksum to verify (and the checksum is right: the body's CRC can be derived from it).
      // Anything else comes from the files and is verified.
      const fromMemory = this.copyRecent(messages, corruptOffsets, wanted, i, j, topic, queueId, appended);
      if (fromMemory > i) {
        i = fromMemory;
        continue;
      }
      if (appended && wanted[i]!.logPosition >= this.log.durableEnd) {
        // Not durable and not in memory: a rollback took it back while the index was read.
        nextOffset = wanted[i]!.offset;
        break;
      }
      const verify = this.o.verifyChecksumOnRead;
      const checksummed = verify;
      if (this.log.cachesChunks) {
        // Through the chunk cache: the span read once for all queues, this queue's records copied
        // out of it into one buffer.
        try {
          await this.log.loadChunks(start, end);
          const own = bufferFor(wanted, i, j);
          let at = 0;
          let k = i;
          while (k < j) {
            const e = wanted[k]!;
            if (this.log.copyCached(e.logPosition, e.size, own, at)) {
              this.decodeInto(messages, corruptOffsets, own, at, e, verify, checksummed, topic, queueId);
              at += e.size;
              k++;
              continue;
            }
            // Not in a whole chunk (near the head): the records up to the next cached one in one read.
            let m = k + 1;
            while (m < j && !this.log.isCached(wanted[m]!.logPosition, wanted[m]!.size)) m++;
            const from = e.logPosition;
            const last = wanted[m - 1]!;
            const run = await this.log.read(from, last.logPosition + last.size - from);
            for (; k < m; k++) {
              const r = wanted[k]!;
              const off = r.logPosition - from;
              this.decodeInto(messages, corruptOffsets, run, off, r, verify, checksummed, topic, queueId);
            }
          }
        } catch (err) {
          if (start < this.log.startPosition) break; // deleted by retention meanwhile
          throw err;
        }
        i = j;
        continue;
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
        this.decodeInto(messages, corruptOffsets, buf, off, e, verify, checksummed, topic, queueId);
      }
      i = j;
    }
    return at('FOUND', nextOffset, messages);
  }

  /**
   * The records of `wanted[i…j)` that the log still holds in memory, from the first on, copied into
   * one buffer of their own and decoded into `messages`; returns the index of the first record not
   * served (`i` when the first is not in memory: nothing allocated). Only the wanted records are
   * copied: a span of one queue's records also holds every other queue's records in between.
   */
  private copyRecent(
    messages: StoredMessage[],
    corruptOffsets: number[],
    wanted: readonly IndexEntry[],
    i: number,
    j: number,
    topic: string,
    queueId: number,
    appended: boolean,
  ): number {
    if (!this.log.holdsRecent(wanted[i]!.logPosition, appended)) return i;
    const own = bufferFor(wanted, i, j);
    let at = 0;
    let k = i;
    while (k < j) {
      // Records next to each other in the log (one queue written alone) are copied in one go.
      const from = wanted[k]!.logPosition;
      let end = from + wanted[k]!.size;
      let m = k + 1;
      while (m < j && wanted[m]!.logPosition === end) end += wanted[m++]!.size;
      if (!this.log.copyRecent(from, end - from, own, at, appended)) break;
      for (; k < m; k++) {
        const e = wanted[k]!;
        this.decodeInto(messages, corruptOffsets, own, at, e, false, true, topic, queueId);
        at += e.size;
      }
    }
    return k;
  }

  /** Decode the record of index entry `e` at `buf[off]` into `messages`, or note it as corrupt. */
  private decodeInto(
    messages: StoredMessage[],
    corruptOffsets: number[],
    buf: Buffer,
    off: number,
    e: IndexEntry,
    verify: boolean,
    /** The record's checksum is known to be right (verified now, or written by this process). */
    checksummed: boolean,
    topic: string,
    queueId: number,
  ): void {
    if (!frameOk(buf, off, e.size, verify)) {
      corruptOffsets.push(e.offset);
      this.o.logger.error(
        { topic, queueId, offset: e.offset, logPosition: e.logPosition },
        'corrupt record skipped',
      );
      return;
    }
    const m = decodeMessageFrame(buf, off, e.logPosition, topic);
    m.queueOffset = e.offset;
    // A right checksum gives the body's CRC (the digest a delivery carries), where that is cheaper
    // than a pass over the body (bench/body-crc.ts).
    if (checksummed && m.body.length >= DERIVE_BODY_CRC_FROM)
      m.bodyCrc = bodyCrcOf(buf, off, e.size, m.body.length);
    messages.push(m);
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

  /** The queue's next offset to be written (its committed end): `queueState(…).maxOffset` without the object. */
  maxOffset(topic: string, queueId: number): number {
    return this.queues.at(topic, queueId)?.committed ?? 0;
  }

  /** The queue's next offset to be assigned (its appended end; see `ReadOptions.appended`). */
  appendedOffset(topic: string, queueId: number): number {
    return this.queues.at(topic, queueId)?.nextOffset ?? 0;
  }

  /** Rollbacks so far: a read with `appended` made before the last one may hold messages taken back. */
  get rollbacks(): number {
    return this.rollbackCount;
  }

  /**
   * Resolves once the record at `logPosition` (a message read with `appended`) is durable; rejects if
   * a rollback came after `rollbacks` (the count when it was read), for it may have been taken back.
   */
  whenDurable(logPosition: number, rollbacks: number): Promise<void> {
    if (this.isDurable(logPosition)) return Promise.resolve();
    if (rollbacks !== this.rollbackCount)
      return Promise.reject(new VelaError('STORE_IO_ERROR', 'a write was rolled back'));
    // Flushes end at record boundaries: durable past the record's first byte is durable to its end.
    return this.log.whenDurable(logPosition + 1);
  }

  /** Whether the record at `logPosition` is durable (whatever a rollback does next, it stays). */
  isDurable(logPosition: number): boolean {
    return logPosition < this.log.durableEnd;
  }

  /** The queue's lowest offset still held: `queueState(…).minOffset` without the object. */
  minOffset(topic: string, queueId: number): number {
    return this.queues.at(topic, queueId)?.minOffset ?? 0;
  }

  queueState(topic: string, queueId: number): QueueState {
    const q = this.queues.at(topic, queueId);
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

  /**
   * Forget a deleted topic: its queue indexes (files, descriptors, memory) go now; its records stay in
   * the log until retention removes their segments, but are never served or indexed again (a topic
   * created later under the same name starts at offset 0). Returns how many queues were dropped.
   * Call it for the topic's retry and DLQ topics too if they go with it.
   */
  deleteTopic(topic: string): Promise<number> {
    if (this.closed) return Promise.reject(new VelaError('STORE_CLOSED'));
    // Nothing to delete (the usual case when a topic is created): no wait behind maintenance.
    if (![...this.queues.values()].some((q) => q.topic === topic)) return Promise.resolve(0);
    return this.maintenance.run(async () => {
      const victims = [...this.queues.values()].filter((q) => q.topic === topic);
      if (victims.length === 0) return 0;
      // Appends to it already under way finish first; anything after this point is a new topic.
      await this.log.whenDurable().catch(() => {});
      const before = this.deletedTopics.get(topic);
      for (const q of victims) {
        this.queues.delete(queueKey(q.topic, q.queueId));
        this.uncommitted.delete(q);
      }
      this.deletedTopics.set(topic, this.log.endPosition);
      try {
        // The checkpoint makes the deletion durable: recovery never re-reads the topic's records.
        await this.writeCheckpointNow(false, true);
      } catch (err) {
        for (const q of victims) this.queues.set(queueKey(q.topic, q.queueId), q);
        if (before === undefined) this.deletedTopics.delete(topic);
        else this.deletedTopics.set(topic, before);
        throw err;
      }
      for (const q of victims) await q.destroy();
      const root = join(this.o.dataDir, 'consumequeue');
      await removeTree(this.o.fs, join(root, encodeURIComponent(topic)));
      await fsyncDir(this.o.fs, root).catch((err) =>
        this.goReadOnly(err, 'fsync of the index directory failed'),
      );
      this.o.logger.info({ topic, queues: victims.length }, 'topic deleted from the store');
      return victims.length;
    });
  }

  /** Be told (synchronously, once per durable batch and queue) when new messages become readable. */
  onArrival(listener: ArrivalListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Be told (synchronously, once per append and queue, with the appended end) when new messages can be
   * read with `ReadOptions.appended`.
   */
  onAppend(listener: ArrivalListener): () => void {
    this.appendListeners.add(listener);
    return () => this.appendListeners.delete(listener);
  }

  /** Be told when appended messages are taken back (see `RollbackListener`). */
  onRollback(listener: RollbackListener): () => void {
    this.rollbackListeners.add(listener);
    return () => this.rollbackListeners.delete(listener);
  }

  /** Storage figures for metrics and the admin API. */
  stats(): {
    logStart: number;
    logEnd: number;
    segments: number;
    queues: number;
    diskUsedRatio: number;
    refusingWrites: boolean;
    readOnly: boolean;
    openFiles: number;
  } {
    let openFiles = this.log.openDescriptors + this.keys.openDescriptors;
    for (const q of this.queues.values()) openFiles += q.openDescriptors;
    return {
      logStart: this.log.startPosition,
      logEnd: this.log.durableEnd,
      segments: this.log.segmentRanges().length,
      queues: this.queues.size,
      diskUsedRatio: this.health.diskRatio,
      refusingWrites: this.writeRefusal() !== null,
      readOnly: this.health.readOnly !== null,
      openFiles,
    };
  }

  /** Measure disk use now and update the write refusal (also done every `diskCheckIntervalMs`). */
  checkDisk(): Promise<number> {
    return this.health.checkDisk();
  }

  /** Delete what retention allows now (also runs every `retentionCheckIntervalMs`). */
  runRetention(): Promise<RetentionReport> {
    if (this.retentionRunning) return this.retentionRunning;
    this.retentionRunning = this.maintenance
      .run(() => this.retain())
      .finally(() => (this.retentionRunning = null));
    return this.retentionRunning;
  }

  /** Write index entries out and record a recovery checkpoint (also runs every `checkpointIntervalMs`). */
  async checkpoint(): Promise<void> {
    await this.maintenance.run(() => this.writeCheckpointNow(false, true));
  }

  /** Flush everything, write a clean checkpoint, release the directory. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) this.closing = this.shutdown();
    return this.closing;
  }

  // ------------------------------------------------------------------------------------------------

  /** Why an append would be refused right now, or null. */
  private writeRefusal(): VelaError | null {
    return this.closed ? new VelaError('STORE_CLOSED') : this.health.refusal();
  }

  private async start(): Promise<void> {
    const o = this.o;
    const t0 = performance.now();
    await ensureDir(o.fs, o.dataDir);
    this.lock = await acquireDirLock(o.dataDir, o.fs);
    try {
      // Left by an earlier version that moved a deleted topic's queue indexes here before removing them.
      await removeTree(o.fs, join(o.dataDir, 'consumequeue-deleted'));
      const ckpt = await readCheckpoint(o.dataDir, o.fs);
      this.log = await SegmentLog.open({
        dir: join(o.dataDir, 'commitlog'),
        segmentSize: o.segmentSize,
        flush: o.flush,
        flushIntervalMs: o.flushIntervalMs,
        logger: o.logger,
        fs: o.fs,
        maxOpenSegments: o.maxOpenSegments,
        readCacheBytes: o.logReadCacheBytes,
        chunkCacheBytes: o.logChunkCacheBytes,
        inlineWriteBytes: o.inlineWriteBytes,
        syncReadBytes: this.inMemoryBytes,
        onDurable: (end) => this.onDurable(end),
        onRollback: () => this.takeBackUnflushed(),
        afterRollback: () => this.rollbackSettling,
        onFatal: (err) => this.goReadOnly(err, 'the message log failed'),
        onTransient: (err) => this.onTransient(err),
        releaseDescriptors: () => this.releaseIndexDescriptors(),
      });
      this.keys = await KeyIndex.load(join(o.dataDir, 'index'), o.fs);
      await this.loadQueues();
      this.recovery = await this.recover(ckpt);
      this.recovery.durationMs = Math.round(performance.now() - t0);
      const level = this.recovery.problem ? 'warn' : 'info';
      o.logger[level](
        { recovery: this.recovery },
        this.recovery.problem ? 'store recovered a damaged log' : 'store opened',
      );
      await this.checkDisk();
      await this.writeCheckpointNow(false, false);
    } catch (err) {
      await this.log?.close().catch(() => {});
      await this.lock.release();
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
    let failing = false;
    const t = setInterval(() => {
      if (this.closed || this.health.readOnly) return;
      fn().then(
        () => (failing = false),
        (err) => {
          // Once per run of failures, not once a tick.
          if (!failing) this.o.logger.error({ err }, 'store maintenance task failed');
          failing = true;
        },
      );
    }, ms);
    t.unref();
    this.timers.push(t);
  }

  private async loadQueues(): Promise<void> {
    const loaded = await loadQueues(
      this.o.fs,
      join(this.o.dataDir, 'consumequeue'),
      this.o.indexEntriesPerFile,
      this.o.indexReadCacheEntries,
      this.inMemoryEntries,
    );
    for (const q of loaded) this.queues.set(queueKey(q.topic, q.queueId), q);
  }

  private async recover(ckpt: Checkpoint | null): Promise<RecoveryReport> {
    const { report, lastStoreTimestamp } = await recoverIndexes(
      {
        log: this.log,
        keys: this.keys,
        queues: this.queues,
        queueFor: (topic, queueId) => this.queueFor(topic, queueId),
        deletedTopics: this.deletedTopics,
        segmentLastStore: this.segmentLastStore,
        logger: this.o.logger,
        clock: this.o.clock,
      },
      ckpt,
    );
    this.lastStoreTimestamp = Math.max(this.lastStoreTimestamp, lastStoreTimestamp);
    this.pruneDeletedTopics();
    return report;
  }

  private pruneDeletedTopics(): void {
    const start = this.log.startPosition;
    for (const [topic, position] of this.deletedTopics)
      if (position <= start) this.deletedTopics.delete(topic);
  }

  private queueFor(topic: string, queueId: number): QueueIndex {
    const key = queueKey(topic, queueId);
    let q = this.queues.get(key);
    if (!q) {
      const dir = join(this.o.dataDir, 'consumequeue', encodeURIComponent(topic), String(queueId));
      q = QueueIndex.create(
        topic,
        queueId,
        dir,
        this.o.indexEntriesPerFile,
        this.o.fs,
        this.o.indexReadCacheEntries,
        this.inMemoryEntries,
      );
      this.queues.set(key, q);
    }
    return q;
  }

  private onDurable(end: number): void {
    const arrived: QueueIndex[] = [];
    for (const q of this.uncommitted.keys()) {
      const before = q.committed;
      if (q.commitBelow(end)) this.uncommitted.delete(q);
      if (q.committed > before) arrived.push(q);
    }
    this.keys.commitBelow(end);
    if (this.listeners.size > 0) this.tell(this.listeners, arrived, false);
  }

  /** Tell listeners of queues' new ends: durable ones (arrival) or appended ones. */
  private tell(
    listeners: ReadonlySet<ArrivalListener>,
    queues: readonly QueueIndex[],
    appended: boolean,
  ): void {
    for (const q of queues) {
      for (const l of listeners) {
        try {
          l(q.topic, q.queueId, appended ? q.nextOffset : q.committed);
        } catch (err) {
          this.o.logger.error({ err }, 'arrival listener threw');
        }
      }
    }
  }

  /** The log rolled back everything past its durable end: so do the indexes. */
  private takeBackUnflushed(): void {
    const taken: RolledBackQueue[] = [];
    for (const q of this.uncommitted.keys()) {
      if (q.nextOffset > q.committed) taken.push({ topic: q.topic, queueId: q.queueId, end: q.committed });
      q.rollback();
    }
    this.uncommitted.clear();
    this.keys.rollback();
    this.rollbackCount++;
    const settling: Promise<void>[] = [];
    for (const l of this.rollbackListeners) {
      try {
        const done = l(taken);
        if (done) settling.push(done);
      } catch (err) {
        settling.push(Promise.reject(err));
      }
    }
    this.rollbackSettling = Promise.all(settling).then(() => {});
    // Awaited (and reported) by the log before appends resume; after a fatal failure nobody awaits it.
    this.rollbackSettling.catch((err) => this.o.logger.error({ err }, 'rollback listener failed'));
  }

  /** A write ran out of space or descriptors (the log rolled itself back). */
  private onTransient(err: Error): void {
    const code = errnoOf(err);
    if (code === 'ENOSPC' || code === 'EDQUOT') this.noteSpaceExhausted();
  }

  private noteSpaceExhausted(): void {
    if (!this.health.noteSpaceExhausted()) return;
    void this.checkDisk()
      .then((ratio) => (ratio >= this.o.diskCleanupRatio ? this.runRetention() : undefined))
      .catch((err) => this.o.logger.error({ err }, 'disk check failed'));
  }

  /** A fatal I/O failure: read-only until restart; what the log still holds in memory fails. */
  private goReadOnly(err: unknown, what: string): void {
    const cause = this.health.goReadOnly(err, what);
    if (cause) this.log.failWrites(cause);
  }

  /** Classify a failure of index or checkpoint I/O: transient ones are retried, the rest are fatal. */
  private onIndexError(err: unknown, where: string): void {
    if (isRetriable(err)) {
      if (!this.indexTrouble) this.o.logger.warn({ err, where }, 'index write failed; will retry');
      this.indexTrouble = true;
      const code = errnoOf(err);
      if (code === 'ENOSPC' || code === 'EDQUOT') this.noteSpaceExhausted();
      else void this.releaseIndexDescriptors().catch(() => {});
      return;
    }
    this.goReadOnly(err, `index I/O failed (${where})`);
  }

  private async releaseIndexDescriptors(): Promise<number> {
    let n = await this.keys.releaseIdle();
    for (const q of this.queues.values()) n += await q.releaseIdle();
    return n;
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
        const deletedAt = this.deletedTopics.get(m.topic);
        if (deletedAt !== undefined && pos < deletedAt) continue;
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

  /** Write committed index entries out, queue by queue: one failing queue does not hold up the others. */
  private async persistIndexes(): Promise<boolean> {
    let ok = true;
    for (const q of [...this.queues.values()]) {
      if (q.pendingBytes === 0) continue;
      try {
        await q.persist();
      } catch (err) {
        ok = false;
        this.onIndexError(err, `${q.topic}/${q.queueId}`);
      }
    }
    try {
      await this.keys.persist();
    } catch (err) {
      ok = false;
      this.onIndexError(err, 'key index');
    }
    if (ok && this.indexTrouble) {
      this.indexTrouble = false;
      this.o.logger.warn('index writes succeed again');
    }
    return ok;
  }

  /**
   * Persist and fsync the indexes and the log, then record a checkpoint vouching for them. Skipped
   * (returns false) while an index cannot be written; a failed fsync makes the store read-only.
   */
  private async writeCheckpointNow(clean: boolean, quiet: boolean): Promise<boolean> {
    if (this.health.readOnly) throw readOnlyError(this.health.readOnly);
    // Capture the position and the matching index counts in one synchronous step.
    const logPosition = this.log.durableEnd;
    const queues: [string, number, number][] = [];
    for (const q of this.queues.values()) queues.push([q.topic, q.queueId, q.committed]);
    const keys = this.keys.durableCounts();
    const deleted = Object.fromEntries(this.deletedTopics);
    if (!(await this.persistIndexes())) {
      if (!quiet) throw new VelaError('STORE_IO_ERROR', 'index files could not be written');
      return false;
    }
    try {
      await this.log.sync();
      for (const q of [...this.queues.values()]) if (q.needsSync) await q.sync();
      await this.keys.sync();
    } catch (err) {
      if (!isVelaError(err) && !isRetriable(err)) this.goReadOnly(err, 'fsync of an index failed');
      throw err;
    }
    const segments: Record<string, number> = {};
    for (const s of this.log.segmentRanges()) {
      const ts = this.segmentLastStore.get(s.base);
      if (ts !== undefined) segments[s.base] = ts;
    }
    try {
      await writeCheckpoint(
        this.o.dataDir,
        {
          version: 1,
          logPosition,
          clean,
          queues,
          keys,
          segments,
          ...(this.deletedTopics.size > 0 ? { deleted } : {}),
          writtenAt: this.o.clock.now(),
        },
        this.o.fs,
      );
    } catch (err) {
      if (!isRetriable(err)) this.goReadOnly(err, 'writing the checkpoint failed');
      throw err;
    }
    if (this.queues.size > 0) await this.trimIndexDescriptors();
    return true;
  }

  /** Keep open index descriptors under `maxOpenIndexFiles` (idle ones are closed after a checkpoint). */
  private async trimIndexDescriptors(): Promise<void> {
    let open = this.keys.openDescriptors;
    for (const q of this.queues.values()) open += q.openDescriptors;
    if (open > this.o.maxOpenIndexFiles) await this.releaseIndexDescriptors();
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
    this.pruneDeletedTopics();
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
      if (!this.health.readOnly) {
        try {
          await this.writeCheckpointNow(true, false);
        } catch (err) {
          this.o.logger.error(
            { err },
            'could not write the closing checkpoint; the next start recovers from the last one',
          );
        }
      }
      for (const q of this.queues.values()) await q.abandon();
      await this.keys.abandon();
      await this.log.close().catch((err) => this.o.logger.error({ err }, 'closing the log failed'));
    });
    await this.lock.release();
    this.o.logger.info('store closed');
  }
}

/** Whether the frame the index points at is whole (and, with `verify`, passes its checksum). */
function frameOk(buf: Buffer, off: number, size: number, verify: boolean): boolean {
  if (off + size > buf.length || frameLength(buf, off) !== size) return false;
  return !verify || checkFrame(buf, off, off + size) === FrameCheck.OK;
}
