/**
 * Where the time went in a V8 CPU profile (`node --cpu-prof`, or `bench:compare --cpu-prof DIR`):
 * `node --import tsx bench/compare/profile-summary.ts FILE.cpuprofile [--top N]` prints self time
 * by area (grpc-js, protobufjs, node:http2, Vela's folders, GC …) and the top functions, as shares
 * of the busy (non-idle) time. `--window BEGIN,END` (µs on the monotonic clock, as `bench:compare
 * --json` reports each workload's `monotonicUs`) keeps only the samples of that interval.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
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
  const vela = /\/src\/([a-z_-]+)\//.exec(url);
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
    const file = url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules|src|bench)\//, '$1/');
    const fn = `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
  }
  const shares = (m: Map<string, number>, n: number): Share[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, ms]) => ({ name, ms, percent: busyMs > 0 ? (100 * ms) / busyMs : 0 }));
  return { busyMs, idleMs, areas: shares(areas, 30), functions: shares(functions, top) };
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
  const file = process.argv[2];
  if (!file) {
    console.error('usage: profile-summary.ts FILE.cpuprofile [--top N] [--window BEGIN_US,END_US]');
    process.exit(2);
  }
  const topAt = process.argv.indexOf('--top');
  const top = topAt > 0 ? Number(process.argv[topAt + 1]) : 25;
  const windowAt = process.argv.indexOf('--window');
  const [begin, end] = windowAt > 0 ? (process.argv[windowAt + 1] ?? '').split(',').map(Number) : [];
  const window = begin !== undefined && end !== undefined ? { begin, end } : undefined;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  console.log(formatSummary(summarizeProfile(profile, top, window)));
}
