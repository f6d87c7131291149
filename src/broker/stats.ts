/**
 * The broker's counters: what came in (per topic and message type), what went out (per group, topic
 * and retry-or-not), what went to a DLQ, how long requests and store appends took. The hot paths bump
 * plain numbers here (one Map lookup, a few additions, a bucket found by a short scan); metrics/ turns
 * them into Prometheus series and admin/ into the console's charts, each at its own pace, so neither
 * a scrape nor a label set costs anything on a send or a receive.
 *
 * Bucket bounds are RocketMQ 5's (BrokerMetricsManager, RemotingMetricsManager), so the exported
 * histograms line up with its dashboards.
 */

/** `rocketmq_message_size`: 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB. */
export const MESSAGE_SIZE_BUCKETS: readonly number[] = [1024, 4096, 524_288, 1_048_576, 2_097_152, 4_194_304];
/** `rocketmq_rpc_latency` (ms). */
export const RPC_LATENCY_BUCKETS_MS: readonly number[] = [1, 3, 5, 7, 10, 100, 1000, 2000, 3000];
/** Store append until durable (ms): group commit's write + fsync as a sender waits for it. */
export const FLUSH_LATENCY_BUCKETS_MS: readonly number[] = [0.5, 1, 2, 5, 10, 20, 50, 100, 500, 1000];

/** A histogram as plain numbers: `counts[i]` observations ≤ `bounds[i]` (non-cumulative), last = +Inf. */
export class Histogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number, times = 1): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]! += times;
    this.sum += v * times;
    this.count += times;
  }
}

export interface InCounter {
  readonly topic: string;
  readonly messageType: string;
  messages: number;
  bytes: number;
  readonly sizes: Histogram;
}

export interface OutCounter {
  readonly group: string;
  readonly topic: string;
  readonly retry: boolean;
  messages: number;
  bytes: number;
}

export interface DlqCounter {
  readonly group: string;
  readonly topic: string;
  messages: number;
}

export interface RpcCounter {
  readonly protocol: string;
  /** lower_snake_case request name, as RocketMQ labels it (`send_message`). */
  readonly request: string;
  /** lower-case code name (`ok`, `too_many_requests`). */
  readonly responseCode: string;
  readonly longPolling: boolean;
  readonly latency: Histogram;
}

/** Totals since start, for rates (the console's throughput chart). */
export interface Totals {
  messagesIn: number;
  bytesIn: number;
  messagesOut: number;
  bytesOut: number;
}

export class BrokerStats {
  /** ms since the epoch, when the broker opened. */
  readonly startedAt: number;
  /** topic → message type → counter (nested maps: no key string built per call). */
  private readonly inByTopic = new Map<string, Map<string, InCounter>>();
  /** group → topic → [from the topic, from the retry topic]. */
  private readonly outByGroup = new Map<string, Map<string, [OutCounter, OutCounter]>>();
  private readonly dlqByGroup = new Map<string, Map<string, DlqCounter>>();
  private readonly rpcCounters: RpcCounter[] = [];
  private readonly rpcIndex = new Map<string, RpcCounter>();
  readonly flush = new Histogram(FLUSH_LATENCY_BUCKETS_MS);
  readonly totals: Totals = { messagesIn: 0, bytesIn: 0, messagesOut: 0, bytesOut: 0 };

  constructor(now: number) {
    this.startedAt = now;
  }

  /** Messages stored by a send (one call per batch). */
  received(topic: string, messageType: string, bodySizes: readonly number[]): void {
    let byType = this.inByTopic.get(topic);
    if (!byType) this.inByTopic.set(topic, (byType = new Map()));
    let c = byType.get(messageType);
    if (!c) {
      c = { topic, messageType, messages: 0, bytes: 0, sizes: new Histogram(MESSAGE_SIZE_BUCKETS) };
      byType.set(messageType, c);
    }
    let bytes = 0;
    for (const s of bodySizes) {
      bytes += s;
      c.sizes.observe(s);
    }
    c.messages += bodySizes.length;
    c.bytes += bytes;
    this.totals.messagesIn += bodySizes.length;
    this.totals.bytesIn += bytes;
  }

  /** Messages handed to a consumer (receive or pull). */
  delivered(group: string, topic: string, retry: boolean, messages: number, bytes: number): void {
    let byTopic = this.outByGroup.get(group);
    if (!byTopic) this.outByGroup.set(group, (byTopic = new Map()));
    let pair = byTopic.get(topic);
    if (!pair) {
      pair = [
        { group, topic, retry: false, messages: 0, bytes: 0 },
        { group, topic, retry: true, messages: 0, bytes: 0 },
      ];
      byTopic.set(topic, pair);
    }
    const c = pair[retry ? 1 : 0];
    c.messages += messages;
    c.bytes += bytes;
    this.totals.messagesOut += messages;
    this.totals.bytesOut += bytes;
  }

  deadLettered(group: string, topic: string, messages: number): void {
    let byTopic = this.dlqByGroup.get(group);
    if (!byTopic) this.dlqByGroup.set(group, (byTopic = new Map()));
    let c = byTopic.get(topic);
    if (!c) byTopic.set(topic, (c = { group, topic, messages: 0 }));
    c.messages += messages;
  }

  /**
   * The latency histogram of one kind of request and outcome (created on first use): edges keep it
   * and call `observe(ms)` on it for each request, so serving one costs no lookup.
   */
  rpcLatency(protocol: string, request: string, responseCode: string, longPolling: boolean): Histogram {
    const k = `${protocol}\u0000${request}\u0000${responseCode}\u0000${longPolling ? 1 : 0}`;
    let c = this.rpcIndex.get(k);
    if (!c) {
      c = { protocol, request, responseCode, longPolling, latency: new Histogram(RPC_LATENCY_BUCKETS_MS) };
      this.rpcIndex.set(k, c);
      this.rpcCounters.push(c);
    }
    return c.latency;
  }

  /** A store append became durable `ms` after it was made. */
  flushed(ms: number): void {
    this.flush.observe(ms);
  }

  /** Messages in, per topic and message type. */
  *inCounters(): Iterable<InCounter> {
    for (const byType of this.inByTopic.values()) yield* byType.values();
  }

  /** Messages out, per group, topic and retry-or-not (only those that moved). */
  *outCounters(): Iterable<OutCounter> {
    for (const byTopic of this.outByGroup.values()) {
      for (const pair of byTopic.values()) for (const c of pair) if (c.messages > 0) yield c;
    }
  }

  *dlqCounters(): Iterable<DlqCounter> {
    for (const byTopic of this.dlqByGroup.values()) yield* byTopic.values();
  }

  rpcCounterList(): readonly RpcCounter[] {
    return this.rpcCounters;
  }
}

/** RocketMQ's request label: `SendMessage` → `send_message`. */
export function requestLabel(rpc: string): string {
  return rpc.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}
