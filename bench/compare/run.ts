/**
 * Side-by-side comparison (not a test): `npm run bench:compare -- [--quick] [--only …] [--json]`.
 *
 * For each target it starts a fresh server on 127.0.0.1 (Vela in a child process with sync flush;
 * RabbitMQ, NATS JetStream and Redis from Debian's packages, installed when missing), runs every
 * workload in its own client process, reads the server's CPU time and RSS from /proc over each
 * measured part, stops the server, and finally prints one table with Vela's ratio to each peer.
 * With `--interleave` every server is started first and each round runs every target in turn.
 * Everything it started is stopped on the way out, also after a failure or Ctrl-C.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePackages, machineInfo, npmVersionOf, versions } from './environment.js';
import { VELA_FROM_ENV, buildDist } from './vela-from.js';
import { USAGE, brokerNodeFlags, parseArgs, workloadsFor, type CompareOptions } from './options.js';
import { fmtInt, fmtMs, fmtUs, perMessage } from './stats.js';
import { medianRound, pausesText, renderTable } from './table.js';
import { formatRssTrend, rssTrend, type RssSample } from './rss-trend.js';
import { recordResult, type CountedRounds } from './round-results.js';
import { machineBusyUs } from './proc-stat.js';
import { delay, killAllNow, stopAll } from './servers/managed-process.js';
import { startNats } from './servers/nats.js';
import { startRabbitMq } from './servers/rabbitmq.js';
import { startRedis } from './servers/redis.js';
import { removeAllDirs, type RunningServer } from './servers/server.js';
import { icLogFlags, startVela, type BrokerDebug } from './servers/vela.js';
import { remotingClientCommand, startVelaRemoting } from './remoting-rows.js';
import {
  TARGET_TITLES,
  isVela,
  type ClientResult,
  type CompareReport,
  type Target,
  type Workload,
  type WorkloadError,
  type WorkloadResult,
  type WorkloadSpec,
} from './types.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLIENT = fileURLToPath(new URL('./client/main.ts', import.meta.url));
const BODY_SIZE = 1024;
const log = (s: string) => process.stderr.write(`${s}\n`);

let currentClient: ChildProcess | undefined;

/** Microseconds on the monotonic clock that V8 CPU profiles use too. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
let interrupted = false;

/**
 * Where Vela's broker writes its CPU profiles, inline-cache log and allocation sample, if asked to,
 * and its Node/V8 flags and settings (`--broker-flags`, `--broker-config`: this checkout's broker only,
 * not the baseline's).
 */
function brokerDebug(opts: CompareOptions, baseline: boolean): BrokerDebug {
  return {
    ...(opts.cpuProfDir ? { cpuProfDir: opts.cpuProfDir } : {}),
    ...(opts.icLogDir ? { icLogDir: opts.icLogDir } : {}),
    ...(opts.heapSampleDir ? { heapSampleDir: opts.heapSampleDir } : {}),
    ...(opts.w3Pauses ? { pauses: true } : {}),
    ...(!baseline && opts.brokerConfig ? { config: opts.brokerConfig } : {}),
    nodeFlags: brokerNodeFlags(opts, baseline),
  };
}

/** `root`: a Vela target's broker from another checkout (`--baseline`). */
function startServer(target: Target, opts: CompareOptions, root?: string): Promise<RunningServer> {
  switch (target) {
    case 'vela-sdk':
    case 'vela-official':
      return startVela({
        label: root ? `${target}-baseline` : target,
        ...brokerDebug(opts, root !== undefined),
        ...(root ? { root } : {}),
      });
    case 'vela-remoting':
      return startVelaRemoting(brokerDebug(opts, root !== undefined), root);
    case 'rabbitmq':
      return startRabbitMq();
    case 'nats':
      return startNats();
    case 'redis':
      return startRedis();
  }
}

