/**
 * `ali-ons` (the pure-JavaScript Remoting client) for tests: typed just enough, quiet, on short
 * schedules (it sleeps out its intervals after close, and tests must not leave timers behind), and
 * with its shared inner producer closed at the end (ali-ons never closes it itself).
 */
import { createRequire } from 'node:module';
import { tempDir } from '../helpers.js';
import { use, uniqueName } from '../support/harness.js';

// Broadcasting consumers keep their offsets under $HOME, read once when the module loads.
const home = tempDir('vela-ali-ons-home-');
process.env.HOME = home.path;
const require = createRequire(import.meta.url);

export interface OnsMessage {
  msgId: string;
  topic: string;
  tags: string;
  keys: string[];
  body: Buffer;
  queueId: number;
  queueOffset: number;
  reconsumeTimes: number;
  properties: Record<string, string>;
}
export interface SendResult {
  sendStatus: string;
  msgId: string;
  messageQueue: { queueId: number };
  queueOffset: number;
}
export interface OnsProducer {
  ready(): Promise<void>;
  send(m: unknown): Promise<SendResult>;
  close(): Promise<void>;
}
export interface OnsConsumer {
  ready(): Promise<void>;
  subscribe(topic: string, expr: string, handler: (m: OnsMessage) => Promise<unknown>): void;
  on(event: 'error', l: (e: Error) => void): void;
  close(): Promise<void>;
}
export const ons = require('ali-ons') as {
  Producer: new (o: object) => OnsProducer;
  Consumer: new (o: object) => OnsConsumer;
  Message: new (topic: string, tag: string, body: string) => { keys: string[]; shardingKey: string };
};

const noop = () => {};
const dbg = (...a: unknown[]) => process.env.ONS_DEBUG && console.log('ONS', ...a);
const quiet = { info: noop, warn: dbg, error: dbg, debug: noop };
let seq = 0;

export function onsOptions(remotingPort: number, extra: object = {}) {
  return {
    nameSrv: `127.0.0.1:${remotingPort}`,
    httpclient: {},
    accessKeyId: 'k',
    accessKeySecret: 's',
    logger: quiet,
    instanceName: `i${++seq}`,
    pollNameServerInteval: 1000,
    heartbeatBrokerInterval: 1000,
    rebalanceInterval: 500,
    persistConsumerOffsetInterval: 200,
    ...extra,
  };
}

/** ali-ons' close is not idempotent (a second one dials the brokers again): make it so. */
function closeOnce<T extends { close(): Promise<void> }>(client: T): T {
  const close = client.close.bind(client);
  let closing: Promise<void> | null = null;
  client.close = () => (closing ??= close());
  return use(client);
}

export async function onsProducer(remotingPort: number): Promise<OnsProducer> {
  const p = closeOnce(new ons.Producer(onsOptions(remotingPort, { producerGroup: uniqueName('PG') })));
  await p.ready();
  return p;
}

export function onsConsumer(remotingPort: number, group: string, extra: object = {}): OnsConsumer {
  const c = closeOnce(new ons.Consumer(onsOptions(remotingPort, { consumerGroup: group, ...extra })));
  // ali-ons reports "no offset yet" for fresh queues as errors; the tests check outcomes instead.
  c.on('error', () => {});
  return c;
}

/**
 * Close ali-ons' shared inner producer, then give closed clients the one scheduled round (≤ 1 s here)
 * ali-ons still runs after close, so that none of them dials a broker that is going away.
 */
export async function closeOns(): Promise<void> {
  const inner = require('ali-ons/lib/producer/mq_producer') as { defaultProducer?: OnsProducer | null };
  await inner.defaultProducer?.close();
  inner.defaultProducer = null;
  await new Promise((r) => setTimeout(r, 1500));
}

export function removeOnsHome(): void {
  home.cleanup();
}
