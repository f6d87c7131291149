/**
 * The durable journal for broker state (topics, groups, consumer offsets, in-flight deadlines, acks,
 * retry schedules): the same crash guarantees as messages, because it is the same log machinery.
 *
 * State changes are appended as opaque records (the broker owns their encoding) to a segment log in
 * `<dir>/journal/`, group-committed under the same flush policy. From time to time the owner hands
 * over a snapshot of its whole state; it is written atomically together with the journal position it
 * covers, and journal segments wholly before that position are deleted. Opening replays the snapshot
 * and then every record after its position, so start-up reads the snapshot plus a short journal.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { FlushPolicy } from '../common/config.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { readFileIfExists, writeFileAtomic } from './atomic-file.js';
import { SegmentLog } from './segment-log.js';
import { FRAME_HEADER_SIZE, RecordType, sealFrame } from './record-codec.js';
import { acquireDirLock, releaseDirLock } from './dir-lock.js';
import { SerialExecutor } from '../common/serial-executor.js';

export interface StateLogOptions {
  dir: string;
  /** @defaultValue 'sync' */
  flush?: FlushPolicy;
  /** @defaultValue 500 */
  flushIntervalMs?: number;
  /** @defaultValue 67108864 (64 MiB) */
  segmentSize?: number;
  logger?: Logger;
}

export interface StateReplay {
  /** Called first, with the last snapshot, if there is one. */
  onSnapshot(data: Buffer): void;
  /** Called for every record after the snapshot, in append order. The buffer is only valid during the call. */
  onRecord(record: Buffer): void;
}

const SNAPSHOT_MAGIC = 0x56534e50; // "VSNP"
const SNAPSHOT_HEADER = 16; // magic u32 | position f64 | crc u32

export class StateLog {
  private closed = false;
  private snapshotPosition = 0;
  private readonly serial = new SerialExecutor();

  private constructor(
    private readonly dir: string,
    private readonly log: SegmentLog,
  ) {}

  static async open(options: StateLogOptions, replay: StateReplay): Promise<StateLog> {
    const logger = options.logger ?? silentLogger();
    await mkdir(options.dir, { recursive: true });
    await acquireDirLock(options.dir);
    try {
      const log = await SegmentLog.open({
        dir: join(options.dir, 'journal'),
        segmentSize: options.segmentSize ?? 64 * 1024 * 1024,
        flush: options.flush ?? 'sync',
        flushIntervalMs: options.flushIntervalMs ?? 500,
        logger,
      });
      const state = new StateLog(options.dir, log);
      const snap = await readFileIfExists(join(options.dir, 'snapshot'));
      if (snap) {
        if (
          snap.length < SNAPSHOT_HEADER ||
          snap.readUInt32LE(0) !== SNAPSHOT_MAGIC ||
          crc32(snap.subarray(SNAPSHOT_HEADER)) !== snap.readUInt32LE(12)
        ) {
          // Written atomically, so this is damage after the fact: refuse rather than silently lose state.
          throw new VelaError('STORE_CORRUPT_RECORD', `state snapshot in ${options.dir} is damaged`);
        }
        state.snapshotPosition = snap.readDoubleLE(4);
        replay.onSnapshot(snap.subarray(SNAPSHOT_HEADER));
      }
      const scan = await log.scan(state.snapshotPosition, (buf, off, _pos, type) => {
        if (type !== RecordType.STATE) return;
        replay.onRecord(buf.subarray(off + FRAME_HEADER_SIZE, off + buf.readUInt32LE(off)));
      });
      if (scan.problem) {
        logger.error(
          { dir: options.dir, ...scan.problem },
          'damaged state journal tail: truncating to the last valid record',
        );
        await log.truncate(scan.validEnd, scan.problem.reason !== 'torn record');
      }
      return state;
    } catch (err) {
      await releaseDirLock(options.dir);
      throw err;
    }
  }

  /** Append one state record; resolves when it is durable under the flush policy. */
  append(record: Uint8Array): Promise<void> {
    return this.appendMany([record]);
  }

  /** Append several records at once (one write, one fsync). */
  appendMany(records: readonly Uint8Array[]): Promise<void> {
    if (this.closed) return Promise.reject(new VelaError('STORE_CLOSED'));
    try {
      for (const rec of records) {
        const len = FRAME_HEADER_SIZE + rec.length;
        const r = this.log.reserve(len);
        r.buf[r.off + 8] = RecordType.STATE;
        r.buf.set(rec, r.off + FRAME_HEADER_SIZE);
        sealFrame(r.buf, r.off, len);
        this.log.commit(len);
      }
      return this.log.whenDurable();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Journal bytes a replay would read after the snapshot: compact when this grows large. */
  get bytesSinceSnapshot(): number {
    return this.log.endPosition - this.snapshotPosition;
  }

  /**
   * Replace the journal so far with a snapshot. `snapshot` must reflect every record appended before
   * this call (take it synchronously, then call). Records appended afterwards stay in the journal.
   */
  compact(snapshot: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new VelaError('STORE_CLOSED'));
    const position = this.log.endPosition;
    const file = Buffer.allocUnsafe(SNAPSHOT_HEADER + snapshot.length);
    file.writeUInt32LE(SNAPSHOT_MAGIC, 0);
    file.writeDoubleLE(position, 4);
    file.set(snapshot, SNAPSHOT_HEADER);
    file.writeUInt32LE(crc32(file.subarray(SNAPSHOT_HEADER)), 12);
    return this.serial.run(async () => {
      // The records the snapshot covers must be durable before the snapshot claims them.
      await this.log.whenDurable(position);
      await writeFileAtomic(join(this.dir, 'snapshot'), file);
      this.snapshotPosition = Math.max(this.snapshotPosition, position);
      await this.log.deleteSegmentsBefore(this.snapshotPosition);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.serial.run(() => this.log.close());
    await releaseDirLock(this.dir);
  }
}