/** Run one workload in a client child; CPU and RSS of the server are read at its BEGIN and END. */
function runClient(
  spec: WorkloadSpec,
  server: RunningServer,
  opts: CompareOptions,
  budgetMs: number,
): Promise<WorkloadResult> {
  return new Promise((resolvePromise, reject) => {
    const prof = opts.cpuProfDir
      ? ['--cpu-prof', '--cpu-prof-dir', join(opts.cpuProfDir, `client-${spec.target}-${spec.workload}`)]
      : [];
    const icLog = opts.icLogDir
      ? icLogFlags(join(opts.icLogDir, `client-${spec.target}-${spec.workload}.log`))
      : [];
    const [cmd, args] =
      spec.target === 'vela-remoting'
        ? remotingClientCommand(spec)
        : [
            process.execPath,
            [...opts.nodeFlags, ...prof, ...icLog, '--import', 'tsx', CLIENT, JSON.stringify(spec)],
          ];
    const child = spawn(cmd, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    currentClient = child;
    let begin: { cpuUs: number; machineUs: number; at: number } | undefined;
    let end: { cpuUs: number; rssBytes: number; machineUs: number; at: number } | undefined;
    let result: ClientResult | undefined;
    let error: string | undefined;
    let rssPeak = 0;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, server.usage().rssBytes);
    }, 250);
    // The trend over the measured part (a long W3 is the memory soak).
    const rss: RssSample[] = [];
    // Vela's JavaScript heap too (its admin API reports it): tells retained objects from allocator slack.
    const heap: RssSample[] = [];
    const heapUrl =
      spec.target.startsWith('vela') && server.adminPort !== undefined
        ? `http://127.0.0.1:${server.adminPort}/api/broker`
        : undefined;
    let rssSampler: NodeJS.Timeout | undefined;
    const sampleRss = () => {
      if (!begin) return;
      const atMs = (monotonicUs() - begin.at) / 1000;
      rss.push({ atMs, bytes: server.usage().rssBytes });
      if (heapUrl) {
        fetch(heapUrl)
          .then((r) => r.json() as Promise<{ process?: { heapUsedBytes?: number } }>)
          .then((b) => {
            if (b.process?.heapUsedBytes !== undefined) heap.push({ atMs, bytes: b.process.heapUsedBytes });
          })
          .catch(() => {}); // a missed sample: the trend does without it
      }
    };
    const watchdog = setTimeout(() => {
      error = `client still running after ${Math.round(budgetMs / 1000)} s: killed`;
      child.kill('SIGKILL');
    }, budgetMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'BEGIN') {
        begin = { ...server.usage(), machineUs: machineBusyUs(), at: monotonicUs() };
        sampleRss();
        rssSampler = setInterval(sampleRss, opts.rssEverySeconds * 1000);
      } else if (line === 'END') {
        end = { ...server.usage(), machineUs: machineBusyUs(), at: monotonicUs() };
        clearInterval(rssSampler);
        sampleRss();
      } else if (line.startsWith('RESULT ')) result = JSON.parse(line.slice(7)) as ClientResult;
      else if (line.startsWith('ERROR ')) error = JSON.parse(line.slice(6)) as string;
    });
    child.once('exit', (code, signal) => {
      clearInterval(sampler);
      clearInterval(rssSampler);
      clearTimeout(watchdog);
      currentClient = undefined;
      if (result && begin && end) {
        rssPeak = Math.max(rssPeak, end.rssBytes);
        const serverCpuUs = end.cpuUs - begin.cpuUs;
        const elapsedUs = end.at - begin.at;
        const otherUs = end.machineUs - begin.machineUs - serverCpuUs - result.clientCpuUs;
        resolvePromise({
          ...result,
          serverCpuUs,
          serverRssPeak: rssPeak,
          serverRssEnd: end.rssBytes,
          serverRss: { samples: rss, trend: rssTrend(rss) },
          ...(heap.length > 0 ? { serverHeap: { samples: heap, trend: rssTrend(heap) } } : {}),
          otherCores: elapsedUs > 0 ? Math.max(0, otherUs / elapsedUs) : 0,
          monotonicUs: { begin: begin.at, end: end.at },
        });
      } else {
        reject(new Error(error ?? `client exited (${signal ?? code}) without a result`));
      }
    });
  });
}

function specFor(
  target: Target,
  workload: Workload,
  server: RunningServer,
  opts: CompareOptions,
): WorkloadSpec {
  const size = opts.sizes[workload];
  return {
    workload,
    target,
    port: server.port,
    ...(server.adminPort !== undefined ? { adminPort: server.adminPort } : {}),
    // Letters, digits and underscores suit every peer's naming rules.
    queue: `compare_${workload}_${randomBytes(4).toString('hex')}`,
    count: size.count,
    timeLimitMs: size.timeLimitMs,
    inflight: size.inflight,
    warmup: size.warmup,
    ...(size.rate !== undefined ? { rate: size.rate } : {}),
    ...(size.warmupMs !== undefined ? { warmupMs: size.warmupMs } : {}),
    ...(size.drainMs !== undefined ? { drainMs: size.drainMs } : {}),
    bodySize: BODY_SIZE,
    ...(opts.w3Pauses && (workload === 'w3a' || workload === 'w3b')
      ? { pauses: server.pausesFile ? { brokerFile: server.pausesFile } : {} }
      : {}),
  };
}

