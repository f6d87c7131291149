/**
 * Command line of `npm run bench:compare` and the workload sizes it implies: a pure function of argv,
 * so the sizes and filters can be unit-tested.
 */
import { remotingWorkloads } from './remoting-rows.js';
import { parseCompareConfig } from './servers/child-settings.js';
import { TARGETS, WORKLOADS, isVela, type Target, type Workload } from './types.js';

export interface CompareOptions {
  quick: boolean;
  json: boolean;
  /** Also write the full JSON report to this file (the table still goes to stdout). */
  jsonFile?: string;
  /** Run nothing: print the table of a JSON report saved earlier. */
  render?: string;
  /** Install missing Debian packages with apt-get (default on). */
  install: boolean;
  targets: Target[];
  workloads: Workload[];
  sizes: Record<Workload, WorkloadSize>;
  /**
   * Before each workload, wait up to this many seconds for the machine to be idle (other processes
   * using under a quarter of a core); 0 = never wait.
   */
  waitIdleSeconds: number;
  /** Write V8 CPU profiles of Vela's broker and of every client child here. */
  cpuProfDir?: string;
  /** Write V8 inline-cache logs (`--log-ic`) of Vela's broker and of every Node client child here. */
  icLogDir?: string;
  /** Write a sampled allocation profile of Vela's broker here: what survived young-generation GCs. */
  heapSampleDir?: string;
  /** V8/Node flags for Vela's broker and for every Node client child (all targets alike). */
  nodeFlags: string[];
  /**
   * V8/Node flags for this checkout's Vela broker only (after `nodeFlags`; not the `--baseline`
   * broker's, so `--baseline` of the same checkout is an alternating A/B of the flags).
   */
  brokerFlags: string[];
  /**
   * Broker settings (a JSON object) for this checkout's Vela broker only, merged over
   * `VELA_COMPARE_CONFIG`'s (top-level keys replace theirs): with `--baseline` of the same checkout,
   * an alternating A/B of a setting.
   */
  brokerConfig?: string;
  /** Sample the server's RSS this often (seconds) during each measured part; summed up as a trend. */
  rssEverySeconds: number;
  /** Run each target's workloads this many rounds (one server start); the table shows the medians. */
  repeat: number;
  /**
   * Start Vela's brokers (this checkout's and the `--baseline`'s) anew for every round, so that
   * rounds sample broker processes, not one process each: a Vela broker's throughput stays up to
   * ~10 % apart from another instance of the same code for the life of the process.
   */
  freshBrokers: boolean;
  /** Rounds outside, targets inside: every target's servers stay up, each round runs them in turn. */
  interleave: boolean;
  /**
   * Run a round 0 of every workload on every target's server before the counted rounds: shown, never
   * in a median or a ratio. The figures then come from servers in their steady state, as users run
   * them (a Vela broker's first round of W2 costs it more CPU per message than its later ones;
   * docs/benchmarks.md, twenty-sixth session).
   */
  warmUpRound: boolean;
  /**
   * W3: both processes record their pauses (collections, and event-loop turns of 4 ms or more), and
   * each W3 round reports which of them its slow messages overlapped (pauses.ts).
   */
  w3Pauses: boolean;
  /**
   * Another checkout of Vela (a directory with its node_modules): its broker runs every Vela workload
   * of every round too, right before or after this checkout's (the order alternates), with this
   * checkout's clients; the report adds each figure's ratio per round.
   */
  baselineDir?: string;
  /** Vela's broker and SDK: the compiled dist/ users run (built first), or the sources under tsx. */
  from: 'dist' | 'src';
  help: boolean;
}

export interface WorkloadSize {
  /** Messages in the measured part (W3: rate × window). */
  count: number;
  /** Measured part's time limit, ms (W3: the window). */
  timeLimitMs: number;
  /** Untimed sends first. */
  warmup: number;
  /** Sends in flight. */
  inflight: number;
  /** W3 only. */
  rate?: number;
  warmupMs?: number;
  drainMs?: number;
}

