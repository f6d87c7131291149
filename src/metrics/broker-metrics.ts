/**
 * The broker's Prometheus metrics, with RocketMQ 5's names, labels and units (its OpenTelemetry
 * Prometheus exporter appends the unit: `rocketmq_consumer_lag_latency_milliseconds`,
 * `rocketmq_storage_size_bytes`), so dashboards built for RocketMQ work on Vela. Every series carries
 * `cluster`, `node_type` (`broker`) and `node_id` (the broker name).
 *
 * Nothing is observed on the hot path here: counters and histograms are read from the broker's plain
 * counters (broker/stats.ts), gauges are computed when Prometheus scrapes. Node's process metrics come
 * from one process-wide registry (process-metrics.ts).
 *
 * One file on purpose: it is the list of every series the broker exports, kept in one place so it
 * can be read against RocketMQ's list and docs/metrics.md.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { Broker } from '../broker/broker.js';
import { isSystemGroup, isSystemTopic } from '../broker/names.js';
import { consumedTopics, dlqSize, topicLag, type TopicLag } from '../broker/lag.js';
import { FLUSH_LATENCY_BUCKETS_MS, MESSAGE_SIZE_BUCKETS, RPC_LATENCY_BUCKETS_MS } from '../broker/stats.js';
import { CollectedHistogram } from './collected-histogram.js';
import { DELAY_BUCKETS_S, FINISH_BUCKETS_MS, LATENESS_BUCKETS_MS } from '../broker/timer/timer-figures.js';
import { processMetrics } from './process-metrics.js';

export interface BrokerMetricsOptions {
  /** The `cluster` label. */
  clusterName: string;
}

export interface BrokerMetrics {
  /** The Content-Type of `render()`'s text. */
  readonly contentType: string;
  /** The exposition text: the broker's series, then the process's. */
  render(): Promise<string>;
}

const bool = (b: boolean) => (b ? 'true' : 'false');
/** A broadcast consumer's state is kept as `group%BROADCAST%name`; series are per group. */
const baseGroup = (g: string) => g.split('%BROADCAST%')[0]!;
/** The producer group every Java Remoting client registers for its own use (`MixAll.CLIENT_INNER_PRODUCER_GROUP`). */
const REMOTING_INNER_PRODUCER = 'CLIENT_INNER_PRODUCER';

const CONSUME_MODE: Record<string, string> = {
  PUSH_CONSUMER: 'push',
  SIMPLE_CONSUMER: 'simple',
  PULL_CONSUMER: 'pull',
  LITE_PUSH_CONSUMER: 'push',
  LITE_SIMPLE_CONSUMER: 'simple',
};

