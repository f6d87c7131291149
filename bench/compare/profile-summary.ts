/**
 * Where the time went in a V8 CPU profile (`node --cpu-prof`, or `bench:compare --cpu-prof DIR`):
 * `node --import tsx bench/compare/profile-summary.ts FILE.cpuprofile [--top N]` prints self time
 * by area (grpc-js, protobufjs, node:http2, Vela's folders, GC …) and the top functions, as shares
 * of the busy (non-idle) time. `--window BEGIN,END` (µs on the monotonic clock, as `bench:compare
 * --json` reports each workload's `monotonicUs`) keeps only the samples of that interval.
 *
 * Two more views, for a process that is neither idle nor saturated:
 * - `--busy`: how long the thread stayed busy between idle moments (a histogram of busy runs, and
 *   what the longest ones spent their time in). A request or an I/O completion that arrives during a
 *   run waits for its end, so long runs are latency everyone pays.
 * - `--diff OTHER.cpuprofile --window2 BEGIN,END --per N,M`: self time per function in µs per unit
 *   of work (N units in the first profile's window, M in the other's, e.g. messages consumed), the
 *   largest differences first: what one path costs that the other does not.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  /** µs on the monotonic clock. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Share {
  name: string;
  ms: number;
  /** Of the busy time. */
  percent: number;
}

export interface ProfileSummary {
  busyMs: number;
  idleMs: number;
  areas: Share[];
  functions: Share[];
}

/** The area a frame belongs to: a library, a Node subsystem, a folder of Vela, or V8 itself. */
export function areaOf(url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8 / native (program)';
    return `native: ${functionName || '(anonymous)'}`;
  }
  const mod = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (mod) return mod[1]!;
  const internal = /^node:internal\/([a-z_0-9]+)/.exec(url);
  if (internal) return `node:${internal[1]}`;
  if (url.startsWith('node:')) return url;
  // dist/ (what bench:compare runs by default) mirrors src/: one name for both.
  const vela = /\/(?:src|dist)\/([a-z_-]+)\//.exec(url);
  if (vela) return `vela src/${vela[1]}`;
  const bench = /\/bench\//.exec(url);
  if (bench) return 'bench harness';
  return url.replace(/^file:\/\//, '');
}

export function summarizeProfile(
  profile: CpuProfile,
  top = 25,
  window?: { begin: number; end: number },
): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<number, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (window && (at < window.begin || at > window.end)) continue;
    const id = profile.samples[i]!;
    selfMs.set(id, (selfMs.get(id) ?? 0) + delta / 1000);
  }
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  let idleMs = 0;
  let busyMs = 0;
  for (const [id, ms] of selfMs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const area = areaOf(url, functionName);
    if (area === 'idle') {
      idleMs += ms;
      continue;
    }
    busyMs += ms;
    areas.set(area, (areas.get(area) ?? 0) + ms);
    const fn = frameName({ functionName, url, lineNumber });
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
  }
  const shares = (m: Map<string, number>, n: number): Share[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, ms]) => ({ name, ms, percent: busyMs > 0 ? (100 * ms) / busyMs : 0 }));
  return { busyMs, idleMs, areas: shares(areas, 30), functions: shares(functions, top) };
}

/** The node of each sample and how long it lasted (its time delta), within `window`. */
function* samplesOf(
  profile: CpuProfile,
  window?: { begin: number; end: number },
): Generator<{ node: ProfileNode; us: number; at: number }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    if (window && (at < window.begin || at > window.end)) continue;
    yield { node: byId.get(profile.samples[i]!)!, us, at };
  }
}

export interface BusyRuns {
  /** Busy runs by length: under `underMs` (and at least the previous bucket's). */
  buckets: { underMs: number; runs: number; ms: number }[];
  /** The longest runs, each with the stacks (three frames below the root) it spent most time in. */
  longest: { ms: number; atMs: number; stacks: { stack: string; ms: number }[] }[];
}

const BUSY_BUCKETS_MS = [1, 2, 5, 10, 20, 50, Infinity];

/** Busy runs: stretches of consecutive non-idle samples, between idle ones. */
export function busyRuns(
  profile: CpuProfile,
  window?: { begin: number; end: number },
  longest = 3,
): BusyRuns {
  const parent = new Map<number, ProfileNode>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n);
  const stackOf = (n: ProfileNode): string => {
    const path: ProfileNode[] = [];
    for (let x: ProfileNode | undefined = n; x; x = parent.get(x.id)) path.push(x);
    path.reverse(); // root first
    return path
      .slice(1, 4)
      .map((f) => frameName(f.callFrame))
      .join(' > ');
  };
  const runs: { us: number; at: number; stacks: Map<string, number> }[] = [];
  let run: (typeof runs)[number] | null = null;
  const start = window?.begin ?? profile.startTime;
  for (const { node, us, at } of samplesOf(profile, window)) {
    if (areaOf(node.callFrame.url, node.callFrame.functionName) === 'idle') {
      if (run) runs.push(run);
      run = null;
      continue;
    }
    run ??= { us: 0, at, stacks: new Map() };
    run.us += us;
    const stack = stackOf(node);
    run.stacks.set(stack, (run.stacks.get(stack) ?? 0) + us);
  }
  if (run) runs.push(run);
  const buckets = BUSY_BUCKETS_MS.map((underMs) => ({ underMs, runs: 0, ms: 0 }));
  for (const r of runs) {
    const b = buckets.find((x) => r.us / 1000 < x.underMs)!;
    b.runs++;
    b.ms += r.us / 1000;
  }
  return {
    buckets,
    longest: [...runs]
      .sort((a, b) => b.us - a.us)
      .slice(0, longest)
      .map((r) => ({
        ms: r.us / 1000,
        atMs: (r.at - start) / 1000,
        stacks: [...r.stacks]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 6)
          .map(([stack, us]) => ({ stack, ms: us / 1000 })),
      })),
  };
}

