/**
 * The one test harness: a broker in one line (in-process, 127.0.0.1, ports 0, a temp data dir that is
 * removed on close), names no other test uses, and waits that poll a condition instead of sleeping.
 * Every test closes what it opens; `closeAll()` in an `after` hook closes what a failed test left.
 */
import { randomBytes } from 'node:crypto';
import { startBroker, type RunningBroker, type StartBrokerOptions } from '../../src/server.js';
import { GrpcServer, type GrpcServerOptions } from '../../src/protocol/transport/h2-server.js';
import { silentLogger } from '../../src/common/logger.js';
import type { Broker } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import { tempDir, sleep } from '../helpers.js';

export interface TestBroker {
  running: RunningBroker;
  /** `127.0.0.1:<grpc port>`, as clients want it. */
  endpoints: string;
  /** `http://127.0.0.1:<http port>` */
  adminUrl: string;
  dataDir: string;
  /** Close the broker and remove its data directory. Idempotent. */
  close(): Promise<void>;
}

/**
 * Start a broker for a test. Defaults suit tests: a 100 ms invisible-time floor and a 1 s shutdown
 * grace; `keepDataDir` leaves the directory for a restart (the caller removes it).
 */
export async function startTestBroker(
  options: Partial<StartBrokerOptions> & { keepDataDir?: boolean } = {},
): Promise<TestBroker> {
  const { keepDataDir = false, ...extra } = options;
  const dir = extra.dataDir ? null : tempDir('vela-test-');
  const dataDir = extra.dataDir ?? dir!.path;
  const running = await startBroker({
    grpcPort: 0,
    httpPort: 0,
    remotingPort: 0,
    consume: { minInvisibleMs: 100 },
    shutdownGraceMs: 1000,
    ...extra,
    dataDir,
  });
  let closing: Promise<void> | null = null;
  return {
    running,
    endpoints: `127.0.0.1:${running.grpcPort}`,
    adminUrl: `http://127.0.0.1:${running.httpPort}`,
    dataDir,
    close: () =>
      (closing ??= (async () => {
        try {
          await running.close();
        } finally {
          if (!keepDataDir) dir?.cleanup();
        }
      })()),
  };
}

let seq = 0;
/** A topic or group name no other test uses (names allow `[%|a-zA-Z0-9_-]`). */
export function uniqueName(prefix: string): string {
  return `${prefix}_${(++seq).toString(36)}${randomBytes(4).toString('hex')}`;
}

/** Poll `cond` every `intervalMs` until it holds; fail after `timeoutMs`, naming `what`. */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } | number = {},
  what?: string,
): Promise<void> {
  const o = typeof opts === 'number' ? { timeoutMs: opts, what } : opts;
  const timeoutMs = o.timeoutMs ?? 5000;
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${o.what ?? 'a condition'}`);
    await sleep(o.intervalMs ?? 10);
  }
}

const open = new Set<{ close(): unknown }>();

/** Register something to close so that `closeAll()` closes it even when its test failed half-way. */
export function use<T extends { close(): unknown }>(resource: T): T {
  open.add(resource);
  return resource;
}

/** Close everything registered with `use` (idempotent: tests may have closed them already). */
export async function closeAll(): Promise<void> {
  const all = [...open].reverse();
  open.clear();
  for (const r of all) {
    try {
      await r.close();
    } catch {
      // already closed, or failed closing: nothing left to do in a test's clean-up
    }
  }
}

/**
 * How late a real-time deadline (an expiry, a delay message's time) may be seen in a test. The
 * precision the broker promises (100 ms) is measured by the benchmarks (`npm run bench:timer`,
 * docs/benchmarks.md) and checked exactly with the manual clock in test/unit/consume/; on a loaded
 * machine running the whole suite, the event loop alone can be hundreds of milliseconds late, so
 * real-time tests only bound lateness loosely. Early is never allowed.
 */
export const LOADED_SLACK_MS = 1000;

/** The gRPC transport alone on 127.0.0.1 (register methods, then `listen(0)`), with roomy limits unless told. */
export function testGrpcServer(limits: Partial<GrpcServerOptions['limits']> = {}): GrpcServer {
  return new GrpcServer({
    host: '127.0.0.1',
    limits: {
      maxMessageBytes: 1 << 20,
      maxConcurrentStreams: 100,
      maxConnectionInboundBytes: 1 << 24,
      maxInboundBytes: 1 << 26,
      maxConnectionOutboundBytes: 1 << 24,
      ...limits,
    },
    keepalive: { intervalMs: 0, timeoutMs: 0 },
    logger: silentLogger(),
  });
}

/**
 * A simple consumer's receive straight through the broker's consume service (no gRPC): all tags,
 * invisible for a minute unless said, no long poll unless said.
 */
export function receiveFrom(
  broker: Broker,
  group: string,
  topic: string,
  opts: { invisibleMs?: number; pollMs?: number } = {},
) {
  return broker.consume.receive({
    group,
    topic,
    filter: parseFilter('TAG', '*'),
    invisibleMs: opts.invisibleMs ?? 60_000,
    autoRenew: false,
    clientId: 'c',
    pollMs: opts.pollMs ?? 0,
  });
}
