/**
 * `vela bench producer|consumer|e2e`: load a broker through Vela's SDK, like RocketMQ's
 * benchmark/producer.sh and consumer.sh, with a live line every second (send/receive TPS, latencies,
 * errors) on stderr and a summary on stdout at the end (`--json` for scripts). Ctrl-C ends the run
 * early, with its summary. The SDK and the progress bar are imported only when a run starts.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { BenchMode, BenchOptions, BenchSummary, Tick } from './run.js';

interface Flags {
  endpoints: string;
  namespace?: string;
  topic: string;
  group: string;
  messageSize: number;
  concurrency: number;
  rate: number;
  duration: number;
  keys?: boolean;
  tag?: string;
  messageGroups: number;
  batching: boolean;
  consumer: 'push' | 'simple';
  create?: boolean;
  admin: string;
  token?: string;
  json?: boolean;
  progress: boolean;
}

const int = (min: number) => (v: string) => {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min)
    throw new InvalidArgumentError(`expected a whole number ≥ ${min}`);
  return n;
};
const seconds = (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number of seconds > 0');
  return n;
};

const f = (n: number, digits = 2) => (Number.isInteger(n) ? String(n) : n.toFixed(digits));

/** The live line: the last second. */
function tickLine(t: Tick, mode: BenchMode): string {
  const parts = [`${String(t.second).padStart(4)}s`];
  if (mode !== 'consumer')
    parts.push(`send ${t.sendTps} msg/s p50 ${f(t.sendP50)} p99 ${f(t.sendP99)} max ${f(t.sendMax)} ms`);
  if (mode !== 'producer')
    parts.push(`recv ${t.receiveTps} msg/s e2e p50 ${f(t.e2eP50)} p99 ${f(t.e2eP99)} ms`);
  parts.push(`errors ${t.errors}`);
  return parts.join(' | ');
}

export function formatSummary(s: BenchSummary): string {
  const lines = [
    `${s.mode} against ${s.endpoints}, topic ${s.topic}${s.group ? `, group ${s.group}` : ''}: ` +
      `${s.messageSize}-byte messages, concurrency ${s.concurrency}${s.rate ? `, rate ${s.rate}/s` : ''}, ${f(s.durationS, 1)} s`,
  ];
  if (s.send) {
    lines.push(
      `send:    ${s.sent} messages, ${s.sendTps} msg/s (${f(s.sendMBps)} MB/s); latency ms ` +
        `p50 ${f(s.send.p50)}  p99 ${f(s.send.p99)}  p99.9 ${f(s.send.p999)}  max ${f(s.send.max)}`,
    );
  }
  if (s.e2e) {
    lines.push(
      `receive: ${s.received} messages, ${s.receiveTps} msg/s; end-to-end ms ` +
        `p50 ${f(s.e2e.p50)}  p99 ${f(s.e2e.p99)}  p99.9 ${f(s.e2e.p999)}  max ${f(s.e2e.max)}`,
    );
  }
  lines.push(`errors:  ${s.errors}${s.firstError ? ` (first: ${s.firstError})` : ''}`);
  return lines.join('\n') + '\n';
}

export function registerBenchCommand(program: Command): void {
  const bench = program
    .command('bench')
    .description(
      "load a broker through Vela's SDK (Vela or a RocketMQ 5 proxy), like RocketMQ's benchmark scripts",
    );
  for (const mode of ['producer', 'consumer', 'e2e'] as const) {
    const cmd = bench
      .command(mode)
      .description(
        mode === 'producer'
          ? 'send as fast as allowed and measure send latency'
          : mode === 'consumer'
            ? 'consume and acknowledge, measuring receive rate and end-to-end latency'
            : 'send and consume at once: throughput and end-to-end latency',
      )
      .addOption(
        new Option('-n, --endpoints <host:port>', 'gRPC endpoint(s) of the broker or proxy')
          .env('VELA_ENDPOINTS')
          .default('127.0.0.1:8081'),
      )
      .option('--namespace <ns>', 'namespace of topic and group')
      .option('-t, --topic <topic>', 'topic', 'VelaBench')
      .option('-d, --duration <s>', 'seconds to run', seconds, 30)
      .option('-w, --concurrency <n>', 'senders, or consumer listeners / receive loops', int(1), 64)
      .option('--create', "create the topic (and group) first, through a Vela broker's admin API")
      .option('--admin <host:port>', 'admin HTTP address for --create', '127.0.0.1:8082')
      .addOption(new Option('--token <token>', 'admin token for --create').env('VELA_ADMIN_TOKEN'))
      .option('--json', 'print the summary as JSON (with the per-second timeline)')
      .option('--no-progress', 'no live line');
    if (mode !== 'consumer') {
      cmd
        .option('-s, --message-size <bytes>', 'body size (at least 16)', int(16), 1024)
        .option('-r, --rate <msgs/s>', 'total send rate; 0 for as fast as possible', int(0), 0)
        .option('-k, --keys', 'give every message a unique key')
        .option('--tag <tag>', 'tag of every message')
        .option('--message-groups <n>', 'send FIFO messages spread over n message groups', int(0), 0)
        .option('--no-batching', "send each message in its own request (the SDK's batching off)");
    }
    if (mode !== 'producer') {
      cmd
        .option('-g, --group <group>', 'consumer group', 'VelaBenchGroup')
        .addOption(
          new Option('--consumer <kind>', 'push or simple consumer')
            .choices(['push', 'simple'])
            .default('push'),
        );
    }
    cmd.action(async (flags: Flags) => {
      const o: BenchOptions = {
        mode,
        endpoints: flags.endpoints,
        ...(flags.namespace ? { namespace: flags.namespace } : {}),
        topic: flags.topic,
        group: flags.group ?? 'VelaBenchGroup',
        messageSize: flags.messageSize ?? 1024,
        concurrency: flags.concurrency,
        rate: flags.rate ?? 0,
        durationMs: flags.duration * 1000,
        keys: !!flags.keys,
        ...(flags.tag ? { tag: flags.tag } : {}),
        messageGroups: flags.messageGroups ?? 0,
        batching: flags.batching ?? true,
        consumer: flags.consumer ?? 'push',
        create: !!flags.create,
        admin: flags.admin,
        ...(flags.token ? { token: flags.token } : {}),
        drainMs: 10_000,
      };
      // Loaded only when a bench runs: `vela admin` and `vela broker` start without the SDK.
      const [{ runBench }, { SingleBar }] = await Promise.all([import('./run.js'), import('cli-progress')]);
      const totalS = Math.ceil(flags.duration);
      const bar = flags.progress
        ? new SingleBar({
            format: '{bar} {line}',
            barsize: 16,
            stream: process.stderr,
            noTTYOutput: true,
            notTTYSchedule: 1000,
            hideCursor: true,
            clearOnComplete: false,
            barCompleteChar: '█',
            barIncompleteChar: '░',
          })
        : null;
      bar?.start(totalS, 0, { line: 'starting…' });
      const ac = new AbortController();
      const onSignal = () => ac.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      let summary: BenchSummary;
      try {
        summary = await runBench(
          o,
          (t) => bar?.update(Math.min(totalS, t.second), { line: tickLine(t, mode) }),
          ac.signal,
        );
      } finally {
        bar?.stop();
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      process.stdout.write(flags.json ? JSON.stringify(summary, null, 2) + '\n' : formatSummary(summary));
    });
  }
}
