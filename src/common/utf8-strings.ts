/**
 * Strings out of protobuf bytes for the hand-written decoders (the SDK's delivery decoder, the
 * broker's SendMessage decoder): Buffer's own UTF-8 slicer, and the last value of a field that repeats
 * from message to message (a topic, a host, a tag), reused when the bytes are the same.
 */

/**
 * Buffer's own UTF-8 slicer, which `toString('utf8', …)` ends in after checking its arguments and
 * looking up the encoding (protobufjs calls it too); undocumented, hence the fallback.
 */
const utf8Slice = (Buffer.prototype as unknown as { utf8Slice?: (start: number, end: number) => string })
  .utf8Slice;

/** The UTF-8 string of `buf[start, end)`. */
export function utf8(buf: Buffer, start: number, end: number): string {
  if (end === start) return '';
  return utf8Slice ? utf8Slice.call(buf, start, end) : buf.toString('utf8', start, end);
}

/** The last value of a field that repeats from message to message, with its bytes. */
export class RecentString {
  private readonly bytes = Buffer.alloc(128);
  private len = -1;
  private value = '';

  /**
   * The string of `buf[start, end)`: the last one itself when the bytes are the same. `check` sees
   * each string decoded anew before it is kept (and may throw to refuse it): a string handed out
   * again was checked when it was decoded.
   */
  of(
    buf: Buffer,
    start: number,
    end: number,
    check?: (s: string, start: number, end: number) => string,
  ): string {
    const n = end - start;
    if (n === this.len) {
      let i = 0;
      while (i < n && buf[start + i] === this.bytes[i]) i++;
      if (i === n) return this.value;
    }
    const v = check ? check(utf8(buf, start, end), start, end) : utf8(buf, start, end);
    if (n <= this.bytes.length) {
      buf.copy(this.bytes, 0, start, end);
      this.len = n;
      this.value = v;
    } else this.len = -1;
    return v;
  }
}
