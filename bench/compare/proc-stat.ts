/**
 * CPU time and RSS of a server's whole process tree from /proc (Linux): RabbitMQ is a shell script,
 * an Erlang VM and helpers; NATS, Redis and Vela are one process each. Parsing is pure and tested.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

export interface ProcStat {
  pid: number;
  comm: string;
  /** R, S, D, Z (zombie: exited, not yet reaped) … */
  state: string;
  ppid: number;
  /** Process group. */
  pgrp: number;
  /** User and system CPU time in clock ticks; `cutime`/`cstime` add reaped children's. */
  utime: number;
  stime: number;
  cutime: number;
  cstime: number;
  /** Start time after boot in clock ticks: with the pid, identifies the process. */
  starttime: number;
  /** Resident pages. */
  rss: number;
}

/** Parse `/proc/<pid>/stat`. The command name may contain spaces and parentheses. */
export function parseStat(text: string): ProcStat {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) throw new Error(`not a /proc stat line: ${text.slice(0, 80)}`);
  const pid = Number(text.slice(0, open).trim());
  const comm = text.slice(open + 1, close);
  // Fields after the command: [0] state (field 3 of proc(5)), [1] ppid, [2] pgrp, … [11] utime (14).
  const fields = text
    .slice(close + 2)
    .trim()
    .split(' ');
  const f = fields.map(Number);
  if (f.length < 22) throw new Error(`short /proc stat line for pid ${pid}`);
  return {
    pid,
    comm,
    state: fields[0]!,
    ppid: f[1]!,
    pgrp: f[2]!,
    utime: f[11]!,
    stime: f[12]!,
    cutime: f[13]!,
    cstime: f[14]!,
    starttime: f[19]!,
    rss: f[21]!,
  };
}

/** The roots and all their descendants among `all` (by parent pid). */
export function descendants(all: readonly ProcStat[], roots: readonly number[]): ProcStat[] {
  const children = new Map<number, ProcStat[]>();
  for (const p of all) {
    const list = children.get(p.ppid);
    if (list) list.push(p);
    else children.set(p.ppid, [p]);
  }
  const byPid = new Map(all.map((p) => [p.pid, p]));
  const out: ProcStat[] = [];
  const seen = new Set<number>();
  const stack = roots.filter((r) => byPid.has(r));
  while (stack.length) {
    const pid = stack.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    out.push(byPid.get(pid)!);
    for (const c of children.get(pid) ?? []) stack.push(c.pid);
  }
  return out;
}

/** CPU (µs, own and reaped children's) and RSS (bytes) summed over processes. */
export function treeUsage(
  procs: readonly ProcStat[],
  clockTicks: number,
  pageSize: number,
): { cpuUs: number; rssBytes: number } {
  let ticks = 0;
  let pages = 0;
  for (const p of procs) {
    ticks += p.utime + p.stime + p.cutime + p.cstime;
    pages += p.rss;
  }
  return { cpuUs: (ticks * 1e6) / clockTicks, rssBytes: pages * pageSize };
}

function conf(name: string, fallback: number): number {
  try {
    const v = Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim());
    return Number.isFinite(v) && v > 0 ? v : fallback;
  } catch {
    return fallback;
  }
}

export const CLOCK_TICKS = conf('CLK_TCK', 100);
export const PAGE_SIZE = conf('PAGESIZE', 4096);

/** Every process now (those that vanish while being read are skipped). */
export function readAll(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      out.push(parseStat(readFileSync(`/proc/${name}/stat`, 'utf8')));
    } catch {
      // gone in the meantime
    }
  }
  return out;
}

/** CPU and RSS of the trees under `roots` now. */
export function sampleTree(roots: readonly number[]): { cpuUs: number; rssBytes: number } {
  return treeUsage(descendants(readAll(), roots), CLOCK_TICKS, PAGE_SIZE);
}

/** Busy CPU time of the whole machine (all cores) from the first line of /proc/stat, in clock ticks. */
export function parseMachineBusy(procStat: string): { busy: number; total: number } {
  const line = procStat.split('\n', 1)[0] ?? '';
  const f = line.trim().split(/\s+/);
  if (f[0] !== 'cpu') throw new Error(`not the aggregate cpu line of /proc/stat: ${line.slice(0, 60)}`);
  // user nice system idle iowait irq softirq steal (guest time is already counted in user).
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f.slice(1, 9).map((x) => Number(x) || 0);
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy, total: busy + idle! + iowait! };
}

/** Busy CPU time of the whole machine now, µs summed over cores. */
export function machineBusyUs(): number {
  return (parseMachineBusy(readFileSync('/proc/stat', 'utf8')).busy * 1e6) / CLOCK_TICKS;
}
