/**
 * The comparison table: one row per figure, one column per target, then Vela's ratio to each peer
 * (Vela's figure ÷ the peer's, for the SDK and for the official client). Pure: report in, Markdown out.
 */
import { fmtInt, fmtMiB, fmtMs, fmtRatio, fmtUs, perMessage, ratio } from './stats.js';
import { STALL_MS, type PauseBreakdown } from './pauses.js';
import {
  TARGET_TITLES,
  isVela,
  type CompareReport,
  type Target,
  type Workload,
  type WorkloadResult,
} from './types.js';

export interface Metric {
  label: string;
  /** Whether a higher or a lower figure is better (ratios are always Vela ÷ peer). */
  better: 'higher' | 'lower';
  workload: Workload;
  /** What a peer without `workload` is compared on (W2-pull is compared with the peers' W2). */
  peerWorkload?: Workload;
  value: (r: WorkloadResult) => number | undefined;
  format: (v: number) => string;
}

const rate = (r: WorkloadResult) => r.rate;
const serverCpu = (r: WorkloadResult) => perMessage(r.serverCpuUs, r.ok);
const clientCpu = (r: WorkloadResult) => perMessage(r.clientCpuUs, r.ok);

function w3Metrics(workload: Workload, title: string): Metric[] {
  return [
    { label: `${title}: consumed, msgs/s`, better: 'higher', workload, value: rate, format: fmtInt },
    {
      label: `${title}: p50 latency, ms`,
      better: 'lower',
      workload,
      value: (r) => r.latency?.p50,
      format: fmtMs,
    },
    {
      label: `${title}: p99 latency, ms`,
      better: 'lower',
      workload,
      value: (r) => r.latency?.p99,
      format: fmtMs,
    },
    {
      label: `${title}: max latency, ms`,
      better: 'lower',
      workload,
      value: (r) => r.latency?.max,
      format: fmtMs,
    },
    { label: `${title}: broker CPU, µs/msg`, better: 'lower', workload, value: serverCpu, format: fmtUs },
    {
      label: `${title}: client GC pauses, ms per s`,
      better: 'lower',
      workload,
      value: (r) => (r.clientGc ? r.clientGc.totalMs / r.seconds : undefined),
      format: fmtMs,
    },
    {
      label: `${title}: longest client GC pause, ms`,
      better: 'lower',
      workload,
      value: (r) => r.clientGc?.maxMs,
      format: fmtMs,
    },
  ];
}

export const METRICS: readonly Metric[] = [
  {
    label: 'W1a produce, 1,024 in flight, msgs/s',
    better: 'higher',
    workload: 'w1a',
    value: rate,
    format: fmtInt,
  },
  { label: 'W1a broker CPU, µs/msg', better: 'lower', workload: 'w1a', value: serverCpu, format: fmtUs },
  { label: 'W1a client CPU, µs/msg', better: 'lower', workload: 'w1a', value: clientCpu, format: fmtUs },
  {
    label: 'W1b produce one at a time, msgs/s',
    better: 'higher',
    workload: 'w1b',
    value: rate,
    format: fmtInt,
  },
  {
    label: 'W1b p50 latency, ms',
    better: 'lower',
    workload: 'w1b',
    value: (r) => r.latency?.p50,
    format: fmtMs,
  },
  {
    label: 'W1b p99 latency, ms',
    better: 'lower',
    workload: 'w1b',
    value: (r) => r.latency?.p99,
    format: fmtMs,
  },
  {
    label: 'W2 consume + ack of a backlog, msgs/s',
    better: 'higher',
    workload: 'w2',
    value: rate,
    format: fmtInt,
  },
  { label: 'W2 broker CPU, µs/msg', better: 'lower', workload: 'w2', value: serverCpu, format: fmtUs },
  { label: 'W2 client CPU, µs/msg', better: 'lower', workload: 'w2', value: clientCpu, format: fmtUs },
  {
    label: 'W2-pull (Vela PullConsumer; peers: their W2), msgs/s',
    better: 'higher',
    workload: 'w2pull',
    peerWorkload: 'w2',
    value: rate,
    format: fmtInt,
  },
  {
    label: 'W2-pull broker CPU, µs/msg',
    better: 'lower',
    workload: 'w2pull',
    peerWorkload: 'w2',
    value: serverCpu,
    format: fmtUs,
  },
  {
    label: 'W2-pull client CPU, µs/msg',
    better: 'lower',
    workload: 'w2pull',
    peerWorkload: 'w2',
    value: clientCpu,
    format: fmtUs,
  },
  ...w3Metrics('w3a', 'W3 at 5,000 msgs/s'),
  ...w3Metrics('w3b', 'W3 at 20,000 msgs/s'),
];

