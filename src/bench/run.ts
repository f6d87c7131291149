/**
 * The runs of `vela bench`, like RocketMQ's benchmark/producer.sh and consumer.sh, through Vela's SDK
 * against any gRPC endpoint (a Vela broker or a RocketMQ 5 proxy):
 *
 * - producer: `concurrency` senders, each sending one message after another (`rate` caps the total);
 * - consumer: a push consumer (or `concurrency` simple-consumer loops) acknowledging everything;
 * - e2e: both at once; each body carries its send time, so every receipt gives an end-to-end latency.
 *
 * Every second `onTick` gets the last second's figures; the run ends with a summary of the whole run
 * (throughput, latency percentiles, errors) and the per-second timeline.
 */
import {
  Admin,
  Producer,
  PushConsumer,
  SimpleConsumer,
  ConsumeResult,
  type MessageView,
} from '../client/index.js';
import { LatencyHistogram } from './latency.js';
import { Pacer } from './pacer.js';

export type BenchMode = 'producer' | 'consumer' | 'e2e';

export interface BenchOptions {
  mode: BenchMode;
  /** gRPC endpoint(s): `host:port[;host:port]`. */
  endpoints: string;
  namespace?: string;
  topic: string;
  group: string;
  /** Body bytes (at least 16: the send time is written into the first 16). */
  messageSize: number;
  /** Senders (producer) or receive loops / listeners (consumer). */
  concurrency: number;
  /** Messages per second across all senders; 0: as fast as they go. */
  rate: number;
  durationMs: number;
  /** A unique key on every message (indexing cost included). */
  keys: boolean;
  tag?: string;
  /** > 0: FIFO messages spread over this many message groups. */
  messageGroups: number;
  /** The SDK's coalescing of concurrent sends into one request. */
  batching: boolean;
  consumer: 'push' | 'simple';
  /** Create the topic (and group) through a Vela broker's admin API first. */
  create: boolean;
  /** The admin HTTP address, for `create`. */
  admin: string;
  token?: string;
  /** e2e: how long to wait after the last send for the consumer to catch up. */
  drainMs: number;
}

