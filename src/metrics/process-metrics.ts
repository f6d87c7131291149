/**
 * Node's process metrics (CPU, memory, heap, event-loop lag, GC, handles, file descriptors), from
 * prom-client's default collectors. They describe the process, not a broker, so there is one registry
 * per process however many brokers it runs (tests run many); it is created on the first scrape.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';

let registry: Registry | null = null;

export function processMetrics(): Registry {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}
