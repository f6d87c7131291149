/**
 * The console's delivery history under a steady stream of deliveries (not a test):
 * `node --import tsx bench/delivery-history-micro.ts [module path]`. Records 400,000 deliveries
 * (1,000 in flight, each settled 1,000 deliveries later) into a history of 50,000 (the default), and
 * prints the time per delivery (record + settle) and the time spent in garbage collection, which is
 * where a history of one object per delivery paid: tens of thousands of long-lived objects.
 */
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DeliveredSlot, DeliveryHistory as History } from '../src/broker/delivery-history.js';

const modPath = process.argv[2]
  ? resolve(process.argv[2])
  : new URL('../src/broker/delivery-history.ts', import.meta.url).pathname;
const { DeliveryHistory } = (await import(pathToFileURL(modPath).href)) as {
  DeliveryHistory: typeof History;
};

const N = 400_000;
const INFLIGHT = 1000;
let gcMs = 0;
const obs = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
});
obs.observe({ entryTypes: ['gc'] });

const run = () => {
  const h = new DeliveryHistory(50_000);
  const ids = Array.from({ length: N }, (_, i) => `7F0000010001${(i + 1e9).toString(16).toUpperCase()}0000`);
  const t0 = performance.now();
  gcMs = 0;
  // The consumption state's deliveries in flight, each settled INFLIGHT deliveries later.
  const open: DeliveredSlot[] = [];
  for (let i = 0; i < N; i++) {
    const slot = {
      source: 0,
      queueId: i & 7,
      offset: i >> 3,
      historySeq: -1,
      attempt: 1,
      clientId: 'client-1',
    };
    h.delivered(ids[i]!, ids[i]!, 'group-A', 'topic-A', slot, i);
    open[i % INFLIGHT] = slot;
    if (i >= INFLIGHT - 1) h.settled([open[(i + 1) % INFLIGHT]!], 'ACKED', i);
  }
  return performance.now() - t0;
};
run(); // warm-up
const ms = run();
await new Promise((r) => setTimeout(r, 50));
console.log(
  `${N} deliveries: ${((ms * 1e6) / N).toFixed(0)} ns each (${ms.toFixed(0)} ms); GC pauses and GC threads' work reported meanwhile: ${gcMs.toFixed(0)} ms`,
);
obs.disconnect();