/** How long a client may take at most: its limit, a backlog fill, warm-up, start-up and close. */
function budgetFor(spec: WorkloadSpec): number {
  const fill = spec.workload === 'w2' || spec.workload === 'w2pull' ? 180_000 : 0;
  return spec.timeLimitMs + (spec.warmupMs ?? 0) + (spec.drainMs ?? 0) + fill + 120_000;
}

function summaryLine(r: WorkloadResult): string {
  const parts = [`${r.workload.padEnd(6)} ${fmtInt(r.rate).padStart(7)} msgs/s`];
  if (r.latency)
    parts.push(
      `p50 ${fmtMs(r.latency.p50)} ms, p99 ${fmtMs(r.latency.p99)} ms, max ${fmtMs(r.latency.max)} ms`,
    );
  if (r.sendRate !== undefined) parts.push(`sent ${fmtInt(r.sendRate)}/s, missing ${fmtInt(r.missing ?? 0)}`);
  const s = perMessage(r.serverCpuUs, r.ok);
  const c = perMessage(r.clientCpuUs, r.ok);
  if (s !== undefined && c !== undefined) parts.push(`CPU/msg broker ${fmtUs(s)} µs, client ${fmtUs(c)} µs`);
  if (r.clientGc)
    parts.push(
      `client GC ${fmtMs(r.clientGc.totalMs / r.seconds)} ms/s in ${r.clientGc.count} pauses, longest ${fmtMs(r.clientGc.maxMs)} ms`,
    );
  if (r.pauses) parts.push(pausesText(r.pauses));
  if (r.failed) parts.push(`${fmtInt(r.failed)} failed (${r.firstError ?? '?'})`);
  if (r.timeLimited) parts.push('time limit');
  if (r.drained === false) parts.push('NOT DRAINED');
  parts.push(`others used ${r.otherCores.toFixed(2)} cores`);
  return `  ${parts.join('; ')}`;
}

/**
 * Wait (up to `maxSeconds`) until processes other than ours use under a quarter of a core, measured
 * over 2 s while our server is idle; returns the last measurement, in cores.
 */
async function waitIdle(maxSeconds: number, server: RunningServer): Promise<number> {
  const until = performance.now() + maxSeconds * 1000;
  for (;;) {
    const m0 = machineBusyUs();
    const s0 = server.usage().cpuUs;
    const t0 = performance.now();
    await delay(2000);
    const others = (machineBusyUs() - m0 - (server.usage().cpuUs - s0)) / ((performance.now() - t0) * 1000);
    if (others < 0.25 || performance.now() >= until) return others;
  }
}

/** One target's servers and what its rounds have measured so far. */
interface TargetRun {
  target: Target;
  server: RunningServer;
  /** With `--baseline`, a Vela target's other broker. */
  baseline?: RunningServer;
  rounds: CountedRounds;
  /** The server's peak RSS over the run, bytes. */
  peak: number;
}

/** Start a target's server (and, with `--baseline`, the other broker); undefined if it did not start. */
async function startTarget(
  target: Target,
  opts: CompareOptions,
  report: CompareReport,
): Promise<TargetRun | undefined> {
  log(`\n${TARGET_TITLES[target]}: starting the server …`);
  let server: RunningServer;
  try {
    server = await startServer(target, opts);
  } catch (err) {
    log(`  could not start: ${String(err)}`);
    for (const w of workloadsFor(target, opts.workloads)) {
      report.errors.push({
        target,
        workload: w,
        error: `server did not start: ${String(err).split('\n')[0]}`,
      });
    }
    return undefined;
  }
  const run: TargetRun = { target, server, rounds: new Map(), peak: server.usage().rssBytes };
  if (opts.baselineDir && isVela(target)) {
    log(`  and the baseline's (${opts.baselineDir}) …`);
    try {
      run.baseline = await startServer(target, opts, opts.baselineDir);
      report.baseline ??= { dir: opts.baselineDir, revision: npmVersionOf(opts.baselineDir), rounds: [] };
    } catch (err) {
      log(`  the baseline could not start: ${String(err)}`);
    }
  }
  return run;
}

