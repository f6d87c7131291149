/**
 * The workloads, the same code for every peer:
 * - produce (W1a, W1b): `count` confirmed sends by `inflight` loops, each awaiting its send;
 * - consume a backlog (W2, W2-pull): fill the queue (untimed), then consume and ack all of it;
 * - end-to-end (W3): one consumer, one sender paced to a fixed rate; each body carries its send time.
 * `marks.begin()`/`marks.end()` bracket the measured part, so the orchestrator can read the server's
 * CPU time over the same interval.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import type { ClientResult, GcPauses, WorkloadSpec } from '../types.js';
import { perSecond, summarize } from '../stats.js';
import { PauseLog, pauseBreakdown, readPauses, type PauseBreakdown } from '../pauses.js';
import { closeWithin, errorText, within, type OnMessage, type Peer, type Sender } from './peer.js';

export interface Marks {
  begin(): void;
  end(): void;
}

/** How long sends still unanswered at a time limit may take before they count as failed. */
const GRACE_MS = 10_000;

/**
 * The garbage-collection pauses of this process that begin in [from, to) (performance.now() times),
 * collected from now until `stop()`: a W3 tail is often the client's own collections.
 */
function watchGc(): { stop(from: number, to: number): GcPauses } {
  const pauses: [start: number, ms: number][] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.push([e.startTime, e.duration]);
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop(from, to) {
      observer.disconnect();
      const inWindow = pauses.filter(([start]) => start >= from && start < to).map(([, ms]) => ms);
      return {
        count: inWindow.length,
        totalMs: inWindow.reduce((a, b) => a + b, 0),
        maxMs: inWindow.reduce((a, b) => Math.max(a, b), 0),
      };
    },
  };
}

const cpuSince = (start: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(start);
  return u.user + u.system;
};

interface SendOutcome {
  ok: number;
  failed: number;
  firstError?: string;
  seconds: number;
  timeLimited: boolean;
}

/** `count` sends by `inflight` loops; stops issuing at `limitMs`, then waits at most GRACE_MS. */
async function sendLoop(
  sender: Sender,
  bodies: readonly Buffer[],
  count: number,
  inflight: number,
  limitMs: number,
  latencies?: number[],
): Promise<SendOutcome> {
  let issued = 0;
  let ok = 0;
  let failed = 0;
  let firstError: string | undefined;
  let stop = false;
  let timeLimited = false;
  const t0 = performance.now();
  const deadline = setTimeout(() => {
    stop = true;
    timeLimited = issued < count;
  }, limitMs);
  const worker = async () => {
    while (!stop && issued < count) {
      const body = bodies[issued++ % bodies.length]!;
      const t = performance.now();
      try {
        await sender.send(body);
        ok++;
        latencies?.push(performance.now() - t);
      } catch (err) {
        failed++;
        firstError ??= errorText(err);
      }
    }
  };
  const finished = await within(Promise.all(Array.from({ length: inflight }, worker)), limitMs + GRACE_MS);
  clearTimeout(deadline);
  stop = true;
  const seconds = (performance.now() - t0) / 1000;
  const out: SendOutcome = { ok, failed, seconds, timeLimited };
  if (!finished) {
    const unanswered = issued - ok - failed;
    out.failed += unanswered;
    firstError ??= `${unanswered} sends unanswered ${GRACE_MS / 1000} s after the time limit`;
  }
  if (firstError !== undefined) out.firstError = firstError;
  return out;
}

/** W1a / W1b: confirmed sends with `spec.inflight` in flight. */
export async function produce(
  peer: Peer,
  spec: WorkloadSpec,
  bodies: readonly Buffer[],
  marks: Marks,
): Promise<ClientResult> {
  await peer.prepare(spec.queue);
  const sender = await peer.sender(spec.queue);
  try {
    if (spec.warmup > 0) await sendLoop(sender, bodies, spec.warmup, Math.min(spec.inflight, 64), 30_000);
    const latencies: number[] = [];
    marks.begin();
    const cpu0 = process.cpuUsage();
    const r = await sendLoop(sender, bodies, spec.count, spec.inflight, spec.timeLimitMs, latencies);
    marks.end();
    const clientCpuUs = cpuSince(cpu0);
    const latency = summarize(latencies);
    return {
      workload: spec.workload,
      target: spec.target,
      ok: r.ok,
      failed: r.failed,
      ...(r.firstError !== undefined ? { firstError: r.firstError } : {}),
      seconds: r.seconds,
      rate: perSecond(r.ok, r.seconds),
      timeLimited: r.timeLimited,
      ...(latency ? { latency } : {}),
      clientCpuUs,
    };
  } finally {
    await closeWithin('sender', sender.close(), 10_000);
  }
}

