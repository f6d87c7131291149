/**
 * The durable journal for broker state (topics, groups, consumer offsets, in-flight deadlines, acks,
 * retry schedules): the same crash guarantees as messages, because it is the same log machinery.
 *
 * State changes are appended as opaque records (the broker owns their encoding) to a segment log in
 * `<dir>/journal/`, group-committed under the same flush policy. From time to time the owner hands
 * over a snapshot of its state together with the journal position it covers; it is written
 * atomically, and journal segments wholly before that position are deleted. Opening replays the
 * snapshot and then every record from its position, so start-up reads the snapshot plus a short
 * journal.
 *
 * A snapshot is a stream of chunks, written one at a time as the owner produces them (never one
 * string or buffer of the whole state), each with its own checksum:
 *
 *   header:  u32 magic "VSN2" | f64 position | u32 reserved
 *   chunk:   u32 length | u32 CRC-32 | payload            (repeated)
 *   trailer: u32 0xFFFFFFFF | u32 chunk count | u32 CRC-32 of the count
 *
 * Snapshots written by earlier versions (one checksummed blob, magic "VSNP") are still read.
 */
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { FlushPolicy } from '../common/config.js';
import { systemClock, type Clock } from '../common/clock.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { SegmentLog } from './segment-log.js';
import { FRAME_HEADER_SIZE, RecordType, sealFrame } from './record-codec.js';
import { acquireDirLock, type DirLock } from './dir-lock.js';
import { SerialExecutor } from '../common/serial-executor.js';
import {
  ensureDir,
  errnoOf,
  fsyncDir,
  nodeStoreFs,
  O,
  readFully,
  writeAll,
  type StoreFs,
} from './store-fs.js';

export interface StateLogOptions {
  dir: string;
  /** @defaultValue 'sync' */
  flush?: FlushPolicy;
  /** @defaultValue 500 */
  flushIntervalMs?: number;
  /** @defaultValue 67108864 (64 MiB) */
  segmentSize?: number;
  /** Flushes up to this size are written on the calling thread (`SegmentLogOptions`). @defaultValue 0 */
  inlineWriteBytes?: number;
  logger?: Logger;
  /** @defaultValue Node's file system */
  fs?: StoreFs;
  /** Names quarantined files. @defaultValue the system clock */
  clock?: Clock;
}

export interface StateReplay {
  /**
   * Called first, once per snapshot chunk in the order they were written, if there is a snapshot.
   * `version` 1: a snapshot from an earlier version, one chunk holding everything. The buffer is only
   * valid during the call.
   */
  onSnapshot(chunk: Buffer, version: 1 | 2): void;
  /** Called after the last snapshot chunk (also when there is no snapshot). */
  onSnapshotDone?(): void;
  /** Called for every record after the snapshot, in append order. The buffer is only valid during the call. */
  onRecord(record: Buffer): void;
}

/** What `compact` accepts: the snapshot as one buffer or as chunks produced on demand. */
export type SnapshotSource = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

const SNAPSHOT_V1 = 0x56534e50; // "VSNP"
const SNAPSHOT_V2 = 0x56534e32; // "VSN2"
const HEADER = 16;
const TRAILER = 0xffffffff;
const READ_CHUNK = 1 << 20;

export class StateLog {
  private closed = false;
  private snapshotPosition = 0;
  private readonly serial = new SerialExecutor();

  private constructor(
    private readonly dir: string,
    private readonly log: SegmentLog,
    private readonly lock: DirLock,
    private readonly fs: StoreFs,
  ) {}

  static async open(options: StateLogOptions, replay: StateReplay): Promise<StateLog> {
    const logger = options.logger ?? silentLogger();
    const sfs = options.fs ?? nodeStoreFs;
    const clock = options.clock ?? systemClock;
    await ensureDir(sfs, options.dir);
    const lock = await acquireDirLock(options.dir, sfs);
    let log: SegmentLog | undefined;
    try {
      log = await SegmentLog.open({
        dir: join(options.dir, 'journal'),
        segmentSize: options.segmentSize ?? 64 * 1024 * 1024,
        flush: options.flush ?? 'sync',
        flushIntervalMs: options.flushIntervalMs ?? 500,
        inlineWriteBytes: options.inlineWriteBytes ?? 0,
        logger,
        fs: sfs,
      });
      const state = new StateLog(options.dir, log, lock, sfs);
      state.snapshotPosition = await readSnapshot(sfs, join(options.dir, 'snapshot'), replay);
      replay.onSnapshotDone?.();
      const scan = await log.scan(state.snapshotPosition, (buf, off, _pos, type) => {
        if (type !== RecordType.STATE) return;
        replay.onRecord(buf.subarray(off + FRAME_HEADER_SIZE, off + buf.readUInt32LE(off)));
      });
      if (scan.problem) {
        logger.error(
          { dir: options.dir, ...scan.problem },
          'damaged state journal tail: truncating to the last valid record',
        );
        await log.truncate(scan.validEnd, scan.problem.reason !== 'torn record', clock.now());
      }
      return state;
    } catch (err) {
      await log?.close().catch(() => {});
      await lock.release();
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
    const mark = this.log.mark();
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
      // All or nothing: a record that cannot be reserved takes the ones before it back.
      this.log.rewind(mark);
      return Promise.reject(err);
    }
  }

  /** The position the next appended record gets. */
  get endPosition(): number {
    return this.log.endPosition;
  }

  /** Journal bytes a replay would read after the snapshot: compact when this grows large. */
  get bytesSinceSnapshot(): number {
    return this.log.endPosition - this.snapshotPosition;
  }