export const USAGE = `Usage: npm run bench:compare -- [options]

Runs W1a (produce, 1,024 in flight), W1b (produce one at a time), W2 (consume + ack a backlog;
W2-pull with Vela's PullConsumer) and W3 (end-to-end latency at 5,000 and 20,000 msgs/s) against
Vela (its SDK and rocketmq-client-nodejs), RabbitMQ, NATS JetStream and Redis Streams, and prints
one table with Vela's ratio to each peer.

Options:
  --quick               a short run (smaller counts and windows)
  --only LIST           targets to run, comma-separated: vela (the three Vela rows), vela-sdk,
                        vela-official, vela-remoting (Java client over Remoting: W1a, W1b, W2),
                        rabbitmq, nats, redis
  --skip LIST           targets to leave out (same names)
  --workloads LIST      w1a, w1b, w2, w2pull, w3 (both rates), w3a (5,000/s), w3b (20,000/s)
  --w3-seconds N        length of each W3 window (default 8, quick 3)
  --w3-rate N           W3a's send rate, msgs/s (default 5,000), e.g. for a soak at a rate the
                        machine sustains
  --w3-pauses           W3: record the client's and (Vela) the broker's pauses — collections and
                        event-loop turns of 4 ms or more — and say which of them the messages
                        slower than 5 ms overlapped (a 1 ms timer in each process while on)
  --rss-every N         sample the server's RSS every N s during each measured part and print
                        min / max / slope (MiB per minute); default 5
  --repeat N            run each target's workloads N rounds (one server start per target) and
                        show each figure's median round, with the spread under the table
                        (single runs move ±25 % on a busy 2-core machine); default 1
  --fresh-brokers       start Vela's broker (and the --baseline broker) anew for every round: with
                        --repeat, the rounds then sample broker processes, not one process each
                        (two processes of the same code can stay ~10 % apart for their whole life)
  --interleave          with --repeat: start every target's server first, then run round 1 of
                        every target, round 2 of every target, …, so that each round's targets
                        ran minutes apart at most, and print each Vela figure's ratio to each peer
                        per round (the machine's slow and fast spells last minutes and move single
                        runs by ±20 %; a target's rounds all in a row can land in one spell); each
                        workload first syncs the page cache and waits for the other servers to
                        go idle (--wait-idle 60)
  --warm-up-round       before round 1, run one round of every workload on every target's server
                        (round 0): shown under the table, never counted in a median or a ratio,
                        so that the counted rounds measure servers that have done the work before
                        (a Vela broker's first W2 cost 1.03–1.37× the CPU per message of its later
                        ones in fifteen runs; RabbitMQ's rounds are alike). Not with --fresh-brokers
  --baseline DIR        also run the broker of another Vela checkout DIR (with its node_modules,
                        e.g. a git worktree of the commit before a change) in every round of every
                        Vela workload, right before or after this one's (alternating), with this
                        checkout's clients, and print each figure's ratio per round: a before/after
                        that the machine's drift between runs does not swamp
  --from dist|src       Vela's broker and SDK from the compiled dist/ that users run (built with
                        tsc first; the default) or from the TypeScript sources under tsx (whose
                        esbuild wraps run-time functions in __name calls; what runs before 2026-11-27
                        used) — also what a --baseline from before that date runs
  --json                print the full report as JSON instead of the table
  --json-file FILE      also write the full report as JSON to FILE
  --render FILE         run nothing; print the table of a report saved with --json-file
  --wait-idle N         before each workload wait up to N s for other processes on the machine
                        to quiet down (for shared machines; default 0, with --interleave 60)
  --cpu-prof DIR        write V8 CPU profiles of Vela's broker and of each client to DIR
  --ic-log DIR          write V8 inline-cache logs (--log-ic) of Vela's broker and of each Node
                        client to DIR; bench/compare/ic-summary.ts lists the sites that missed most
  --heap-sample DIR     write a sampled allocation profile of Vela's broker to DIR: objects that
                        outlived two young-generation collections (what fills the old generation);
                        bench/compare/heap-summary.ts lists where they were allocated
  --node-flags "FLAGS"  start Vela's broker and every Node client (of every target) with these
                        Node/V8 flags, e.g. "--initial-heap-size=256": what the processes' own
                        settings do to a figure (default: none, as users run them)
  --broker-flags "FLAGS"
                        start this checkout's Vela broker (not the clients, not the --baseline
                        broker) with these Node/V8 flags too: with --baseline of this same
                        checkout, an A/B of a broker runtime flag in alternating rounds
  --broker-config JSON  this checkout's Vela broker (not the --baseline broker) with these broker
                        settings too, a JSON object merged over VELA_COMPARE_CONFIG's (top-level
                        keys replace theirs), e.g. '{"flush":"async"}': with --baseline of this same
                        checkout, an A/B of a setting in alternating rounds
  --no-install          never run apt-get; fail if a server is missing
  --help                this text`;