/**
 * W2 / W2-pull: fill a backlog of `spec.warmup + spec.count` (untimed), then consume and ack all of
 * it; the first `spec.warmup` messages consumed are the warm-up (untimed, as W1's warm-up sends), the
 * next `spec.count` the measured part.
 */
export async function consumeBacklog(
  peer: Peer,
  spec: WorkloadSpec,
  bodies: readonly Buffer[],
  marks: Marks,
  mode: 'push' | 'pull',
): Promise<ClientResult> {
  await peer.prepare(spec.queue);
  const filler = await peer.filler(spec.queue);
  const fill = await sendLoop(filler, bodies, spec.warmup + spec.count, spec.inflight, 180_000).finally(() =>
    closeWithin('filler', filler.close(), 10_000),
  );
  if (fill.failed > 0)
    throw new Error(`filling the backlog: ${fill.failed} sends failed (${fill.firstError})`);
  const target = fill.ok;
  const warm = Math.max(0, Math.min(spec.warmup, target - 1));

  let got = 0;
  let t0 = 0;
  let cpu0 = process.cpuUsage();
  let allConsumed!: () => void;
  const done = new Promise<void>((r) => (allConsumed = r));
  const onMessage: OnMessage = () => {
    if (got === warm) {
      marks.begin();
      t0 = performance.now();
      cpu0 = process.cpuUsage();
    }
    if (++got === target) allConsumed();
  };
  const group = mode === 'pull' ? 'compare_pull' : 'compare_push';
  const subscribed = performance.now();
  if (mode === 'pull' && !peer.pull) throw new Error(`${spec.target} has no pull consumer`);
  const sub =
    mode === 'pull'
      ? await peer.pull!(spec.queue, group, onMessage)
      : await peer.subscribe(spec.queue, group, onMessage);
  let complete = false;
  let consumed = 0;
  let seconds = 0;
  let clientCpuUs = 0;
  try {
    complete = await within(done, Math.max(0, spec.timeLimitMs - (performance.now() - subscribed)));
    consumed = Math.min(got, target) - warm;
    if (consumed <= 0) {
      throw new Error(
        `${got === 0 ? 'nothing' : `only ${got} of the ${warm} warm-up messages`} consumed within ${spec.timeLimitMs} ms`,
      );
    }
    if (!(await within(sub.settle(), 10_000)))
      throw new Error('settling (commit / final acks) took over 10 s');
    seconds = (performance.now() - t0) / 1000;
    marks.end();
    clientCpuUs = cpuSince(cpu0);
  } finally {
    await closeWithin('consumer', sub.close(), 20_000);
  }
  const drained = complete ? await peer.drained(spec.queue, group).catch(() => null) : null;
  return {
    workload: spec.workload,
    target: spec.target,
    ok: consumed,
    failed: 0,
    seconds,
    rate: perSecond(consumed, seconds),
    timeLimited: !complete,
    clientCpuUs,
    drained,
  };
}

/**
 * The window's slow messages by the pauses they overlapped: this process's, and the broker's from the
 * file its child writes a few times a second (waited for, so that the window's end is in it).
 */
async function pausesOf(
  trips: readonly number[],
  log: PauseLog,
  brokerFile: string | undefined,
  windowStart: number,
  windowEnd: number,
): Promise<PauseBreakdown> {
  const client = log.stop();
  if (brokerFile) await new Promise((r) => setTimeout(r, 600));
  const broker = brokerFile ? readPauses(brokerFile) : null;
  const from = performance.timeOrigin + windowStart;
  return pauseBreakdown(trips, client, broker, { from, to: performance.timeOrigin + windowEnd });
}

