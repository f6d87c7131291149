/**
 * Micro-benchmark (not a test): `node --import tsx bench/stats-micro.ts`. What the metrics and the
 * console cost on the hot path, per call: counting a stored batch, a delivery (counters and delivery
 * history), its settlement, and timing one RPC. Compare with the broker's cost per message (tens of
 * microseconds, `npm run bench:broker`).
 */
import { BrokerStats } from '../src/broker/stats.js';
import { DeliveryHistory } from '../src/broker/delivery-history.js';
import { ConsumptionObserver } from '../src/broker/consume-observer.js';
import { rpcTimer } from '../src/protocol/rpc-stats.js';
import type { StoredMessage } from '../src/store/index.js';

const N = 2_000_000;
const stats = new BrokerStats(Date.now());
const history = new DeliveryHistory(10_000);
const observer = new ConsumptionObserver(stats, history, () => Date.now());
const message = {
  messageId: '01ABCDEF0123456789ABCDEF0123456789',
  body: Buffer.alloc(1024),
  properties: {},
} as unknown as StoredMessage;

function time(name: string, fn: (i: number) => void): void {
  for (let i = 0; i < 100_000; i++) fn(i); // warm up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn(i);
  const ns = Number(process.hrtime.bigint() - t0) / N;
  console.log(`${name.padEnd(58)} ${ns.toFixed(0).padStart(5)} ns/call`);
}

const sizes = [1024];
time('stats.received (one stored message)', () => stats.received('Orders', 'NORMAL', sizes));
const timer = rpcTimer(stats, 'SendMessage');
time('rpc timer (start + end of one request)', () => timer.end(timer.start(), 20000));
const slots = Array.from({ length: 1024 }, (_, i) => ({
  source: 0,
  queueId: i % 8,
  offset: i,
  attempt: 1,
  clientId: 'c1',
  historySeq: -1,
}));
// A receive's deliveries are observed in one call; one per call here, the worst case.
const one = [slots[0]!];
const messages = [message];
time('delivery observed, never settled (the history fills up)', (i) => {
  const s = (one[0] = slots[i & 1023]!);
  s.offset = i;
  observer.delivered('G', 'Orders', one, messages, Date.now());
});
let k = 0;
time('delivery observed, then settled (ack)', () => {
  const s = (one[0] = slots[k & 1023]!);
  s.offset = k++;
  observer.delivered('G', 'Orders', one, messages, Date.now());
  observer.settled('G', 'Orders', [s], 'ACKED');
});
const off = new ConsumptionObserver(stats, new DeliveryHistory(0), () => Date.now());
time('delivery observed with the history off (counters only)', (i) => {
  one[0] = slots[i & 1023]!;
  off.delivered('G', 'Orders', one, messages, Date.now());
});
// As a push consumer's receives come (up to 256 deliveries): the counters found once per receive.
const receive = slots.slice(0, 256);
const receiveMessages = receive.map(() => message);
let r = 0;
time('a receive of 256 observed, per delivery (history on)', (i) => {
  if ((i & 255) !== 0) return;
  for (const s of receive) s.offset = r++;
  observer.delivered('G', 'Orders', receive, receiveMessages, Date.now());
});
time('a receive of 256 observed, per delivery (history off)', (i) => {
  if ((i & 255) === 0) off.delivered('G', 'Orders', receive, receiveMessages, Date.now());
});