  /** The fatal failure that made the journal read-only, if any. */
  get failure(): Error | null {
    return this.log.failure;
  }

  /**
   * Replace the journal before `position` with a snapshot. The snapshot must reflect the effect of
   * every record appended before `position` (by default: every record appended before this call);
   * records from `position` on stay in the journal and are replayed over it, so their effect may or
   * may not be in the snapshot (applying a record must be idempotent). Chunks are pulled from
   * `snapshot` one at a time as they are written.
   */
  compact(snapshot: SnapshotSource, position = this.log.endPosition): Promise<void> {
    if (this.closed) return Promise.reject(new VelaError('STORE_CLOSED'));
    if (position > this.log.endPosition || position < 0) {
      return Promise.reject(
        new VelaError('STORE_BAD_ARGUMENT', `snapshot position ${position} is past the journal`),
      );
    }
    return this.serial.run(async () => {
      // The records the snapshot covers must be durable before the snapshot claims them.
      await this.log.whenDurable(position);
      await this.writeSnapshot(snapshot, position);
      this.snapshotPosition = Math.max(this.snapshotPosition, position);
      await this.log.deleteSegmentsBefore(this.snapshotPosition);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.serial.run(() => this.log.close());
    } finally {
      await this.lock.release();
    }
  }

  private async writeSnapshot(source: SnapshotSource, position: number): Promise<void> {
    const sfs = this.fs;
    const path = join(this.dir, 'snapshot');
    const tmp = join(this.dir, '.snapshot.tmp');
    await sfs.unlink(tmp).catch((err: unknown) => {
      if (errnoOf(err) !== 'ENOENT') throw err;
    });
    const fd = await sfs.open(tmp, O.O_WRONLY | O.O_CREAT | O.O_EXCL);
    try {
      const header = Buffer.alloc(HEADER);
      header.writeUInt32LE(SNAPSHOT_V2, 0);
      header.writeDoubleLE(position, 4);
      let at = 0;
      await writeAll(sfs, fd, [header], at);
      at += HEADER;
      let count = 0;
      const chunks = source instanceof Uint8Array ? [source] : source;
      for await (const chunk of chunks) {
        const head = Buffer.allocUnsafe(8);
        const body = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        head.writeUInt32LE(body.length, 0);
        head.writeUInt32LE(crc32(body), 4);
        await writeAll(sfs, fd, [head, body], at);
        at += 8 + body.length;
        count++;
      }
      const trailer = Buffer.allocUnsafe(12);
      trailer.writeUInt32LE(TRAILER, 0);
      trailer.writeUInt32LE(count, 4);
      trailer.writeUInt32LE(crc32(trailer.subarray(4, 8)), 8);
      await writeAll(sfs, fd, [trailer], at);
      await sfs.fdatasync(fd);
    } catch (err) {
      await sfs.close(fd).catch(() => {});
      await sfs.unlink(tmp).catch(() => {});
      throw err;
    }
    await sfs.close(fd);
    await sfs.rename(tmp, path);
    await fsyncDir(sfs, this.dir);
  }
}

/** Replay a snapshot file chunk by chunk; returns the journal position it covers (0 without one). */
async function readSnapshot(sfs: StoreFs, path: string, replay: StateReplay): Promise<number> {
  let fd: number;
  try {
    fd = await sfs.open(path, O.O_RDONLY);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return 0;
    throw err;
  }
  // Written atomically, so any damage is damage after the fact: refuse rather than silently lose state.
  const damaged = (why: string) =>
    new VelaError('STORE_CORRUPT_RECORD', `state snapshot ${path} is damaged (${why})`);
  try {
    const size = (await sfs.stat(path)).size;
    const header = Buffer.alloc(HEADER);
    if ((await readFully(sfs, fd, header, HEADER, 0)) < HEADER) throw damaged('short header');
    const magic = header.readUInt32LE(0);
    const position = header.readDoubleLE(4);
    if (magic === SNAPSHOT_V1) {
      const data = Buffer.allocUnsafe(size - HEADER);
      await readFully(sfs, fd, data, data.length, HEADER);
      if (crc32(data) !== header.readUInt32LE(12)) throw damaged('checksum');
      replay.onSnapshot(data, 1);
      return position;
    }
    if (magic !== SNAPSHOT_V2) throw damaged('unknown format');
    let at = HEADER;
    let count = 0;
    const head = Buffer.allocUnsafe(12);
    let buf = Buffer.allocUnsafe(READ_CHUNK);
    for (;;) {
      if ((await readFully(sfs, fd, head, 8, at)) < 8) throw damaged('ends without its trailer');
      const len = head.readUInt32LE(0);
      if (len === TRAILER) {
        if ((await readFully(sfs, fd, head, 12, at)) < 12) throw damaged('short trailer');
        if (head.readUInt32LE(4) !== count || crc32(head.subarray(4, 8)) !== head.readUInt32LE(8))
          throw damaged('chunk count');
        return position;
      }
      if (at + 8 + len > size) throw damaged('chunk past the end');
      if (len > buf.length) buf = Buffer.allocUnsafe(len);
      const body = buf.subarray(0, len);
      await readFully(sfs, fd, body, len, at + 8);
      if (crc32(body) !== head.readUInt32LE(4)) throw damaged(`checksum of chunk ${count}`);
      replay.onSnapshot(body, 2);
      count++;
      at += 8 + len;
    }
  } finally {
    await sfs.close(fd);
  }
}
