/**
 * Copy a few bytes between buffers without allocating. Node 20's `Buffer#copy` (and `set` of a
 * `subarray`) of part of a buffer makes a `Uint8Array` view of that part per call, which costs more
 * than the copy for the short runs of the hot paths (receipt handles, message ids, tags): a loop does
 * not (bench/consume-edge-micro.ts, bench/delivery-encode.ts; docs/benchmarks.md, eleventh session).
 * For long runs, `Buffer#copy`.
 */
export function copyBytes(from: Uint8Array, start: number, to: Uint8Array, at: number, length: number): void {
  for (let i = 0; i < length; i++) to[at + i] = from[start + i]!;
}