/** Whether a W3 run kept up: everything sent arrived and ≥ 95 % of the asked rate was consumed. */
export function keptUp(r: WorkloadResult): boolean {
  if (r.targetRate === undefined) return true;
  return (r.missing ?? 0) === 0 && r.rate >= 0.95 * r.targetRate && (r.sendRate ?? 0) >= 0.95 * r.targetRate;
}

/** Footnotes collected while rendering: one per (target, workload) that needs explaining. */
class Notes {
  readonly lines: string[] = [];
  private readonly index = new Map<string, number>();

  ref(key: string, text: string): string {
    let n = this.index.get(key);
    if (n === undefined) {
      this.lines.push(text);
      n = this.lines.length;
      this.index.set(key, n);
    }
    return ` [${n}]`;
  }
}

function noteFor(r: WorkloadResult): string | undefined {
  const parts: string[] = [];
  if (r.failed > 0) {
    parts.push(
      `${fmtInt(r.failed)} of ${fmtInt(r.ok + r.failed)} failed` +
        (r.firstError ? ` (first error: ${r.firstError.slice(0, 160)})` : ''),
    );
  }
  if (r.targetRate !== undefined && !keptUp(r)) {
    parts.push(
      `did not keep up with ${fmtInt(r.targetRate)} msgs/s: sent ${fmtInt(r.sendRate ?? 0)}/s, consumed ` +
        `${fmtInt(r.rate)}/s` +
        ((r.missing ?? 0) > 0
          ? `, ${fmtInt(r.missing!)} sent messages had not arrived at the end (latencies are lower bounds)`
          : ''),
    );
  } else if (r.timeLimited) {
    parts.push(`stopped at the time limit after ${fmtInt(r.ok)} messages`);
  }
  if (r.drained === false) parts.push('the server still held un-acked messages afterwards');
  return parts.length ? parts.join('; ') : undefined;
}

function find(report: CompareReport, target: Target, workload: Workload): WorkloadResult | undefined {
  return report.results.find((r) => r.target === target && r.workload === workload);
}

function errorOf(report: CompareReport, target: Target, workload: Workload): string | undefined {
  return report.errors.find((e) => e.target === target && e.workload === workload)?.error;
}

/** The figure a metric takes for a target (peers fall back to `peerWorkload`). */
export function figure(report: CompareReport, metric: Metric, target: Target): number | undefined {
  const w = !isVela(target) && metric.peerWorkload ? metric.peerWorkload : metric.workload;
  const r = find(report, target, w);
  return r ? metric.value(r) : undefined;
}

function cell(report: CompareReport, metric: Metric, target: Target, notes: Notes): string {
  const ownWorkload = !isVela(target) && metric.peerWorkload ? undefined : metric.workload;
  if (ownWorkload === undefined) {
    const v = figure(report, metric, target);
    return v === undefined ? '–' : `(${metric.format(v)})`;
  }
  const r = find(report, target, ownWorkload);
  if (!r) {
    const err = errorOf(report, target, ownWorkload);
    return err
      ? `error${notes.ref(`${target}/${ownWorkload}`, `${TARGET_TITLES[target]}, ${ownWorkload}: ${err}`)}`
      : '–';
  }
  const v = metric.value(r);
  let text = v === undefined ? '–' : metric.format(v);
  if (v !== undefined && isLowerBound(report, metric, target)) text = `≥ ${text}`;
  const note = noteFor(r);
  if (note)
    text += notes.ref(`${target}/${ownWorkload}`, `${TARGET_TITLES[target]}, ${ownWorkload}: ${note}`);
  return text;
}

/**
 * A W3 latency of a run in which sent messages never arrived is only a lower bound (the missing
 * ones would have been later still).
 */
export function isLowerBound(report: CompareReport, metric: Metric, target: Target): boolean {
  if (!metric.label.includes('latency')) return false;
  const r = find(report, target, metric.workload);
  return r !== undefined && r.targetRate !== undefined && (r.missing ?? 0) > 0;
}

