/**
 * Reading a segment log back after a crash: walk its frames verifying length and CRC (`scanFrames`),
 * and copy a damaged tail aside before it is cut (`copyRange`), so recovery never destroys bytes a
 * person might still want to inspect.
 *
 * The active segment is sized ahead (segment-files.ts): after a crash its file is longer than its
 * records, and the rest reads as zeros. Where the next frame would start, a zero length (no frame is
 * ever shorter than its header) therefore ends the scan cleanly: `zeroTail`, not a problem. A frame
 * there that fails its checksum with nothing but zeros after it is the last write of the crash cut
 * short (a torn record, as when the file simply ended inside it); one followed by more bytes is damage.
 */
import {
  checkFrame,
  FRAME_HEADER_SIZE,
  FrameCheck,
  frameLength,
  frameType,
  MAX_FRAME_SIZE,
} from './record-codec.js';
import { O, readFully, writeAll, type StoreFs } from './store-fs.js';
import { segmentName, type SegmentFiles } from './segment-files.js';

export interface ScanResult {
  /** End of the last valid frame. */
  validEnd: number;
  /** Why the scan stopped before the physical end, if it did. */
  problem?: { position: number; reason: string };
  /**
   * The scan stopped at zeros where a frame would start in the last segment: the unwritten rest of a
   * segment sized ahead, not damage. Everything from `validEnd` on was never written.
   */
  zeroTail?: boolean;
}

/** Bytes read at a time while scanning or copying. */
export const SCAN_CHUNK = 8 << 20;

/**
 * Walk valid frames from `from` to the end of the files, calling `onFrame` for each. Stops at the
 * first frame that is torn or fails its checksum, or at a gap between segments.
 */
export async function scanFrames(
  files: SegmentFiles,
  fs: StoreFs,
  from: number,
  end: number,
  onFrame: (buf: Buffer, off: number, position: number, type: number) => void,
): Promise<ScanResult> {
  const segments = files.list;
  let position = Math.max(from, segments[0]?.base ?? end);
  let idx = segments.findIndex((s) => position < s.base + s.written);
  if (idx < 0) return { validEnd: Math.max(position, end) };
  for (; idx < segments.length; idx++) {
    const seg = segments[idx]!;
    if (position < seg.base) {
      return {
        validEnd: position,
        problem: { position, reason: `gap before segment ${segmentName(seg.base)}` },
      };
    }
    const last = idx === segments.length - 1;
    const result = await files.use(seg, async (fd): Promise<ScanResult | null> => {
      const segEnd = seg.base + seg.written;
      let buf = Buffer.allocUnsafe(Math.min(SCAN_CHUNK, Math.max(1, segEnd - position)));
      while (position < segEnd) {
        const want = Math.min(buf.length, segEnd - position);
        const n = await readFully(fs, fd, buf, want, position - seg.base);
        let off = 0;
        while (off < n) {
          if (last && n - off >= 4 && buf.readUInt32LE(off) === 0)
            return { validEnd: position + off, zeroTail: true };
          const check = checkFrame(buf, off, n);
          if (check === FrameCheck.OK) {
            onFrame(buf, off, position + off, frameType(buf, off));
            off += frameLength(buf, off);
            continue;
          }
          if (check === FrameCheck.INCOMPLETE) {
            const len = n - off >= 4 ? frameLength(buf, off) : 0;
            if (position + off + Math.max(len, 9) > segEnd || n < want) {
              return {
                validEnd: position + off,
                problem: { position: position + off, reason: 'torn record' },
              };
            }
            if (off === 0) buf = Buffer.allocUnsafe(Math.max(len, buf.length)); // a frame bigger than the chunk
            break;
          }
          const torn = last && (await zerosAfterFrame(fs, fd, buf, off, n, position, seg.base, segEnd));
          return {
            validEnd: position + off,
            problem: { position: position + off, reason: torn ? 'torn record' : 'checksum mismatch' },
          };
        }
        position += off;
      }
      return null;
    });
    if (result) return result;
  }
  return { validEnd: position };
}

/**
 * Whether the frame at `buf[off]` (file position `position + off`), which failed its check, claims a
 * plausible length and is followed by zeros (or by the end of the segment): a write cut short.
 */
async function zerosAfterFrame(
  fs: StoreFs,
  fd: number,
  buf: Buffer,
  off: number,
  n: number,
  position: number,
  segBase: number,
  segEnd: number,
): Promise<boolean> {
  if (n - off < 4) return false;
  const len = frameLength(buf, off);
  if (len < FRAME_HEADER_SIZE || len > MAX_FRAME_SIZE) return false;
  const after = position + off + len;
  if (after + 4 > segEnd) return true;
  if (off + len + 4 <= n) return buf.readUInt32LE(off + len) === 0;
  const next = Buffer.alloc(4);
  return (await readFully(fs, fd, next, 4, after - segBase)) === 4 && next.readUInt32LE(0) === 0;
}

/**
 * Where the bytes at file offsets [from, end) that are not zeros end (`from` if all are): the written
 * part of a segment sized ahead, so that a damaged tail copied aside is not padded with its unwritten
 * rest.
 */
export async function nonZeroEnd(sfs: StoreFs, fd: number, from: number, end: number): Promise<number> {
  const buf = Buffer.allocUnsafe(Math.min(SCAN_CHUNK, Math.max(1, end - from)));
  let dataEnd = from;
  for (let at = from; at < end;) {
    const n = await readFully(sfs, fd, buf, Math.min(buf.length, end - at), at);
    if (n === 0) break;
    for (let i = n - 1; i >= 0; i--) {
      if (buf[i] !== 0) {
        dataEnd = at + i + 1;
        break;
      }
    }
    at += n;
  }
  return dataEnd;
}

/** Copy `length` bytes from `fd` at `from` into a new file at `path`, fsynced. */
export async function copyRange(
  sfs: StoreFs,
  fd: number,
  from: number,
  length: number,
  path: string,
): Promise<void> {
  const out = await sfs.open(path, O.O_WRONLY | O.O_CREAT | O.O_TRUNC);
  try {
    const buf = Buffer.allocUnsafe(Math.min(length, SCAN_CHUNK) || 1);
    let done = 0;
    while (done < length) {
      const n = await readFully(sfs, fd, buf, Math.min(buf.length, length - done), from + done);
      if (n === 0) break;
      await writeAll(sfs, out, [buf.subarray(0, n)], done);
      done += n;
    }
    await sfs.fdatasync(out);
  } finally {
    await sfs.close(out);
  }
}