/** Options whose value is a list of Node/V8 flags. */
const FLAG_LISTS = new Set(['--node-flags', '--broker-flags']);

/** A space-separated list of Node/V8 flags: each must start with `--`. */
function parseFlagList(option: string, raw: string): string[] {
  const flags = raw.split(/\s+/).filter(Boolean);
  for (const f of flags) if (!f.startsWith('--')) throw new Error(`${option}: "${f}" is not a --flag`);
  return flags;
}

/** The Node/V8 flags a Vela broker starts with: `--broker-flags` are for this checkout's only. */
export function brokerNodeFlags(
  o: Pick<CompareOptions, 'nodeFlags' | 'brokerFlags'>,
  baseline: boolean,
): string[] {
  return baseline ? o.nodeFlags : [...o.nodeFlags, ...o.brokerFlags];
}

/** Targets named on the command line: `vela` stands for both Vela rows. */
export function parseTargets(list: string): Target[] {
  const out = new Set<Target>();
  for (const raw of list.split(',')) {
    const name = raw.trim().toLowerCase();
    if (name === '') continue;
    if (name === 'vela') {
      out.add('vela-sdk');
      out.add('vela-official');
      out.add('vela-remoting');
    } else if ((TARGETS as readonly string[]).includes(name)) {
      out.add(name as Target);
    } else {
      throw new Error(`unknown target "${raw}" (known: vela, ${TARGETS.join(', ')})`);
    }
  }
  return TARGETS.filter((t) => out.has(t));
}

export function parseWorkloads(list: string): Workload[] {
  const out = new Set<Workload>();
  for (const raw of list.split(',')) {
    const name = raw.trim().toLowerCase();
    if (name === '') continue;
    if (name === 'w3') {
      out.add('w3a');
      out.add('w3b');
    } else if ((WORKLOADS as readonly string[]).includes(name)) {
      out.add(name as Workload);
    } else {
      throw new Error(`unknown workload "${raw}" (known: ${WORKLOADS.join(', ')}, w3)`);
    }
  }
  return WORKLOADS.filter((w) => out.has(w));
}

/** `--interleave`'s default `--wait-idle`, seconds. */
export const INTERLEAVE_WAIT_IDLE_S = 60;

