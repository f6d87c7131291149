/** Pure arithmetic of the comparison: percentiles, rates, ratios and number formatting. */
import type { LatencySummary } from './types.js';

/**
 * The nearest-rank percentile (p in 0–100) of values sorted ascending: the smallest value with at
 * least p % of the values at or below it. Undefined for no values.
 */
export function percentile(sorted: ArrayLike<number>, p: number): number | undefined {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within 0–100, got ${p}`);
  const n = sorted.length;
  if (n === 0) return undefined;
  const rank = Math.max(1, Math.ceil((p / 100) * n));
  return sorted[rank - 1];
}

/** p50 / p99 / max / mean of latencies (any order; the array is not modified). */
export function summarize(values: ArrayLike<number>): LatencySummary | undefined {
  if (values.length === 0) return undefined;
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    p50: percentile(sorted, 50)!,
    p99: percentile(sorted, 99)!,
    max: sorted[sorted.length - 1]!,
    mean: sum / sorted.length,
  };
}

/** Events per second; 0 when no time passed. */
export function perSecond(count: number, seconds: number): number {
  return seconds > 0 ? count / seconds : 0;
}

/** Microseconds of CPU per message; undefined when there were no messages. */
export function perMessage(cpuUs: number, messages: number): number | undefined {
  return messages > 0 ? cpuUs / messages : undefined;
}

/** Vela's figure divided by a peer's; undefined unless both are finite and the peer's is positive. */
export function ratio(vela: number | undefined, peer: number | undefined): number | undefined {
  if (vela === undefined || peer === undefined) return undefined;
  if (!Number.isFinite(vela) || !Number.isFinite(peer) || peer <= 0) return undefined;
  return vela / peer;
}

/** A count or rate with thousands separators and no decimals: 23800 → "23,800". */
export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Milliseconds with precision that suits their size: 0.214 → "0.21", 12.3 → "12.3", 1712 → "1,712". */
export function fmtMs(ms: number): string {
  if (ms >= 100) return fmtInt(ms);
  if (ms >= 10) return ms.toFixed(1);
  return ms.toFixed(2);
}

/** Microseconds of CPU per message: 8.44 → "8.4", 112.6 → "113". */
export function fmtUs(us: number): string {
  return us >= 100 ? fmtInt(us) : us.toFixed(1);
}

/** A ratio as "0.95×" (two significant digits below 10, none above). */
export function fmtRatio(r: number): string {
  if (r >= 10) return `${Math.round(r)}×`;
  if (r >= 1) return `${r.toFixed(1)}×`;
  return `${r.toPrecision(2)}×`;
}

/** Bytes as MiB without decimals. */
export function fmtMiB(bytes: number): string {
  return fmtInt(bytes / (1024 * 1024));
}
