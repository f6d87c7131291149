/**
 * The V8 heap settings of the broker's own process, as RocketMQ's `runbroker.sh` sets the JVM's heap
 * for its broker: Node's defaults are sized for small programs, and a broker allocates a buffer per
 * read and per answer all day.
 *
 * - A larger young generation (`BROKER_NODE_FLAGS`, 32 MiB per semi-space instead of 16): the objects
 *   of a delivery in flight die young instead of being promoted. It has to be given when Node starts,
 *   so `npm start` passes it (and `bench:compare` starts its broker the same way).
 * - A fixed heap growing factor (`heapGrowingPercent`, 300 %: a limit of 4 × what the last full
 *   collection kept, the top of V8's own range). V8 starts marking when the room under that limit,
 *   less the ArrayBuffer bytes allocated since, runs out; a broker allocates a buffer per read and per
 *   answer, so with the ~28 MB a running broker keeps and V8's usual factor it marked and compacted
 *   every ~60 ms while a consumer drained a backlog (docs/benchmarks.md, twelfth session). V8 reads
 *   this flag at each collection, so `vela broker` sets it at start-up.
 *
 * Neither is applied to an application that embeds the broker (`startBroker`): its process is its own.
 */
import { setFlagsFromString } from 'node:v8';

/** Node flags for the broker process, given on its command line (`npm start`). */
export const BROKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=32'];

/**
 * Set V8's heap growing factor for this process to `percent` (0: leave V8's own). An operator's own
 * `--heap-growing-percent` on Node's command line wins. Returns whether it was set.
 */
export function applyHeapGrowing(
  percent: number,
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
): boolean {
  if (!(percent > 0)) return false;
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a))) return false;
  setFlags(`--heap-growing-percent=${Math.round(percent)}`);
  return true;
}