export function formatBusyRuns(b: BusyRuns): string {
  const lines = ['busy runs (between idle moments):'];
  let from = 0;
  for (const x of b.buckets) {
    const range = x.underMs === Infinity ? `≥ ${from} ms` : `${from}–${x.underMs} ms`;
    lines.push(`  ${range.padEnd(10)} ${String(x.runs).padStart(6)} runs  ${x.ms.toFixed(0).padStart(7)} ms`);
    from = x.underMs;
  }
  for (const r of b.longest) {
    lines.push('', `${r.ms.toFixed(1)} ms busy from ${r.atMs.toFixed(0)} ms:`);
    for (const s of r.stacks) lines.push(`  ${s.ms.toFixed(1).padStart(6)} ms  ${s.stack}`);
  }
  return lines.join('\n');
}

export interface SelfCostRow {
  name: string;
  /** µs of self time per unit of work in the first profile, and in the other. */
  a: number;
  b: number;
}

/**
 * Self time per function, in µs per unit of work, in two profiles (each within its window, over its
 * number of units): the rows whose cost differs most first, the first profile's larger costs on top.
 */
export function compareSelfCosts(
  a: { profile: CpuProfile; window?: { begin: number; end: number }; units: number },
  b: { profile: CpuProfile; window?: { begin: number; end: number }; units: number },
): { totalA: number; totalB: number; rows: SelfCostRow[] } {
  const costs = (x: typeof a) => {
    const m = new Map<string, number>();
    for (const { node, us } of samplesOf(x.profile, x.window)) {
      const { functionName, url } = node.callFrame;
      if (areaOf(url, functionName) === 'idle') continue;
      const name = frameName(node.callFrame);
      m.set(name, (m.get(name) ?? 0) + us / x.units);
    }
    return m;
  };
  const ca = costs(a);
  const cb = costs(b);
  const rows = [...new Set([...ca.keys(), ...cb.keys()])].map((name) => ({
    name,
    a: ca.get(name) ?? 0,
    b: cb.get(name) ?? 0,
  }));
  rows.sort((x, y) => y.a - y.b - (x.a - x.b));
  const sum = (m: Map<string, number>) => [...m.values()].reduce((s, v) => s + v, 0);
  return { totalA: sum(ca), totalB: sum(cb), rows };
}

export function formatSelfCosts(c: ReturnType<typeof compareSelfCosts>, top: number): string {
  const n = (v: number) => v.toFixed(2).padStart(7);
  return [
    `self time, µs per unit:  first ${c.totalA.toFixed(2)}, other ${c.totalB.toFixed(2)}`,
    `${'first'.padStart(7)} ${'other'.padStart(7)} ${'diff'.padStart(7)}`,
    ...c.rows.slice(0, top).map((r) => `${n(r.a)} ${n(r.b)} ${n(r.a - r.b)}  ${r.name}`),
  ].join('\n');
}

/** `name file:line`, with the path cut to start at node_modules/ (a library), or src/, dist/ or bench/. */
export function frameName(f: ProfileNode['callFrame']): string {
  const path = f.url.replace(/^file:\/\//, '');
  const lib = path.indexOf('/node_modules/');
  const file = lib >= 0 ? path.slice(lib + 1) : path.replace(/^.*\/(src|dist|bench)\//, '$1/');
  return `${f.functionName || '(anonymous)'} ${file ? `${file}:${f.lineNumber + 1}` : ''}`.trim();
}

export function formatSummary(s: ProfileSummary): string {
  const line = (x: Share) =>
    `${x.percent.toFixed(1).padStart(5)} %  ${x.ms.toFixed(0).padStart(7)} ms  ${x.name}`;
  return [
    `busy ${s.busyMs.toFixed(0)} ms, idle ${s.idleMs.toFixed(0)} ms`,
    '',
    'self time by area:',
    ...s.areas.map(line),
    '',
    'top functions (self time):',
    ...s.functions.map(line),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const file = args[0];
  if (!file || file.startsWith('--')) {
    console.error(
      'usage: profile-summary.ts FILE.cpuprofile [--top N] [--window BEGIN_US,END_US] [--busy]\n' +
        '       [--diff OTHER.cpuprofile [--window2 BEGIN_US,END_US] --per N,M]',
    );
    process.exit(2);
  }
  const value = (flag: string) => {
    const at = args.indexOf(flag);
    return at > 0 ? args[at + 1] : undefined;
  };
  const windowOf = (v: string | undefined) => {
    if (!v) return undefined;
    const [begin, end] = v.split(',').map(Number);
    return begin !== undefined && end !== undefined ? { begin, end } : undefined;
  };
  const read = (f: string) => JSON.parse(readFileSync(f, 'utf8')) as CpuProfile;
  const top = Number(value('--top') ?? 25);
  const window = windowOf(value('--window'));
  const profile = read(file);
  const other = value('--diff');
  if (other) {
    const [unitsA, unitsB] = (value('--per') ?? '1,1').split(',').map(Number);
    const c = compareSelfCosts(
      { profile, window, units: unitsA || 1 },
      { profile: read(other), window: windowOf(value('--window2')), units: unitsB || 1 },
    );
    console.log(formatSelfCosts(c, top));
  } else if (args.includes('--busy')) {
    console.log(formatBusyRuns(busyRuns(profile, window)));
  } else {
    console.log(formatSummary(summarizeProfile(profile, top, window)));
  }
}