/** W3: a sender paced to `spec.rate`, a consumer measuring each message's age on arrival. */
export async function endToEnd(
  peer: Peer,
  spec: WorkloadSpec,
  bodies: readonly Buffer[],
  marks: Marks,
): Promise<ClientResult> {
  const rate = spec.rate!;
  const warmupMs = spec.warmupMs ?? 1000;
  const windowMs = spec.timeLimitMs;
  const drainMs = spec.drainMs ?? 5000;
  await peer.prepare(spec.queue);

  let windowStart = Infinity;
  let windowEnd = Infinity;
  let measuring = false;
  const latencies: number[] = [];
  // --w3-pauses: each message of the window as (sent at, epoch ms; latency, ms) pairs.
  const trips: number[] | undefined = spec.pauses ? [] : undefined;
  const pauseLog = spec.pauses ? new PauseLog().start() : undefined;
  let consumedInWindow = 0;
  let consumedWhileMeasuring = 0;
  let receivedFromWindow = 0;
  const sub = await peer.subscribe(spec.queue, 'compare_e2e', (body) => {
    const now = performance.now();
    const sentAt = body.readDoubleLE(0);
    if (measuring) consumedWhileMeasuring++;
    if (now >= windowStart && now < windowEnd) consumedInWindow++;
    if (sentAt >= windowStart && sentAt < windowEnd) {
      latencies.push(now - sentAt);
      trips?.push(performance.timeOrigin + sentAt, now - sentAt);
      receivedFromWindow++;
    }
  });
  const sender = await peer.sender(spec.queue);

  let sent = 0;
  let inflight = 0;
  let sentInWindow = 0;
  let failedInWindow = 0;
  let failed = 0;
  let firstError: string | undefined;
  let cpu0 = process.cpuUsage();
  const gc = watchGc();
  const start = performance.now();
  windowStart = start + warmupMs;
  windowEnd = windowStart + windowMs;
  try {
    await new Promise<void>((resolve) => {
      const tick = () => {
        const now = performance.now();
        if (!measuring && now >= windowStart) {
          measuring = true;
          marks.begin();
          cpu0 = process.cpuUsage();
        }
        if (now >= windowEnd) return resolve();
        const due = Math.floor(((now - start) * rate) / 1000);
        while (sent < due && inflight < spec.inflight) {
          const src = bodies[sent % bodies.length]!;
          const body = Buffer.allocUnsafe(src.length);
          src.copy(body);
          const t = performance.now();
          body.writeDoubleLE(t, 0);
          const inWindow = t >= windowStart && t < windowEnd;
          if (inWindow) sentInWindow++;
          sent++;
          inflight++;
          sender.send(body).then(
            () => inflight--,
            (err) => {
              inflight--;
              failed++;
              if (inWindow) failedInWindow++;
              firstError ??= errorText(err);
            },
          );
        }
        setTimeout(tick, 1);
      };
      tick();
    });
    const expected = () => sentInWindow - failedInWindow;
    const drainUntil = performance.now() + drainMs;
    while (receivedFromWindow < expected() && performance.now() < drainUntil) {
      await new Promise((r) => setTimeout(r, 5));
    }
    marks.end();
    const clientCpuUs = cpuSince(cpu0);
    const clientGc = gc.stop(windowStart, windowEnd);
    const pauses =
      trips && pauseLog && spec.pauses
        ? await pausesOf(trips, pauseLog, spec.pauses.brokerFile, windowStart, windowEnd)
        : undefined;
    const latency = summarize(latencies);
    const windowSeconds = windowMs / 1000;
    return {
      workload: spec.workload,
      target: spec.target,
      ok: consumedWhileMeasuring,
      failed,
      ...(firstError !== undefined ? { firstError } : {}),
      seconds: windowSeconds,
      rate: perSecond(consumedInWindow, windowSeconds),
      timeLimited: false,
      ...(latency ? { latency } : {}),
      targetRate: rate,
      sent: sentInWindow,
      sendRate: perSecond(sentInWindow, windowSeconds),
      missing: Math.max(0, expected() - receivedFromWindow),
      clientCpuUs,
      clientGc,
      ...(pauses ? { pauses } : {}),
    };
  } finally {
    pauseLog?.stop(); // a no-op when pausesOf stopped it
    await closeWithin('sender', sender.close(), 10_000);
    await closeWithin('consumer', sub.close(), 20_000);
  }
}
