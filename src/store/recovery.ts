/**
 * Recovery of the indexes after a crash, from the checkpoint and the log.
 *
 * 1. Index entries the checkpoint vouches for (fsynced before it was written) are kept; anything
 *    past them is cut.
 * 2. The log is re-read from the checkpoint position (or, if it is shorter than the checkpoint, from
 *    the start of its last segment) and every valid record is indexed again. The records of an
 *    append batch are indexed together once its last record is seen: a batch cut short by a crash
 *    was never acknowledged and is dropped whole.
 * 3. The first torn or corrupt frame ends the log: the tail is cut (and kept in quarantine unless it
 *    is a plain torn write).
 */
import { join } from 'node:path';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Checkpoint } from './checkpoint.js';
import type { KeyIndex } from './key-index.js';
import { QueueIndex } from './queue-index.js';
import type { SegmentLog } from './segment-log.js';
import { ensureDir, type StoreFs } from './store-fs.js';
import { queueKey, type RecoveryReport } from './store-types.js';
import {
  BATCH_CONTINUES,
  decodeMessageIndexFields,
  frameLength,
  keyHash,
  RecordType,
  tagHash,
  type MessageIndexFields,
} from './record-codec.js';

export interface RecoveryContext {
  log: SegmentLog;
  keys: KeyIndex;
  queues: Map<string, QueueIndex>;
  queueFor(topic: string, queueId: number): QueueIndex;
  /** Deleted topics: records below the position are dead (filled from the checkpoint). */
  deletedTopics: Map<string, number>;
  /** Newest store time per segment base (filled in). */
  segmentLastStore: Map<number, number>;
  logger: Logger;
  clock: Clock;
}

/** Load the queue indexes found under `root` (entries counted from file sizes). */
export async function loadQueues(
  sfs: StoreFs,
  root: string,
  entriesPerFile: number,
  recentEntries = 0,
  syncReadEntries = 0,
): Promise<QueueIndex[]> {
  await ensureDir(sfs, root);
  const out: QueueIndex[] = [];
  for (const topicDir of await sfs.readdir(root)) {
    const topic = decodeURIComponent(topicDir);
    if (!(await sfs.stat(join(root, topicDir))).isDirectory()) continue;
    for (const qdir of await sfs.readdir(join(root, topicDir))) {
      const queueId = Number(qdir);
      if (!Number.isInteger(queueId) || !(await sfs.stat(join(root, topicDir, qdir))).isDirectory()) continue;
      out.push(
        await QueueIndex.load(
          topic,
          queueId,
          join(root, topicDir, qdir),
          entriesPerFile,
          sfs,
          recentEntries,
          syncReadEntries,
        ),
      );
    }
  }
  return out;
}

function segmentBaseOf(log: SegmentLog, position: number): number {
  const ranges = log.segmentRanges();
  for (let i = ranges.length - 1; i >= 0; i--) if (ranges[i]!.base <= position) return ranges[i]!.base;
  return 0;
}

