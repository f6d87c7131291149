/** Shared harness for the SDK tests: an in-process broker on 127.0.0.1, unique names, polling waits. */
import { startTestBroker as start, type TestBroker } from '../support/harness.js';
import type { StartBrokerOptions } from '../../src/server.js';

export { uniqueName as unique, waitFor, use, closeAll, type TestBroker } from '../support/harness.js';

export function startTestBroker(extra: Partial<StartBrokerOptions> = {}): Promise<TestBroker> {
  return start(extra);
}

/** The broker's per-group totals for a topic: in flight (incl. waiting retry) and lag. */
export function progress(b: TestBroker, group: string, topic: string): { inflight: number; lag: number } {
  const qs = b.running.broker.consume.progress(group, topic);
  return {
    inflight: qs.reduce((a, q) => a + q.inflight + q.ready, 0),
    lag: qs.reduce((a, q) => a + q.lag, 0),
  };
}
