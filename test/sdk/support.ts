/** Shared harness for the SDK tests: an in-process broker on 127.0.0.1, unique names, polling waits. */
import { startBroker, type RunningBroker, type StartBrokerOptions } from '../../src/server.js';
import { tempDir, sleep } from '../helpers.js';

export interface TestBroker {
  running: RunningBroker;
  /** `127.0.0.1:<grpc port>` */
  endpoints: string;
  /** `http://127.0.0.1:<http port>` */
  adminUrl: string;
  dataDir: string;
  close(): Promise<void>;
}

export async function startTestBroker(extra: Partial<StartBrokerOptions> = {}): Promise<TestBroker> {
  const dir = tempDir('vela-sdk-');
  const running = await startBroker({
    dataDir: dir.path,
    grpcPort: 0,
    httpPort: 0,
    consume: { minInvisibleMs: 100 },
    shutdownGraceMs: 1000,
    ...extra,
  });
  return {
    running,
    endpoints: `127.0.0.1:${running.grpcPort}`,
    adminUrl: `http://127.0.0.1:${running.httpPort}`,
    dataDir: dir.path,
    close: async () => {
      try {
        await running.close();
      } finally {
        dir.cleanup();
      }
    },
  };
}

let seq = 0;
/** A topic or group name no other test uses. */
export function unique(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${++seq}`;
}

/** Poll `cond` every 10 ms until it holds; fail after `timeoutMs`. */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** The broker's per-group totals for a topic: in flight (incl. waiting retry) and lag. */
export function progress(b: TestBroker, group: string, topic: string): { inflight: number; lag: number } {
  const qs = b.running.broker.consume.progress(group, topic);
  return {
    inflight: qs.reduce((a, q) => a + q.inflight + q.ready, 0),
    lag: qs.reduce((a, q) => a + q.lag, 0),
  };
}

const clients = new Set<{ close(): Promise<void> }>();

/** Register a client so that `closeAll()` closes it even when its test failed half-way. */
export function use<T extends { close(): Promise<void> }>(client: T): T {
  clients.add(client);
  return client;
}

/** Close every client registered with `use` (idempotent: tests may have closed them already). */
export async function closeAll(): Promise<void> {
  const all = [...clients];
  clients.clear();
  await Promise.all(all.map((c) => c.close().catch(() => {})));
}
