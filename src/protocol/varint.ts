/** Protobuf varints, for the hand-written encoders of the hot frames (broker and SDK). */

/** Bytes the varint of `v` (a non-negative safe integer) takes. */
export function vsize(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Write the varint of `v` (a non-negative safe integer) at `at`; returns where it ends. */
export function writeVarint(buf: Buffer, at: number, v: number): number {
  while (v >= 128) {
    buf[at++] = (v % 128) | 128;
    v = Math.floor(v / 128);
  }
  buf[at++] = v;
  return at;
}