function ratioCell(report: CompareReport, metric: Metric, peer: Target, velas: Target[]): string {
  const peerValue = figure(report, metric, peer);
  const peerBound = isLowerBound(report, metric, peer);
  const parts = velas.map((v) => {
    const r = ratio(figure(report, metric, v), peerValue);
    if (r === undefined) return '–';
    const velaBound = isLowerBound(report, metric, v);
    // Vela ÷ peer: a lower bound above makes the ratio a lower bound, one below an upper bound.
    if (velaBound && peerBound) return `${fmtRatio(r)} (both ≥)`;
    if (velaBound) return `≥ ${fmtRatio(r)}`;
    if (peerBound) return `≤ ${fmtRatio(r)}`;
    return fmtRatio(r);
  });
  return parts.join(' / ');
}

const escape = (s: string) => s.replace(/\|/g, '\\|');

/** The whole table with its header lines and notes, as Markdown. */
export function renderTable(report: CompareReport): string {
  const { machine } = report;
  const targets = report.targets;
  const velas = targets.filter(isVela);
  const peers = targets.filter((t) => !isVela(t));
  const notes = new Notes();
  const velaLabel = velas
    .map((v) => (v === 'vela-sdk' ? 'SDK' : v === 'vela-remoting' ? 'Remoting' : 'official'))
    .join(' / ');
  const head = [
    'figure',
    ...targets.map((t) => TARGET_TITLES[t]),
    ...(velas.length ? peers.map((p) => `Vela ÷ ${TARGET_TITLES[p].split(' ')[0]} (${velaLabel})`) : []),
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  const metrics = METRICS.filter((m) => report.workloads.includes(m.workload));
  for (const m of metrics) {
    // A row needs a target with a figure (or an error) of its own workload, not only peers' fallbacks.
    const own = (t: Target) => isVela(t) || !m.peerWorkload;
    if (
      !targets.some((t) => own(t) && (figure(report, m, t) !== undefined || errorOf(report, t, m.workload)))
    ) {
      continue;
    }
    const row = [
      `${m.label} ${m.better === 'higher' ? '↑' : '↓'}`,
      ...targets.map((t) => cell(report, m, t, notes)),
      ...(velas.length ? peers.map((p) => ratioCell(report, m, p, velas)) : []),
    ];
    lines.push(`| ${row.map(escape).join(' | ')} |`);
  }
  const rss = [
    'broker peak RSS, MiB ↓',
    ...targets.map((t) => (report.serverRssPeak[t] !== undefined ? fmtMiB(report.serverRssPeak[t]!) : '–')),
    ...(velas.length
      ? peers.map((p) =>
          velas
            .map((v) => {
              const r = ratio(report.serverRssPeak[v], report.serverRssPeak[p]);
              return r === undefined ? '–' : fmtRatio(r);
            })
            .join(' / '),
        )
      : []),
  ];
  lines.push(`| ${rss.join(' | ')} |`);

  const header = [
    `Measured ${machine.date} on ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, ` +
      `Linux ${machine.kernel}, Node ${machine.node}; load average at start ${machine.loadAverageAtStart}. ` +
      `Run took ${fmtInt(report.seconds)} s.`,
    `Command: \`${report.command}\``,
    `Versions: ${Object.entries(report.versions)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.` +
      (report.velaFrom === 'src'
        ? ' Vela ran from its TypeScript sources (tsx), not the compiled dist/.'
        : report.velaFrom === 'dist'
          ? ' Vela ran from the compiled dist/ (as `npm start` and the SDK package).'
          : ''),
    '↑ higher is better, ↓ lower is better; ratios are Vela ÷ peer. Figures in parentheses are what a ' +
      'Vela-only row is compared with.',
  ];
  const others = report.results.map((r) => r.otherCores);
  if (others.length) {
    const mean = others.reduce((a, b) => a + b, 0) / others.length;
    header.push(
      `Other processes on the machine used ${mean.toFixed(2)} cores on average during the measured parts ` +
        `(at most ${Math.max(...others).toFixed(2)}).`,
    );
  }
  const footer = notes.lines.map((n, i) => `[${i + 1}] ${n}`);
  const spread = [...(report.rounds ? renderSpread(report) : []), ...renderWarmUp(report)];
  const paired = [...renderPaired(report), ...renderPeerRounds(report)];
  const pauses = renderPauses(report);
  return [
    ...header,
    '',
    ...lines,
    ...(footer.length ? ['', ...footer] : []),
    ...(spread.length ? ['', ...spread] : []),
    ...(paired.length ? ['', ...paired] : []),
    ...(pauses.length ? ['', ...pauses] : []),
  ].join('\n');
}

/** W3 is paced at a fixed rate: its rounds differ by latency, the others by rate. */
const byLatency = (w: Workload) => w === 'w3a' || w === 'w3b';

/**
 * The round whose figures the table shows: the median by rate (by p99 latency for W3), the lower
 * of the two middle rounds when their number is even (the slower one: the table never flatters).
 */
export function medianRound<T extends WorkloadResult>(rounds: readonly T[]): T {
  if (rounds.length === 0) throw new RangeError('no rounds');
  const w = rounds[0]!.workload;
  // Ascending by how good the round was: slowest first (or highest p99 first, for W3).
  const sorted = [...rounds].sort((a, b) =>
    byLatency(w) ? (b.latency?.p99 ?? Infinity) - (a.latency?.p99 ?? Infinity) : a.rate - b.rate,
  );
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** Lines under the table: each target and workload's rounds, slowest to fastest. */
export function renderSpread(report: CompareReport): string[] {
  const rounds = report.rounds ?? [];
  const n = Math.max(0, ...rounds.map((r) => r.round));
  if (n < 2) return [];
  const lines = [
    `Each figure is the median of ${n} rounds (by msgs/s; W3 by p99 latency). The rounds, worst to best:`,
  ];
  for (const target of report.targets) {
    for (const workload of report.workloads) {
      const mine = rounds.filter((r) => r.target === target && r.workload === workload);
      if (mine.length === 0) continue;
      const values = byLatency(workload)
        ? mine.map((r) => r.latency?.p99 ?? Infinity).sort((a, b) => b - a)
        : mine.map((r) => r.rate).sort((a, b) => a - b);
      const shown = values.map((v) => (byLatency(workload) ? `${fmtMs(v)} ms` : fmtInt(v))).join(' / ');
      const failed = report.errors.filter((e) => e.target === target && e.workload === workload).length;
      lines.push(
        `- ${TARGET_TITLES[target]}, ${workload}: ${shown}${byLatency(workload) ? ' p99' : ' msgs/s'}` +
          (failed ? `; ${failed} more round${failed > 1 ? 's' : ''} failed` : ''),
      );
    }
  }
  return lines;
}

/** Lines under the table: the warm-up round's figures (`--warm-up-round`), which nothing above counts. */
export function renderWarmUp(report: CompareReport): string[] {
  const warm = report.warmUp ?? [];
  if (warm.length === 0) return [];
  const lines = ['The warm-up round (round 0, on the same servers before round 1; in no figure above):'];
  for (const target of report.targets) {
    for (const workload of report.workloads) {
      const r = warm.find((w) => w.target === target && w.workload === workload);
      if (!r) continue;
      const shown = byLatency(workload)
        ? `p99 ${r.latency ? fmtMs(r.latency.p99) : '–'} ms at ${fmtInt(r.rate)} msgs/s`
        : `${fmtInt(r.rate)} msgs/s`;
      const cpu = r.ok > 0 ? `; CPU/msg server ${fmtUs(r.serverCpuUs / r.ok)} µs` : '';
      lines.push(`- ${TARGET_TITLES[target]}, ${workload}: ${shown}${cpu}`);
    }
  }
  return lines;
}

/** The middle value (the mean of the two middle ones for an even count). */
function median(values: readonly number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
}

/**
 * With `--baseline`: each Vela figure of this checkout's broker divided by the baseline's in the same
 * round (the two ran one right after the other), per round and their median. Paired rounds cancel
 * most of the machine's drift, which moves single runs by ±25 % here.
 */
export function renderPaired(report: CompareReport): string[] {
  const base = report.baseline;
  if (!base || base.rounds.length === 0) return [];
  const mine = report.rounds ?? report.results.map((r) => ({ ...r, round: 1 }));
  const lines = [
    `This checkout's broker ÷ the baseline's (${base.dir}, ${base.revision}) in the same rounds, ` +
      "this checkout's clients for both; the median ratio, then each round's:",
  ];
  const perMsg = (us: number, r: WorkloadResult) => (r.ok > 0 ? us / r.ok : NaN);
  for (const target of report.targets) {
    for (const workload of report.workloads) {
      const pairs: [WorkloadResult, WorkloadResult][] = [];
      for (const b of base.rounds) {
        if (b.target !== target || b.workload !== workload) continue;
        const m = mine.find((r) => r.target === target && r.workload === workload && r.round === b.round);
        if (m) pairs.push([m, b]);
      }
      if (pairs.length === 0) continue;
      const figures: [string, (r: WorkloadResult) => number][] = byLatency(workload)
        ? [
            ['p50', (r) => r.latency?.p50 ?? NaN],
            ['p99', (r) => r.latency?.p99 ?? NaN],
          ]
        : [['msgs/s', (r) => r.rate]];
      figures.push(
        ['broker µs/msg', (r) => perMsg(r.serverCpuUs, r)],
        ['client µs/msg', (r) => perMsg(r.clientCpuUs, r)],
      );
      const parts = figures.map(([name, f]) => {
        const ratios = pairs.map(([m, b]) => f(m) / f(b)).filter(Number.isFinite);
        if (ratios.length === 0) return `${name} –`;
        return `${name} ${median(ratios).toFixed(2)} (${ratios.map((x) => x.toFixed(2)).join(' / ')})`;
      });
      lines.push(`- ${TARGET_TITLES[target]}, ${workload}: ${parts.join('; ')}`);
    }
  }
  return lines;
}

/**
 * With `--interleave`: each Vela figure divided by each peer's in the same round (every target ran
 * its round within minutes of the others), the median of those ratios, then each round's. The table's
 * ratios divide medians that may come from different rounds; these keep each round's conditions.
 */
export function renderPeerRounds(report: CompareReport): string[] {
  const rounds = report.rounds ?? [];
  if (!report.interleaved || rounds.length === 0) return [];
  const velas = report.targets.filter(isVela);
  const peers = report.targets.filter((t) => !isVela(t));
  const lines: string[] = [];
  for (const workload of report.workloads) {
    const [name, f]: [string, (r: WorkloadResult) => number | undefined] = byLatency(workload)
      ? ['p99', (r) => r.latency?.p99]
      : ['msgs/s', (r) => r.rate];
    for (const v of velas) {
      for (const p of peers) {
        const ratios: number[] = [];
        for (const m of rounds) {
          if (m.target !== v || m.workload !== workload) continue;
          const o = rounds.find((r) => r.target === p && r.workload === workload && r.round === m.round);
          const x = o && ratio(f(m), f(o));
          if (x !== undefined && Number.isFinite(x)) ratios.push(x);
        }
        if (ratios.length === 0) continue;
        lines.push(
          `- ${workload} ${name}, ${TARGET_TITLES[v]} ÷ ${TARGET_TITLES[p]}: ${median(ratios).toFixed(2)} ` +
            `(${ratios.map((x) => x.toFixed(2)).join(' / ')})`,
        );
      }
    }
  }
  if (lines.length === 0) return [];
  return [
    "Vela ÷ each peer round by round (`--interleave`: the same round ran every target in turn); the median ratio, then each round's:",
    ...lines,
  ];
}

const pct = (n: number, of: number) => `${of > 0 ? Math.round((100 * n) / of) : 0} %`;

/** One W3 result's slow messages by the pauses they overlapped (`--w3-pauses`), in words. */
export function pausesText(p: PauseBreakdown): string {
  const head = `${fmtInt(p.slow)} of ${fmtInt(p.messages)} (${pct(p.slow, p.messages)}) slower than ${fmtMs(p.slowMs)} ms`;
  const time = (who: string, t: { ms: number; gcMs: number }) =>
    `${who} ${fmtInt(t.ms)} ms (GC ${fmtInt(t.gcMs)})`;
  if (!p.broker) {
    return (
      `${head}: during a client pause ${pct(p.clientOnly, p.slow)}, not ${pct(p.neither, p.slow)} ` +
      `(the server's pauses are not recorded); pauses in the window: ${time('client', p.client)}`
    );
  }
  return (
    `${head}: during a pause of the client only ${pct(p.clientOnly, p.slow)}, the broker only ` +
    `${pct(p.brokerOnly, p.slow)}, both ${pct(p.both, p.slow)}, neither ${pct(p.neither, p.slow)}; ` +
    `pauses in the window: ${time('client', p.client)}, ${time('broker', p.broker)}`
  );
}

/** Lines under the table for `--w3-pauses`: each W3 result's slow messages and the pauses they met. */
export function renderPauses(report: CompareReport): string[] {
  const with_ = report.results.filter((r) => r.pauses);
  if (with_.length === 0) return [];
  return [
    "W3's slow messages and the pauses their trip overlapped (a pause: a collection, or an event loop " +
      `that did not turn for ${STALL_MS} ms or more):`,
    ...with_.map((r) => `- ${TARGET_TITLES[r.target]}, ${r.workload}: ${pausesText(r.pauses!)}`),
  ];
}