export async function recoverIndexes(
  ctx: RecoveryContext,
  ckpt: Checkpoint | null,
): Promise<{ report: RecoveryReport; lastStoreTimestamp: number }> {
  const { log, keys, queues, logger, clock } = ctx;
  let lastStoreTimestamp = 0;
  for (const [topic, position] of Object.entries(ckpt?.deleted ?? {})) ctx.deletedTopics.set(topic, position);
  // 1. Keep only index entries the checkpoint vouches for (they were fsynced before it was written).
  const counts = new Map<string, number>();
  for (const [topic, queueId, count] of ckpt?.queues ?? []) counts.set(queueKey(topic, queueId), count);
  for (const [key, q] of queues) await q.truncateTo(counts.get(key) ?? 0);
  await keys.truncateToCounts(ckpt?.keys ?? {});
  for (const [base, ts] of Object.entries(ckpt?.segments ?? {})) ctx.segmentLastStore.set(Number(base), ts);

  // 2. Decide where to re-read the log from. A log shorter than the checkpoint (its tail was cut
  //    outside our control) is re-read from the start of its last segment, a known record boundary.
  let from = Math.max(ckpt?.logPosition ?? 0, log.startPosition);
  if (log.endPosition < from) {
    const last = log.segmentRanges().at(-1);
    from = last ? last.base : log.startPosition;
    logger.warn(
      { checkpoint: ckpt?.logPosition, logEnd: log.endPosition },
      'log is shorter than its checkpoint',
    );
    for (const q of queues.values()) await q.truncateFromPosition(from);
    await keys.truncateFromPosition(from);
  }

  // 3. Re-index every valid record past that point. The records of a batch are indexed together
  //    once its last record is seen: a batch cut short by a crash was never acknowledged and goes.
  let recoveredRecords = 0;
  let batch: { position: number; size: number; f: MessageIndexFields }[] = [];
  const index = (position: number, size: number, f: MessageIndexFields): void => {
    const deletedAt = ctx.deletedTopics.get(f.topic);
    if (deletedAt !== undefined && position < deletedAt) return;
    const q = ctx.queueFor(f.topic, f.queueId);
    // An index lost with its checkpoint restarts at the offsets the records carry.
    if (q.isEmpty && f.queueOffset > q.nextOffset) q.resetEmptyTo(f.queueOffset);
    if (f.queueOffset !== q.nextOffset) {
      logger.warn(
        { topic: f.topic, queueId: f.queueId, recordOffset: f.queueOffset, indexOffset: q.nextOffset },
        'recovered record does not continue its queue index; indexing it at the next offset',
      );
    }
    q.add(position, f.storeTimestamp, size, tagHash(f.tag));
    const segBase = segmentBaseOf(log, position);
    keys.add(keyHash(f.messageId), position, segBase);
    for (const k of f.keys) keys.add(keyHash(k), position, segBase);
    ctx.segmentLastStore.set(segBase, f.storeTimestamp);
    lastStoreTimestamp = Math.max(lastStoreTimestamp, f.storeTimestamp);
    recoveredRecords++;
  };
  const scan = await log.scan(from, (buf, off, position, type) => {
    if (type !== RecordType.MESSAGE) return;
    const f = decodeMessageIndexFields(buf, off);
    batch.push({ position, size: frameLength(buf, off), f });
    if (f.flags & BATCH_CONTINUES) return;
    for (const r of batch) index(r.position, r.size, r.f);
    batch = [];
  });
  if (batch.length > 0) {
    // The log ends inside a batch (its end torn off, or never written): cut the whole batch.
    scan.validEnd = batch[0]!.position;
    scan.problem ??= { position: batch[0]!.position, reason: 'torn record' };
    logger.warn(
      { position: batch[0]!.position, records: batch.length },
      'dropping an append batch that a crash cut short (it was never acknowledged)',
    );
  }

  // 4. Cut a damaged tail (keeping its bytes in quarantine when it is not a plain torn write).
  let truncatedBytes = 0;
  let quarantined: string[] = [];
  if (scan.problem) {
    logger.error(
      { position: scan.problem.position, reason: scan.problem.reason, logEnd: log.endPosition },
      'damaged log tail: truncating to the last valid record',
    );
    ({ truncatedBytes, quarantined } = await log.truncate(
      scan.validEnd,
      scan.problem.reason !== 'torn record',
      clock.now(),
    ));
  }
  for (const q of queues.values()) q.commitBelow(Infinity);
  keys.commitBelow(Infinity);
  for (const [key, q] of [...queues]) {
    // Left over from a topic deleted just before a crash: nothing vouched for, nothing re-indexed.
    if (!counts.has(key) && q.isEmpty && q.nextOffset === 0) {
      queues.delete(key);
      await q.destroy();
      continue;
    }
    await q.applyLogStart(log.startPosition);
    lastStoreTimestamp = Math.max(lastStoreTimestamp, q.lastStoreTimestamp);
  }
  await keys.dropBelow(log.startPosition);
  // A segment whose newest store time is unknown counts as written now (by the store's clock, never
  // a file's wall-clock mtime): retention may keep it longer than needed, never delete it early.
  for (const s of log.segmentRanges())
    if (!ctx.segmentLastStore.has(s.base)) ctx.segmentLastStore.set(s.base, clock.now());
  return {
    report: {
      clean: ckpt?.clean === true && !scan.problem && scan.validEnd === from,
      scannedBytes: scan.validEnd - from,
      recoveredRecords,
      truncatedBytes,
      ...(scan.problem ? { problem: scan.problem } : {}),
      quarantined,
      durationMs: 0,
    },
    lastStoreTimestamp,
  };
}