export interface LatencySummary {
  p50: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

export interface Tick {
  /** Seconds since the start. */
  second: number;
  sendTps: number;
  receiveTps: number;
  sendP50: number;
  sendP99: number;
  sendMax: number;
  e2eP50: number;
  e2eP99: number;
  errors: number;
  sent: number;
  received: number;
}

export interface BenchSummary {
  mode: BenchMode;
  endpoints: string;
  topic: string;
  group?: string;
  messageSize: number;
  concurrency: number;
  rate: number;
  durationS: number;
  sent: number;
  received: number;
  errors: number;
  firstError?: string;
  sendTps: number;
  receiveTps: number;
  sendMBps: number;
  send?: LatencySummary;
  e2e?: LatencySummary;
  timeline: Tick[];
}

/** First bytes of a bench body: marks a body whose next 8 bytes are its send time. */
const MAGIC = Buffer.from('VBENCH01');
const epochNow = () => performance.timeOrigin + performance.now();

function body(size: number): Buffer {
  const b = Buffer.alloc(Math.max(16, size), 0x61);
  MAGIC.copy(b, 0);
  b.writeDoubleLE(epochNow(), 8);
  return b;
}

/** When the message was sent: from a bench body, else its born time. */
function sentAt(m: MessageView): number | undefined {
  const b = m.body;
  if (b.length >= 16 && b.subarray(0, 8).equals(MAGIC)) return b.readDoubleLE(8);
  return m.bornTimestamp;
}

const summarize = (h: LatencyHistogram): LatencySummary => ({
  p50: round(h.percentile(0.5)),
  p99: round(h.percentile(0.99)),
  p999: round(h.percentile(0.999)),
  max: round(h.maxMs),
  mean: round(h.meanMs),
});
const round = (n: number) => Math.round(n * 1000) / 1000;

export async function runBench(
  o: BenchOptions,
  onTick: (t: Tick) => void = () => {},
  signal?: AbortSignal,
): Promise<BenchSummary> {
  const producing = o.mode !== 'consumer';
  const consuming = o.mode !== 'producer';
  if (o.create) {
    const admin = new Admin({
      url: /^https?:\/\//.test(o.admin) ? o.admin : `http://${o.admin}`,
      ...(o.token ? { token: o.token } : {}),
    });
    const exists = (await admin.listTopics()).some((t) => t.topic === o.topic);
    if (!exists) await admin.createTopic(o.topic, { messageType: o.messageGroups > 0 ? 'FIFO' : 'NORMAL' });
    if (consuming)
      await admin.createGroup(o.group, o.messageGroups > 0 ? { consumeMessageOrderly: true } : {});
  }

  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });

  const sendAll = new LatencyHistogram();
  const e2eAll = new LatencyHistogram();
  const sendTick = new LatencyHistogram();
  const e2eTick = new LatencyHistogram();
  let sent = 0;
  let sentBytes = 0;
  let received = 0;
  let errors = 0;
  let firstError: string | undefined;
  const fail = (err: unknown) => {
    errors++;
    firstError ??= err instanceof Error ? err.message : String(err);
  };
  const onMessage = (m: MessageView) => {
    received++;
    const at = sentAt(m);
    if (at !== undefined) {
      const ms = Math.max(0, epochNow() - at);
      e2eAll.record(ms);
      e2eTick.record(ms);
    }
  };

  const base = { endpoints: o.endpoints, ...(o.namespace ? { namespace: o.namespace } : {}) };
  const closers: (() => Promise<void>)[] = [];
  const consumerLoops: Promise<void>[] = [];
  const consumerStop = new AbortController();
  try {
    if (consuming) {
      if (o.consumer === 'push') {
        const c = new PushConsumer({
          ...base,
          group: o.group,
          subscriptions: { [o.topic]: '*' },
          concurrency: Math.min(1024, Math.max(1, o.concurrency)),
          listener: (m) => {
            onMessage(m);
            return ConsumeResult.SUCCESS;
          },
        });
        await c.start();
        closers.push(() => c.close());
      } else {
        const c = new SimpleConsumer({
          ...base,
          group: o.group,
          subscriptions: { [o.topic]: '*' },
          awaitDurationMs: 1000,
        });
        await c.start();
        closers.push(() => c.close());
        for (let i = 0; i < Math.max(1, o.concurrency); i++) {
          consumerLoops.push(
            (async () => {
              while (!consumerStop.signal.aborted) {
                try {
                  const batch = await c.receive(32, 30_000, { signal: consumerStop.signal });
                  for (const m of batch) onMessage(m);
                  await Promise.all(batch.map((m) => c.ack(m).catch(fail)));
                } catch (err) {
                  if (!consumerStop.signal.aborted) fail(err);
                }
              }
            })(),
          );
        }
      }
    }

    let producer: Producer | undefined;
    if (producing) {
      producer = new Producer({ ...base, batching: o.batching, topics: [o.topic] });
      await producer.start();
      closers.push(() => producer!.close());
    }

    const started = performance.now();
    const timeline: Tick[] = [];
    let last = { sent: 0, received: 0, at: started };
    const tick = () => {
      const now = performance.now();
      // Rates over at least a second: the run's last tick may cover a fraction of one.
      const dt = Math.max(1, (now - last.at) / 1000);
      const t: Tick = {
        second: Math.round((now - started) / 1000),
        sendTps: Math.round((sent - last.sent) / dt),
        receiveTps: Math.round((received - last.received) / dt),
        sendP50: round(sendTick.percentile(0.5)),
        sendP99: round(sendTick.percentile(0.99)),
        sendMax: round(sendTick.maxMs),
        e2eP50: round(e2eTick.percentile(0.5)),
        e2eP99: round(e2eTick.percentile(0.99)),
        errors,
        sent,
        received,
      };
      sendTick.reset();
      e2eTick.reset();
      last = { sent, received, at: now };
      timeline.push(t);
      onTick(t);
    };
    const ticker = setInterval(tick, 1000);
    const timer = setTimeout(() => stop.abort(), o.durationMs);

    try {
      if (producer) {
        const pacer = new Pacer(o.rate);
        const p = producer;
        let seq = 0;
        await Promise.all(
          Array.from({ length: Math.max(1, o.concurrency) }, async () => {
            while (!stop.signal.aborted) {
              await pacer.take(stop.signal);
              if (stop.signal.aborted) break;
              const n = seq++;
              const b = body(o.messageSize);
              const t0 = performance.now();
              try {
                await p.send({
                  topic: o.topic,
                  body: b,
                  ...(o.tag ? { tag: o.tag } : {}),
                  ...(o.keys ? { keys: [`bench-${n}`] } : {}),
                  ...(o.messageGroups > 0 ? { messageGroup: `g${n % o.messageGroups}` } : {}),
                });
                const ms = performance.now() - t0;
                sendAll.record(ms);
                sendTick.record(ms);
                sent++;
                sentBytes += b.length;
              } catch (err) {
                fail(err);
              }
            }
          }),
        );
        // e2e: give the consumer time to receive what was sent.
        if (consuming) {
          const until = performance.now() + o.drainMs;
          while (received < sent && performance.now() < until && !signal?.aborted) {
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      } else {
        await new Promise<void>((resolve) =>
          stop.signal.aborted
            ? resolve()
            : stop.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
      }
    } finally {
      clearTimeout(timer);
      clearInterval(ticker);
    }
    const elapsedS = (performance.now() - started) / 1000;
    // A last tick for what happened since the previous one, so the timeline ends with the totals.
    if (
      timeline.length === 0 ||
      sent !== last.sent ||
      received !== last.received ||
      errors !== timeline.at(-1)!.errors
    )
      tick();
    return {
      mode: o.mode,
      endpoints: o.endpoints,
      topic: o.topic,
      ...(consuming ? { group: o.group } : {}),
      messageSize: Math.max(16, o.messageSize),
      concurrency: o.concurrency,
      rate: o.rate,
      durationS: round(elapsedS),
      sent,
      received,
      errors,
      ...(firstError ? { firstError } : {}),
      sendTps: Math.round(sent / elapsedS),
      receiveTps: Math.round(received / elapsedS),
      sendMBps: round(sentBytes / elapsedS / 1e6),
      ...(producing ? { send: summarize(sendAll) } : {}),
      ...(consuming ? { e2e: summarize(e2eAll) } : {}),
      timeline,
    };
  } finally {
    signal?.removeEventListener('abort', onAbort);
    consumerStop.abort();
    await Promise.all(consumerLoops);
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}