/** One workload against one server; a failure is noted in the report. */
async function runOne(
  run: TargetRun,
  workload: Workload,
  round: number,
  srv: RunningServer,
  isBaseline: boolean,
  opts: CompareOptions,
  report: CompareReport,
): Promise<void> {
  const { target } = run;
  const spec = specFor(target, workload, srv, opts);
  if (opts.interleave) {
    // The other servers keep the data of their turns, and the kernel writes it back to disk up to
    // ~30 s later: behind that writeback, this target's durable writes stalled (W3a's max latency
    // 67–98 ms in four of five Vela rounds, and in RabbitMQ's). Write it all back first.
    spawnSync('sync', { stdio: 'ignore' });
  }
  if (opts.waitIdleSeconds > 0) {
    const t0 = performance.now();
    const others = await waitIdle(opts.waitIdleSeconds, srv);
    const waited = (performance.now() - t0) / 1000;
    if (others >= 0.25) log(`  (machine still busy: other processes use ${others.toFixed(2)} cores)`);
    else if (waited > 3) log(`  (waited ${Math.round(waited)} s for other processes to go idle)`);
  }
  try {
    const r = await runClient(spec, srv, opts, budgetFor(spec));
    const filed = recordResult(run.rounds, report, r, round, isBaseline);
    if (isBaseline) {
      log(`${summaryLine(r)} (${filed === 'warm-up' ? 'warm-up, ' : ''}baseline)`);
      return;
    }
    // The server's peak over its whole run, the warm-up round's part included.
    run.peak = Math.max(run.peak, r.serverRssPeak);
    if (filed === 'warm-up') {
      log(`${summaryLine(r)} (warm-up)`);
      return;
    }
    log(summaryLine(r));
    // Only worth a line when the part is long enough for a trend (a W3 soak).
    if (r.serverRss?.trend && r.serverRss.trend.samples >= 4)
      log(`         ${formatRssTrend(r.serverRss.trend)}`);
    if (r.serverHeap?.trend && r.serverHeap.trend.samples >= 4)
      log(`         ${formatRssTrend(r.serverHeap.trend, 'server heap used')}`);
  } catch (err) {
    const e: WorkloadError = { target, workload, error: (err as Error).message };
    if (isBaseline) e.error = `baseline: ${e.error}`;
    if (round === 0) e.error = `warm-up round: ${e.error}`;
    report.errors.push(e);
    log(`  ${workload.padEnd(6)} ERROR: ${e.error}`);
  }
}

/** One round of a target's workloads (with a baseline: each workload on both brokers, alternating). */
async function runRound(
  run: TargetRun,
  round: number,
  opts: CompareOptions,
  report: CompareReport,
): Promise<void> {
  const { target } = run;
  if (round > 1 && opts.freshBrokers && isVela(target)) {
    log('  starting the broker anew …');
    await run.baseline?.stop();
    run.baseline = undefined;
    await run.server.stop();
    run.server = await startServer(target, opts);
    if (opts.baselineDir) run.baseline = await startServer(target, opts, opts.baselineDir);
  }
  for (const workload of workloadsFor(target, opts.workloads)) {
    if (interrupted) break;
    // With a baseline, the two go one right after the other, first one then the other first.
    const order: [RunningServer, boolean][] = !run.baseline
      ? [[run.server, false]]
      : round % 2 === 1
        ? [
            [run.server, false],
            [run.baseline, true],
          ]
        : [
            [run.baseline, true],
            [run.server, false],
          ];
    for (const [srv, isBaseline] of order) {
      if (!interrupted) await runOne(run, workload, round, srv, isBaseline, opts, report);
    }
  }
}

/** The rounds to run, in order: 0 is the warm-up round (`--warm-up-round`), then 1 … `--repeat`. */
function roundsOf(opts: CompareOptions): number[] {
  const first = opts.warmUpRound ? 0 : 1;
  return Array.from({ length: opts.repeat - first + 1 }, (_, i) => first + i);
}

/** The line that opens a round, when there is more than one. */
function roundTitle(round: number, opts: CompareOptions): string | undefined {
  if (opts.repeat === 1 && !opts.warmUpRound) return undefined;
  return round === 0 ? 'warm-up round (not counted)' : `round ${round} of ${opts.repeat}`;
}

