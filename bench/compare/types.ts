/**
 * Shapes shared by the comparison harness (`npm run bench:compare`): what a client child is asked to
 * run, what it reports, and what the orchestrator adds from the server's side.
 */

import type { RssSample, RssTrend } from './rss-trend.js';
import type { PauseBreakdown } from './pauses.js';

/**
 * The systems compared. Vela runs three times: with its own SDK, with the official RocketMQ Node client
 * (both gRPC), and with the Java Remoting client (remoting-rows.ts).
 */
export const TARGETS = ['vela-sdk', 'vela-official', 'vela-remoting', 'rabbitmq', 'nats', 'redis'] as const;
export type Target = (typeof TARGETS)[number];

export const TARGET_TITLES: Record<Target, string> = {
  'vela-sdk': 'Vela + Vela SDK',
  'vela-official': 'Vela + rocketmq-client-nodejs',
  'vela-remoting': 'Vela + Java rocketmq-client (Remoting)',
  rabbitmq: 'RabbitMQ quorum + amqplib',
  nats: 'NATS JetStream + nats.js',
  redis: 'Redis Streams + ioredis',
};

export const isVela = (t: Target): boolean =>
  t === 'vela-sdk' || t === 'vela-official' || t === 'vela-remoting';

/**
 * The workloads. `w2pull` exists only for Vela's SDK (its PullConsumer); `w3a`/`w3b` are W3 at the
 * two fixed rates.
 */
export const WORKLOADS = ['w1a', 'w1b', 'w2', 'w2pull', 'w3a', 'w3b'] as const;
export type Workload = (typeof WORKLOADS)[number];

/** What one client child runs: everything it needs, as JSON on its command line. */
export interface WorkloadSpec {
  workload: Workload;
  target: Target;
  /** Where the server listens (the peer's own protocol port; for Vela the gRPC port). */
  port: number;
  /** Vela only: the admin HTTP port (topics and groups are created through it). */
  adminPort?: number;
  /** Queue / stream / topic name, unique to this workload. */
  queue: string;
  /** Messages to produce or consume in the measured part. */
  count: number;
  /** Measured part ends after this long even if `count` was not reached. */
  timeLimitMs: number;
  /** Sends in flight (W1a: 1,024; W1b: 1). */
  inflight: number;
  /** Untimed sends before the measured part (warms up connections and the JIT). */
  warmup: number;
  /** W3: target send rate, msgs/s. */
  rate?: number;
  /** W3: untimed lead-in at the target rate before the measured window. */
  warmupMs?: number;
  /** W3: how long to wait after the window for messages still on their way. */
  drainMs?: number;
  /** Size of every message body in bytes. */
  bodySize: number;
  /**
   * W3 with `--w3-pauses`: record this process's pauses, and read the broker's from `brokerFile`
   * (Vela's broker child writes it; absent for other servers).
   */
  pauses?: { brokerFile?: string };
}

export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

/** Garbage-collection pauses of a process over an interval (V8's `gc` performance entries). */
export interface GcPauses {
  count: number;
  /** Sum of the pauses, ms. */
  totalMs: number;
  /** The longest pause, ms. */
  maxMs: number;
}

/** What a client child prints as its `RESULT` line. */
export interface ClientResult {
  workload: Workload;
  target: Target;
  /** Messages done in the measured part: confirmed sends, or consumed-and-acked messages. */
  ok: number;
  /** Sends or acks that failed (errors, time-outs, or still unanswered at the end). */
  failed: number;
  /** The first failure's message, for the table's notes. */
  firstError?: string;
  /** Length of the measured part, seconds. */
  seconds: number;
  /** ok / seconds (W3: consumption rate during the window). */
  rate: number;
  /** The measured part stopped at its time limit before `count` was reached. */
  timeLimited: boolean;
  /** W1: per-send latency; W3: end-to-end latency of messages sent in the window (ms). */
  latency?: LatencySummary;
  /** W3: the rate asked for, msgs/s. */
  targetRate?: number;
  /** W3: messages sent in the window and the rate that was achieved. */
  sent?: number;
  sendRate?: number;
  /** W3: sent in the window but not received by the end of the drain. */
  missing?: number;
  /** Client process CPU time (user + system) in the measured part, microseconds. */
  clientCpuUs: number;
  /** W3: the client process's garbage-collection pauses that began in the measured window. */
  clientGc?: GcPauses;
  /** W3 with `--w3-pauses`: the slow messages by the pauses they overlapped. */
  pauses?: PauseBreakdown;
  /** Consumers: whether the server, asked afterwards, had nothing left un-acked (null: not checked). */
  drained?: boolean | null;
}

/** A client result with the server-side figures the orchestrator measured over the same interval. */
export interface WorkloadResult extends ClientResult {
  /** Server process tree CPU time (user + system) over the measured part, microseconds. */
  serverCpuUs: number;
  /** Peak server RSS while the workload's client ran, bytes. */
  serverRssPeak: number;
  /** Server RSS when the measured part ended, bytes. */
  serverRssEnd: number;
  /** The server's RSS sampled every `--rss-every` s over the measured part, and its trend. */
  serverRss?: { samples: RssSample[]; trend: RssTrend | null };
  /** Vela only: the broker's JavaScript heap in use, sampled with the RSS (from its admin API). */
  serverHeap?: { samples: RssSample[]; trend: RssTrend | null };
  /**
   * CPU used by every other process on the machine during the measured part (machine busy time less
   * the server's and the client's), in cores: non-zero means the figures were measured on a machine
   * that was also doing other work.
   */
  otherCores: number;
  /**
   * The measured part on the monotonic clock, µs (`process.hrtime`, the clock of V8 CPU profiles):
   * `profile-summary.ts --window begin,end` restricts a profile to it.
   */
  monotonicUs: { begin: number; end: number };
}

/** A workload that could not be run (the client crashed, a server failed …). */
export interface WorkloadError {
  workload: Workload;
  target: Target;
  error: string;
}

export interface MachineInfo {
  date: string;
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  kernel: string;
  node: string;
  loadAverageAtStart: string;
}

export interface CompareReport {
  command: string;
  machine: MachineInfo;
  /** Version of each server and client library used. */
  versions: Record<string, string>;
  targets: Target[];
  workloads: Workload[];
  /** One result per target and workload: with `--repeat`, its median round (`medianRound`). */
  results: WorkloadResult[];
  /** Where Vela's broker and SDK were loaded from (`--from`): the compiled dist/ or the sources. */
  velaFrom?: 'dist' | 'src';
  /** `--interleave`: each round ran every target in turn (rounds outside, targets inside). */
  interleaved?: boolean;
  /**
   * With `--warm-up-round`: each target's round 0 (this checkout's broker only with `--baseline`), run
   * on the same servers before round 1; in no median and no ratio.
   */
  warmUp?: WorkloadResult[];
  /** With `--repeat` N > 1: every round's result, in the order they ran. */
  rounds?: (WorkloadResult & { round: number })[];
  /** With `--baseline`: the other checkout's broker, every round (the paired rounds are `rounds`, or `results` for one round). */
  baseline?: { dir: string; revision: string; rounds: (WorkloadResult & { round: number })[] };
  errors: WorkloadError[];
  /** Peak RSS of each target's server over its whole run, bytes. */
  serverRssPeak: Partial<Record<Target, number>>;
  /** Wall-clock seconds of the whole run. */
  seconds: number;
}
