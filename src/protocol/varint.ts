/**
 * Protobuf varints, for the hand-written encoders of the hot frames (broker and SDK). Values below
 * 2^31 (lengths, tags, timestamps' seconds and nanos, most offsets) take integer shifts; larger ones
 * floating-point division (exact below 2^53).
 */

/** Bytes the varint of `v` (a non-negative safe integer) takes. */
export function vsize(v: number): number {
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x200000) return 3;
  if (v < 0x10000000) return 4;
  let n = 5;
  v = Math.floor(v / 0x800000000); // 2^35: what five bytes hold
  while (v > 0) {
    n++;
    v = Math.floor(v / 128);
  }
  return n;
}

/** Write the varint of `v` (a non-negative safe integer) at `at`; returns where it ends. */
export function writeVarint(buf: Buffer, at: number, v: number): number {
  if (v < 0x80000000) {
    while (v > 127) {
      buf[at++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[at++] = v;
    return at;
  }
  while (v >= 128) {
    buf[at++] = (v % 128) | 128;
    v = Math.floor(v / 128);
  }
  buf[at++] = v;
  return at;
}