/** Record a target's results (each workload's median round) and stop its servers. */
async function finishTarget(run: TargetRun, opts: CompareOptions, report: CompareReport): Promise<void> {
  for (const list of run.rounds.values()) {
    const { round: _, ...median } = medianRound(list);
    report.results.push(median);
    if (opts.repeat > 1) (report.rounds ??= []).push(...list);
  }
  report.serverRssPeak[run.target] = run.peak;
  run.rounds.clear();
  await run.baseline?.stop();
  await run.server.stop();
  log(`  ${TARGET_TITLES[run.target]} stopped (peak RSS ${fmtInt(run.peak / 1024 ** 2)} MiB)`);
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.help) {
    console.log(USAGE);
    return;
  }
  if (opts.render) {
    const saved = JSON.parse(readFileSync(opts.render, 'utf8')) as CompareReport;
    process.stdout.write(`${renderTable(saved)}\n`);
    return;
  }
  if (opts.icLogDir) {
    opts.icLogDir = resolve(opts.icLogDir);
    mkdirSync(opts.icLogDir, { recursive: true });
  }
  if (opts.cpuProfDir) {
    opts.cpuProfDir = resolve(opts.cpuProfDir);
    mkdirSync(opts.cpuProfDir, { recursive: true });
  }
  if (opts.heapSampleDir) {
    opts.heapSampleDir = resolve(opts.heapSampleDir);
    mkdirSync(opts.heapSampleDir, { recursive: true });
  }
  const started = performance.now();
  const args = process.argv.slice(2).join(' ');
  const report: CompareReport = {
    command: `npm run bench:compare${args ? ` -- ${args}` : ''}`,
    machine: machineInfo(),
    versions: {},
    targets: opts.targets,
    workloads: opts.workloads,
    results: [],
    errors: [],
    serverRssPeak: {},
    seconds: 0,
    ...(opts.interleave ? { interleaved: true } : {}),
  };
  log(
    `bench:compare${opts.quick ? ' (quick)' : ''}: ${opts.targets.join(', ')}; ${opts.workloads.join(', ')}`,
  );
  log(`${report.machine.cores} × ${report.machine.cpuModel}, load ${report.machine.loadAverageAtStart}`);
  if (opts.nodeFlags.length > 0) log(`every Node process with ${opts.nodeFlags.join(' ')}`);
  const ownSettings = [...opts.brokerFlags, ...(opts.brokerConfig ? [opts.brokerConfig] : [])];
  if (ownSettings.length > 0)
    log(
      `this checkout's Vela broker${opts.baselineDir ? ' (not the baseline)' : ''} with ${ownSettings.join(' ')}`,
    );
  ensurePackages(opts.targets, opts.install, log);
  report.versions = versions(opts.targets);
  if (opts.targets.some(isVela)) {
    report.velaFrom = opts.from;
    process.env[VELA_FROM_ENV] = opts.from; // read by the broker child and the client children
    if (opts.from === 'dist') {
      log('building dist/ (Vela is measured as users run it) …');
      buildDist(ROOT);
      if (opts.baselineDir) buildDist(opts.baselineDir);
    }
  }

  const runs: TargetRun[] = [];
  try {
    if (opts.interleave) {
      // Every server up first; then round by round, every target in turn.
      for (const target of opts.targets) {
        if (interrupted) break;
        const run = await startTarget(target, opts, report);
        if (run) runs.push(run);
      }
      for (const round of roundsOf(opts)) {
        if (interrupted) break;
        const title = roundTitle(round, opts);
        if (title) log(`\n${title}`);
        for (const run of runs) {
          if (interrupted) break;
          log(`  ${TARGET_TITLES[run.target]}`);
          await runRound(run, round, opts, report);
        }
      }
    } else {
      for (const target of opts.targets) {
        if (interrupted) break;
        const run = await startTarget(target, opts, report);
        if (!run) continue;
        runs.push(run);
        for (const round of roundsOf(opts)) {
          if (interrupted) break;
          const title = roundTitle(round, opts);
          if (title) log(`  ${title}`);
          await runRound(run, round, opts, report);
        }
        await finishTarget(runs.pop()!, opts, report);
      }
    }
  } finally {
    for (const run of runs) await finishTarget(run, opts, report);
  }
  report.seconds = (performance.now() - started) / 1000;
  if (interrupted) return;
  if (opts.jsonFile) writeFileSync(opts.jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else process.stdout.write(`\n${renderTable(report)}\n`);
}

async function interrupt(signal: NodeJS.Signals): Promise<void> {
  if (interrupted) return;
  interrupted = true;
  log(`\n${signal}: stopping everything that was started …`);
  currentClient?.kill('SIGKILL');
  await stopAll();
  removeAllDirs();
  process.exit(130);
}

process.on('SIGINT', (s) => void interrupt(s));
process.on('SIGTERM', (s) => void interrupt(s));
process.on('exit', () => {
  killAllNow();
  removeAllDirs();
});

main().then(
  () => process.exit(0),
  async (err) => {
    log(`bench:compare failed: ${(err as Error)?.stack ?? String(err)}`);
    currentClient?.kill('SIGKILL');
    await stopAll();
    removeAllDirs();
    process.exit(1);
  },
);