/** Sizes of the default or the quick run; W3's window can be set apart (e.g. a 600 s soak). */
export function workloadSizes(
  quick: boolean,
  w3Seconds?: number,
  w3Rate?: number,
): Record<Workload, WorkloadSize> {
  const windowMs = Math.round((w3Seconds ?? (quick ? 3 : 8)) * 1000);
  const w3 = (rate: number): WorkloadSize => ({
    count: Math.round((rate * windowMs) / 1000),
    timeLimitMs: windowMs,
    warmup: 0,
    inflight: 10_000,
    rate,
    // A lead-in of 1 s (before 2026-11-29) measured new client processes still warming up: W3a's p99
    // over six rounds 3.50–7.35 ms for Vela, 3.76–6.01 RabbitMQ, 5.67–11.8 NATS; after 4 s, 2.71–5.07,
    // 3.38–4.96, 6.24–8.51 (docs/benchmarks.md, twenty-fifth session). Every peer gets the same.
    warmupMs: quick ? 500 : 4000,
    drainMs: quick ? 3000 : 5000,
  });
  const backlog = quick ? 20_000 : 100_000;
  // Messages consumed before the measured part, untimed (as W1's warm-up sends): a server's first
  // run of its consume path is not what it does all day, nor a client's. Every peer gets the same.
  // 20,000 (before 2026-11-29) left the consuming client's process in its first full collection and
  // V8 still optimizing its per-call functions (receive, ack, stream set-up) through the measured part:
  // Vela's SDK spent 4.35 µs of CPU per message there against 3.3 once past 80,000 (RabbitMQ's and
  // NATS's clients changed by 0–2 %; docs/benchmarks.md, twenty-fifth session).
  const w2Warmup = quick ? 5000 : 100_000;
  // The slowest client (the official Node client, ~7,000 msgs/s) consumes warm-up and backlog in it.
  const w2LimitMs = quick ? 8000 : 40_000;
  return {
    w1a: {
      count: quick ? 20_000 : 100_000,
      timeLimitMs: quick ? 6000 : 15_000,
      warmup: 2000,
      inflight: 1024,
    },
    // One send at a time: 200 warm-up sends (before 2026-11-28) left V8 compiling each client's send
    // path through the measured part (~165 functions optimized in it, the SDK's CPU per send 250 µs
    // against 120 once warm); 3,000 take ~1.5 s. Every peer gets the same.
    w1b: { count: quick ? 500 : 3000, timeLimitMs: quick ? 3000 : 8000, warmup: 3000, inflight: 1 },
    w2: { count: backlog, timeLimitMs: w2LimitMs, warmup: w2Warmup, inflight: 1024 },
    w2pull: { count: backlog, timeLimitMs: w2LimitMs, warmup: w2Warmup, inflight: 1024 },
    w3a: w3(w3Rate ?? 5000),
    w3b: w3(20_000),
  };
}

/** Which workloads a target runs: the pull consumer is Vela SDK's alone. */
export function workloadsFor(target: Target, selected: readonly Workload[]): Workload[] {
  if (target === 'vela-remoting') return remotingWorkloads(selected);
  return selected.filter((w) => w !== 'w2pull' || target === 'vela-sdk');
}