export function createBrokerMetrics(broker: Broker, opts: BrokerMetricsOptions): BrokerMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ cluster: opts.clusterName, node_type: 'broker', node_id: broker.brokerName });
  const stats = broker.stats;
  /** The lag figures of one scrape, computed once for every consumer gauge. */
  let lags: TopicLag[] = [];

  const counter = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (c: Counter<L>) => void,
  ) =>
    new Counter<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        fill(this);
      },
    });
  const gauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (g: Gauge<L>) => void,
  ) =>
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        fill(this);
      },
    });

  // --- messages in -------------------------------------------------------------------------------
  const inLabels = ['topic', 'message_type', 'is_system'] as const;
  const inOf = (c: { topic: string; messageType: string }) => ({
    topic: c.topic,
    message_type: c.messageType.toLowerCase(),
    is_system: bool(isSystemTopic(c.topic)),
  });
  counter('rocketmq_messages_in_total', 'Messages stored by sends', inLabels, (m) => {
    for (const c of stats.inCounters()) m.inc(inOf(c), c.messages);
  });
  counter('rocketmq_throughput_in_total', 'Bytes of message bodies stored by sends', inLabels, (m) => {
    for (const c of stats.inCounters()) m.inc(inOf(c), c.bytes);
  });
  new CollectedHistogram(
    {
      name: 'rocketmq_message_size',
      help: 'Sizes of the message bodies stored by sends (bytes)',
      labelNames: inLabels,
      buckets: MESSAGE_SIZE_BUCKETS,
      registry,
    },
    function* () {
      for (const c of stats.inCounters()) yield { labels: inOf(c), counts: c.sizes };
    },
  );

  // --- messages out ------------------------------------------------------------------------------
  const outLabels = ['topic', 'consumer_group', 'is_retry', 'is_system'] as const;
  const outTotals = () => {
    const m = new Map<
      string,
      { topic: string; group: string; retry: boolean; messages: number; bytes: number }
    >();
    for (const c of stats.outCounters()) {
      const group = baseGroup(c.group);
      const k = `${group}\u0000${c.topic}\u0000${c.retry}`;
      const t = m.get(k) ?? { topic: c.topic, group, retry: c.retry, messages: 0, bytes: 0 };
      t.messages += c.messages;
      t.bytes += c.bytes;
      m.set(k, t);
    }
    return m.values();
  };
  const outOf = (c: { topic: string; group: string; retry: boolean }) => ({
    topic: c.topic,
    consumer_group: c.group,
    is_retry: bool(c.retry),
    is_system: bool(isSystemTopic(c.topic) || isSystemGroup(c.group)),
  });
  counter('rocketmq_messages_out_total', 'Messages handed to consumers', outLabels, (m) => {
    for (const c of outTotals()) m.inc(outOf(c), c.messages);
  });
  counter('rocketmq_throughput_out_total', 'Bytes of message bodies handed to consumers', outLabels, (m) => {
    for (const c of outTotals()) m.inc(outOf(c), c.bytes);
  });
  counter(
    'rocketmq_send_to_dlq_messages_total',
    'Messages moved to a dead-letter queue',
    ['topic', 'consumer_group', 'is_system'] as const,
    (m) => {
      for (const c of stats.dlqCounters()) {
        m.inc(
          {
            topic: c.topic,
            consumer_group: c.group,
            is_system: bool(isSystemTopic(c.topic) || isSystemGroup(c.group)),
          },
          c.messages,
        );
      }
    },
  );

  // --- consumer lag (computed per scrape) --------------------------------------------------------
  const lagGauge = (name: string, help: string, value: (l: TopicLag, retry: boolean) => number) =>
    gauge(name, help, outLabels, (g) => {
      for (const l of lags) {
        for (const retry of [false, true]) {
          if (retry && l.kind !== 'POP') continue;
          g.set(outOf({ topic: l.topic, group: l.group, retry }), value(l, retry));
        }
      }
    });
  const sum = (l: TopicLag, f: (q: TopicLag['queues'][number]) => number) =>
    l.queues.reduce((a, q) => a + f(q), 0);
  const max = (l: TopicLag, f: (q: TopicLag['queues'][number]) => number) =>
    l.queues.reduce((a, q) => Math.max(a, f(q)), 0);
  lagGauge('rocketmq_consumer_ready_messages', 'Messages stored and not yet handed to the group', (l, r) =>
    r ? l.retry.backlog : sum(l, (q) => q.ready),
  );
  lagGauge('rocketmq_consumer_inflight_messages', 'Messages handed out and not yet acknowledged', (l, r) =>
    r ? l.retry.inflight : sum(l, (q) => q.inflight + q.waitingRetry),
  );
  lagGauge('rocketmq_consumer_lag_messages', 'Messages not yet consumed by the group', (l, r) =>
    r ? l.retry.backlog + l.retry.inflight : sum(l, (q) => q.lag),
  );
  lagGauge(
    'rocketmq_consumer_lag_latency_milliseconds',
    'How long the oldest message not yet consumed has waited since it was stored',
    (l, r) => (r ? l.retry.lagLatencyMs : max(l, (q) => q.lagLatencyMs)),
  );
  lagGauge(
    'rocketmq_consumer_queueing_latency_milliseconds',
    'How long the oldest message not yet handed out has waited since it was stored',
    (l, r) => (r ? l.retry.lagLatencyMs : max(l, (q) => q.queueingLatencyMs)),
  );
  gauge(
    'vela_consumer_dlq_messages',
    "Messages in the group's dead-letter queue",
    ['consumer_group'] as const,
    (g) => {
      for (const grp of broker.groups.list()) g.set({ consumer_group: grp.name }, dlqSize(broker, grp.name));
    },
  );

  // --- requests ----------------------------------------------------------------------------------
  new CollectedHistogram(
    {
      name: 'rocketmq_rpc_latency_milliseconds',
      help: 'Time to serve a request, by request and response code',
      labelNames: ['protocol_type', 'request_code', 'response_code', 'is_long_polling'] as const,
      buckets: RPC_LATENCY_BUCKETS_MS,
      registry,
    },
    function* () {
      for (const c of stats.rpcCounterList()) {
        yield {
          labels: {
            protocol_type: c.protocol,
            request_code: c.request,
            response_code: c.responseCode,
            is_long_polling: bool(c.longPolling),
          },
          counts: c.latency,
        };
      }
    },
  );

  // --- delay and transactional messages ---------------------------------------------------------
  const timer = broker.timer.figures;
  const byTopic = (m: Counter<'topic'>, counts: Map<string, number>) => {
    for (const [topic, n] of counts) m.inc({ topic }, n);
  };
  counter('rocketmq_timer_enqueue_total', 'Delay messages scheduled', ['topic'] as const, (m) =>
    byTopic(m, timer.enqueued),
  );
  counter(
    'rocketmq_timer_dequeue_total',
    'Delay messages delivered to their topic',
    ['topic'] as const,
    (m) => byTopic(m, timer.dequeued),
  );
  gauge('rocketmq_timer_message_snapshot', 'Delay messages waiting for their time', [] as const, (g) =>
    g.set(broker.timer.size),
  );
  new CollectedHistogram(
    {
      name: 'rocketmq_delay_message_latency_seconds',
      help: 'How far ahead delay messages were scheduled when they were stored',
      labelNames: [] as const,
      buckets: DELAY_BUCKETS_S,
      registry,
    },
    function* () {
      yield { labels: {}, counts: timer.delay };
    },
  );
  new CollectedHistogram(
    {
      name: 'vela_timer_delivery_lateness_milliseconds',
      help: 'How late past its delivery time a delay message was appended to its topic',
      labelNames: [] as const,
      buckets: LATENESS_BUCKETS_MS,
      registry,
    },
    function* () {
      yield { labels: {}, counts: timer.lateness };
    },
  );
  const tx = broker.transactions.figures;
  counter('rocketmq_commit_messages_total', 'Transactional messages committed', ['topic'] as const, (m) =>
    byTopic(m, tx.committed),
  );
  counter('rocketmq_rollback_messages_total', 'Transactional messages rolled back', ['topic'] as const, (m) =>
    byTopic(m, tx.rolledBack),
  );
  gauge(
    'rocketmq_half_messages',
    'Transactions neither committed nor rolled back',
    ['topic'] as const,
    (g) => {
      for (const t of broker.transactions.status()) g.set({ topic: t.topic }, t.open);
    },
  );
  new CollectedHistogram(
    {
      name: 'rocketmq_finish_message_latency_milliseconds',
      help: 'Time from a half message stored to its commit or rollback',
      labelNames: ['topic'] as const,
      buckets: FINISH_BUCKETS_MS,
      registry,
    },
    function* () {
      for (const [topic, h] of tx.finish) yield { labels: { topic }, counts: h };
    },
  );

  // --- connections and metadata ------------------------------------------------------------------
  gauge(
    'rocketmq_producer_connections',
    'Connected producers',
    ['language', 'version', 'protocol_type'] as const,
    (g) => {
      const n = new Map<string, { language: string; version: string; count: number }>();
      for (const s of broker.sessions.list()) {
        if (s.clientType !== 'PRODUCER') continue;
        const language = (s.language ?? 'unknown').toLowerCase();
        const version = (s.version ?? '').toLowerCase();
        const k = `${language}\u0000${version}`;
        n.set(k, { language, version, count: (n.get(k)?.count ?? 0) + 1 });
      }
      for (const c of n.values())
        g.set({ language: c.language, version: c.version, protocol_type: 'grpc' }, c.count);
      // Remoting producers: each client once, whatever its groups (not the group every Java client
      // registers for its own internal producer, which consumers have too).
      const remoting = new Map<string, { language: string; version: string }>();
      for (const group of broker.consumers.producerGroupNames()) {
        if (group === REMOTING_INNER_PRODUCER) continue;
        for (const p of broker.consumers.producerClients(group)) {
          remoting.set(p.clientId, { language: p.language.toLowerCase(), version: String(p.version) });
        }
      }
      const r = new Map<string, { language: string; version: string; count: number }>();
      for (const p of remoting.values()) {
        const k = `${p.language}\u0000${p.version}`;
        r.set(k, { ...p, count: (r.get(k)?.count ?? 0) + 1 });
      }
      for (const c of r.values())
        g.set({ language: c.language, version: c.version, protocol_type: 'remoting' }, c.count);
    },
  );
  const consumerLabels = [
    'consumer_group',
    'language',
    'version',
    'consume_mode',
    'protocol_type',
    'is_system',
  ] as const;
  gauge('rocketmq_consumer_connections', 'Connected consumers', consumerLabels, (g) => {
    const n = new Map<string, { labels: Record<(typeof consumerLabels)[number], string>; count: number }>();
    for (const s of broker.sessions.list()) {
      const mode = CONSUME_MODE[s.clientType];
      if (!mode || !s.group) continue;
      const labels = {
        consumer_group: s.group,
        language: (s.language ?? 'unknown').toLowerCase(),
        version: (s.version ?? '').toLowerCase(),
        consume_mode: mode,
        protocol_type: 'grpc',
        is_system: bool(isSystemGroup(s.group)),
      };
      const k = Object.values(labels).join('\u0000');
      n.set(k, { labels, count: (n.get(k)?.count ?? 0) + 1 });
    }
    for (const group of broker.consumers.groupNames()) {
      for (const c of broker.consumers.clients(group)) {
        const labels = {
          consumer_group: group,
          language: c.language.toLowerCase(),
          version: String(c.version),
          consume_mode: c.consumeType === 'CONSUME_ACTIVELY' ? 'pull' : 'push',
          protocol_type: 'remoting',
          is_system: bool(isSystemGroup(group)),
        };
        const k = Object.values(labels).join('\u0000');
        n.set(k, { labels, count: (n.get(k)?.count ?? 0) + 1 });
      }
    }
    for (const c of n.values()) g.set(c.labels, c.count);
  });
  gauge('rocketmq_topic_number', 'Topics', [] as const, (g) => g.set(broker.topics.list().length));
  gauge('rocketmq_consumer_group_number', 'Consumer groups', [] as const, (g) =>
    g.set(broker.groups.list().length),
  );

  // --- storage -----------------------------------------------------------------------------------
  const storageLabels = ['storage_type', 'storage_medium'] as const;
  const local = { storage_type: 'local', storage_medium: 'disk' };
  gauge('rocketmq_storage_size_bytes', 'Bytes of the commit log on disk', storageLabels, (g) => {
    const s = broker.storageStats();
    g.set(local, Math.max(0, s.logEnd - s.logStart));
  });
  let reserveMs = 0;
  gauge(
    'rocketmq_storage_message_reserve_time_milliseconds',
    'Age of the oldest message still stored',
    storageLabels,
    (g) => g.set(local, reserveMs),
  );
  new CollectedHistogram(
    {
      name: 'rocketmq_storage_flush_latency_milliseconds',
      help: 'Time from a send reaching the store until it is durable (group commit: write and fsync)',
      labelNames: storageLabels,
      buckets: FLUSH_LATENCY_BUCKETS_MS,
      registry,
    },
    function* () {
      yield { labels: local, counts: stats.flush };
    },
  );
  gauge(
    'vela_storage_disk_used_ratio',
    'Used fraction of the data directory’s file system',
    [] as const,
    (g) => g.set(broker.storageStats().diskUsedRatio),
  );
  gauge(
    'vela_flow_control_refusing',
    'Whether sends are refused: per topic over its backlog limit, or `*` when the disk is too full',
    ['topic'] as const,
    (g) => {
      for (const r of broker.flow.refusing()) g.set({ topic: r.topic }, 1);
      g.set({ topic: '*' }, broker.storageStats().refusingWrites ? 1 : 0);
    },
  );
  gauge('vela_uptime_seconds', 'Seconds since the broker opened', [] as const, (g) =>
    g.set(Math.max(0, (broker.clock.now() - stats.startedAt) / 1000)),
  );

  return {
    contentType: registry.contentType,
    async render() {
      const figures: TopicLag[] = [];
      for (const { group, topic } of consumedTopics(broker)) {
        if (broker.topics.get(topic)) figures.push(await topicLag(broker, group, topic));
      }
      lags = figures;
      const oldest = await broker.oldestStoreTimestamp();
      reserveMs = oldest ? Math.max(0, broker.clock.now() - oldest) : 0;
      return (await registry.metrics()) + '\n' + (await processMetrics().metrics());
    },
  };
}
