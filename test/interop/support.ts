/**
 * Shared harness for the interop tests: an in-process broker on 127.0.0.1, unique resource names,
 * and a quiet logger for the official Node client (rocketmq-client-nodejs 1.0.8).
 */
import { randomBytes } from 'node:crypto';
import { SimpleConsumer, type MessageView } from 'rocketmq-client-nodejs';
import type { RunningBroker } from '../../src/server.js';
import { startTestBroker } from '../support/harness.js';

/** Invisible time floor for these tests (the broker's default is 10 s). */
export const MIN_INVISIBLE_MS = 1000;

export interface InteropBroker {
  running: RunningBroker;
  /** `127.0.0.1:<port>`, as the client wants it. */
  endpoints: string;
  close(): Promise<void>;
}

export async function startInteropBroker(): Promise<InteropBroker> {
  const b = await startTestBroker({ consume: { minInvisibleMs: MIN_INVISIBLE_MS } });
  return { running: b.running, endpoints: b.endpoints, close: b.close };
}

/** A name no other test uses (topic and group names allow `[%|a-zA-Z0-9_-]`). */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/**
 * A logger for the client: silent (the default writes to ~/logs/rocketmq), except with
 * VELA_INTEROP_LOG=1, which prints warnings and errors to stderr. Errors are kept for assertions.
 */
export function clientLogger(): {
  info: (...a: unknown[]) => void;
  warn: (...a: unknown[]) => void;
  error: (...a: unknown[]) => void;
  debug: (...a: unknown[]) => void;
  errors: unknown[][];
} {
  const verbose = process.env.VELA_INTEROP_LOG === '1';
  const errors: unknown[][] = [];
  return {
    info: () => {},
    debug: () => {},
    warn: (...a) => {
      if (verbose) console.error('[client warn]', ...a);
    },
    error: (...a) => {
      errors.push(a);
      if (verbose) console.error('[client error]', ...a);
    },
    errors,
  };
}

export async function createTopic(b: InteropBroker, prefix: string, type = 'NORMAL'): Promise<string> {
  const name = uniqueName(prefix);
  await b.running.broker.topics.upsert(name, { attributes: { 'message.type': type } });
  return name;
}

export async function createGroup(b: InteropBroker, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await b.running.broker.groups.upsert(name, {});
  return name;
}

/** Start a SimpleConsumer subscribed to one topic. */
export async function simpleConsumer(
  b: InteropBroker,
  group: string,
  topic: string,
  opts: { filter?: string; awaitDuration?: number } = {},
): Promise<SimpleConsumer> {
  const consumer = new SimpleConsumer({
    endpoints: b.endpoints,
    namespace: '',
    consumerGroup: group,
    subscriptions: new Map([[topic, opts.filter ?? '*']]),
    awaitDuration: opts.awaitDuration ?? 1000,
    logger: clientLogger(),
  });
  await consumer.startup();
  return consumer;
}

/**
 * Receive until `count` messages have arrived (acking each unless `ack` is false) or `timeoutMs`
 * passes. Returns what arrived, in order.
 */
export async function receiveN(
  consumer: SimpleConsumer,
  count: number,
  opts: { invisibleMs?: number; ack?: boolean; timeoutMs?: number } = {},
): Promise<MessageView[]> {
  const out: MessageView[] = [];
  const until = Date.now() + (opts.timeoutMs ?? 10_000);
  while (out.length < count && Date.now() < until) {
    const batch = await consumer.receive(Math.min(32, count - out.length), opts.invisibleMs ?? 30_000);
    for (const m of batch) {
      if (opts.ack !== false) await consumer.ack(m);
      out.push(m);
    }
  }
  return out;
}

/** Total lag and in-flight count of a group on a topic, from the broker's consumer progress. */
export function progressOf(
  b: InteropBroker,
  group: string,
  topic: string,
): { lag: number; inflight: number; ready: number; brokerOffsets: number } {
  const rows = b.running.broker.consume.progress(group, topic);
  return {
    lag: rows.reduce((n, r) => n + r.lag, 0),
    inflight: rows.reduce((n, r) => n + r.inflight, 0),
    ready: rows.reduce((n, r) => n + r.ready, 0),
    brokerOffsets: rows.reduce((n, r) => n + r.brokerOffset, 0),
  };
}

/** The `code` of a client exception (ClientException carries the wire status code). */
export function codeOf(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'number'
    ? err.code
    : undefined;
}