export function parseArgs(argv: readonly string[]): CompareOptions {
  let quick = false;
  let json = false;
  let install = true;
  let help = false;
  let targets: Target[] = [...TARGETS];
  let workloads: Workload[] = [...WORKLOADS];
  let w3Seconds: number | undefined;
  let w3Rate: number | undefined;
  let rssEverySeconds = 5;
  let cpuProfDir: string | undefined;
  let icLogDir: string | undefined;
  let heapSampleDir: string | undefined;
  let nodeFlags: string[] = [];
  let brokerFlags: string[] = [];
  let brokerConfig: string | undefined;
  let waitIdleSeconds: number | undefined;
  let repeat = 1;
  let freshBrokers = false;
  let interleave = false;
  let warmUpRound = false;
  let w3Pauses = false;
  let jsonFile: string | undefined;
  let render: string | undefined;
  let baselineDir: string | undefined;
  let from: 'dist' | 'src' = 'dist';
  const value = (i: number, flag: string): string => {
    const v = argv[i + 1];
    // --node-flags and --broker-flags take flags: their value may start with "--".
    if (v === undefined || (v.startsWith('--') && !FLAG_LISTS.has(flag)))
      throw new Error(`${flag} needs a value`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const [flag, inline] = eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined];
    const take = (): string => inline ?? value(i++, flag!);
    switch (flag) {
      case '--quick':
        quick = true;
        break;
      case '--json':
        json = true;
        break;
      case '--no-install':
        install = false;
        break;
      case '--help':
      case '-h':
        help = true;
        break;
      case '--only':
        targets = parseTargets(take());
        break;
      case '--skip': {
        const skipped = new Set(parseTargets(take()));
        targets = targets.filter((t) => !skipped.has(t));
        break;
      }
      case '--workloads':
        workloads = parseWorkloads(take());
        break;
      case '--w3-seconds': {
        const raw = take();
        w3Seconds = Number(raw);
        if (!Number.isFinite(w3Seconds) || w3Seconds <= 0)
          throw new Error(`--w3-seconds: bad value "${raw}"`);
        break;
      }
      case '--w3-rate': {
        const raw = take();
        w3Rate = Number(raw);
        if (!Number.isInteger(w3Rate) || w3Rate <= 0) throw new Error(`--w3-rate: bad value "${raw}"`);
        break;
      }
      case '--rss-every': {
        const raw = take();
        rssEverySeconds = Number(raw);
        if (!Number.isFinite(rssEverySeconds) || rssEverySeconds <= 0)
          throw new Error(`--rss-every: bad value "${raw}"`);
        break;
      }
      case '--wait-idle': {
        const raw = take();
        waitIdleSeconds = Number(raw);
        if (!Number.isFinite(waitIdleSeconds) || waitIdleSeconds < 0) {
          throw new Error(`--wait-idle: bad value "${raw}"`);
        }
        break;
      }
      case '--repeat': {
        const raw = take();
        repeat = Number(raw);
        if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat: bad value "${raw}"`);
        break;
      }
      case '--fresh-brokers':
        freshBrokers = true;
        break;
      case '--interleave':
        interleave = true;
        break;
      case '--warm-up-round':
        warmUpRound = true;
        break;
      case '--w3-pauses':
        w3Pauses = true;
        break;
      case '--render':
        render = take();
        break;
      case '--json-file':
        jsonFile = take();
        break;
      case '--cpu-prof':
        cpuProfDir = take();
        break;
      case '--ic-log':
        icLogDir = take();
        break;
      case '--heap-sample':
        heapSampleDir = take();
        break;
      case '--node-flags':
        nodeFlags = parseFlagList(flag, take());
        break;
      case '--broker-flags':
        brokerFlags = parseFlagList(flag, take());
        break;
      case '--broker-config': {
        const raw = take();
        parseCompareConfig(raw, '--broker-config');
        brokerConfig = raw;
        break;
      }
      case '--baseline':
        baselineDir = take();
        break;
      case '--from': {
        const raw = take();
        if (raw !== 'dist' && raw !== 'src') throw new Error(`--from: "${raw}" is neither dist nor src`);
        from = raw;
        break;
      }
      default:
        throw new Error(`unknown option "${arg}"\n\n${USAGE}`);
    }
  }
  if (!help && targets.length === 0) throw new Error('no target left to run');
  if (!help && workloads.length === 0) throw new Error('no workload selected');
  if (!help && baselineDir !== undefined && !targets.some(isVela))
    throw new Error('--baseline compares Vela brokers: select a Vela target');
  if (warmUpRound && freshBrokers)
    throw new Error('--warm-up-round warms the servers that --fresh-brokers replaces every round: use one');
  return {
    quick,
    json,
    install,
    help,
    targets,
    workloads,
    sizes: workloadSizes(quick, w3Seconds, w3Rate),
    // Interleaved, the servers not measured stay up, and one may still be busy with its last round
    // (a Redis AOF rewrite, a RabbitMQ log compaction): wait for it, unless told otherwise.
    waitIdleSeconds: waitIdleSeconds ?? (interleave ? INTERLEAVE_WAIT_IDLE_S : 0),
    rssEverySeconds,
    repeat,
    freshBrokers,
    interleave,
    warmUpRound,
    w3Pauses,
    from,
    nodeFlags,
    brokerFlags,
    ...(brokerConfig !== undefined ? { brokerConfig } : {}),
    ...(cpuProfDir !== undefined ? { cpuProfDir } : {}),
    ...(icLogDir !== undefined ? { icLogDir } : {}),
    ...(heapSampleDir !== undefined ? { heapSampleDir } : {}),
    ...(baselineDir !== undefined ? { baselineDir } : {}),
    ...(jsonFile !== undefined ? { jsonFile } : {}),
    ...(render !== undefined ? { render } : {}),
  };
}
