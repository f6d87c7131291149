/**
 * Where a workload's result goes once its client is done: the counted rounds (each figure's median
 * is taken over them), the `--baseline` broker's rounds, or the warm-up round (`--warm-up-round`,
 * round 0), which is listed under the table and counted in no median and no ratio.
 */
import type { CompareReport, Workload, WorkloadResult } from './types.js';

/** A target's counted rounds so far, per workload. */
export type CountedRounds = Map<Workload, (WorkloadResult & { round: number })[]>;

export type Recorded = 'warm-up' | 'baseline' | 'counted';

/** File `r`, the result of `round` of a workload (0: the warm-up round) on this or the baseline broker. */
export function recordResult(
  counted: CountedRounds,
  report: CompareReport,
  r: WorkloadResult,
  round: number,
  isBaseline: boolean,
): Recorded {
  if (round === 0) {
    // Only this checkout's: the baseline's warm-up is not shown either.
    if (!isBaseline) (report.warmUp ??= []).push(r);
    return 'warm-up';
  }
  if (isBaseline) {
    report.baseline!.rounds.push({ ...r, round });
    return 'baseline';
  }
  counted.set(r.workload, [...(counted.get(r.workload) ?? []), { ...r, round }]);
  return 'counted';
}
