/**
 * Whether the server's memory stays flat during a long workload: the RSS samples `run.ts` takes over
 * a measured part (every `--rss-every` seconds; for Vela also its JavaScript heap in use), summed up
 * as min / max and the least-squares slope in MiB per minute, over the whole part and over its second
 * half (after warm-up growth has settled).
 */

export interface RssSample {
  /** ms since the measured part began. */
  atMs: number;
  bytes: number;
}

export interface RssTrend {
  samples: number;
  minBytes: number;
  maxBytes: number;
  firstBytes: number;
  lastBytes: number;
  /** Least-squares slope over every sample, MiB per minute (null with fewer than 2 samples). */
  slopeMiBPerMin: number | null;
  /** The same over the samples of the second half of the part. */
  secondHalfSlopeMiBPerMin: number | null;
}

const MIB = 1024 * 1024;

function slope(samples: readonly RssSample[]): number | null {
  if (samples.length < 2) return null;
  const n = samples.length;
  let sx = 0;
  let sy = 0;
  for (const s of samples) {
    sx += s.atMs;
    sy += s.bytes;
  }
  const mx = sx / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const s of samples) {
    num += (s.atMs - mx) * (s.bytes - my);
    den += (s.atMs - mx) ** 2;
  }
  if (den === 0) return null;
  return ((num / den) * 60_000) / MIB; // bytes per ms → MiB per minute
}

export function rssTrend(samples: readonly RssSample[]): RssTrend | null {
  if (samples.length === 0) return null;
  const bytes = samples.map((s) => s.bytes);
  const end = samples.at(-1)!.atMs;
  return {
    samples: samples.length,
    minBytes: Math.min(...bytes),
    maxBytes: Math.max(...bytes),
    firstBytes: samples[0]!.bytes,
    lastBytes: samples.at(-1)!.bytes,
    slopeMiBPerMin: slope(samples),
    secondHalfSlopeMiBPerMin: slope(samples.filter((s) => s.atMs >= end / 2)),
  };
}

/** One line for the log: `server RSS over 61 samples: 180–212 MiB (first 185, last 210), slope +0.41 MiB/min, …`. */
export function formatRssTrend(t: RssTrend, what = 'server RSS'): string {
  const mib = (b: number) => Math.round(b / MIB).toLocaleString('en-US');
  const sl = (v: number | null) => (v === null ? '–' : `${v >= 0 ? '+' : ''}${v.toFixed(2)}`);
  return (
    `${what} over ${t.samples} samples: ${mib(t.minBytes)}–${mib(t.maxBytes)} MiB ` +
    `(first ${mib(t.firstBytes)}, last ${mib(t.lastBytes)}), slope ${sl(t.slopeMiBPerMin)} MiB/min, ` +
    `second half ${sl(t.secondHalfSlopeMiBPerMin)} MiB/min`
  );
}
