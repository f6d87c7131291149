/**
 * Reading a segment log back after a crash: walk its frames verifying length and CRC (`scanFrames`),
 * and copy a damaged tail aside before it is cut (`copyRange`), so recovery never destroys bytes a
 * person might still want to inspect.
 */
import { checkFrame, FrameCheck, frameLength, frameType } from './record-codec.js';
import { O, readFully, writeAll, type StoreFs } from './store-fs.js';
import { segmentName, type SegmentFiles } from './segment-files.js';

export interface ScanResult {
  /** End of the last valid frame. */
  validEnd: number;
  /** Why the scan stopped before the physical end, if it did. */
  problem?: { position: number; reason: string };
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
    const result = await files.use(seg, async (fd): Promise<ScanResult | null> => {
      const segEnd = seg.base + seg.written;
      let buf = Buffer.allocUnsafe(Math.min(SCAN_CHUNK, Math.max(1, segEnd - position)));
      while (position < segEnd) {
        const want = Math.min(buf.length, segEnd - position);
        const n = await readFully(fs, fd, buf, want, position - seg.base);
        let off = 0;
        while (off < n) {
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
          return {
            validEnd: position + off,
            problem: { position: position + off, reason: 'checksum mismatch' },
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
