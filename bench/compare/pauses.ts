/**
 * What W3's slow messages waited for (`bench:compare --w3-pauses`). A message is slow when its
 * end-to-end latency passes `slowMs` (5 ms, issue 12's p99 goal). Each process records its pauses:
 * the garbage collector's (V8's `gc` performance entries) and every other time its event loop did not
 * turn for `STALL_MS` or more (a 1 ms timer that ran late: a long task, a write on the loop, the
 * process not scheduled). A slow message is counted by whose pauses overlapped its trip from send
 * to arrival: the client's only, the broker's only, both, or neither.
 *
 * The client process records its own; Vela's broker child writes its pauses to a file the client
 * reads after the window (`PAUSES_FILE_ENV`). Times are epoch milliseconds (`performance.timeOrigin`
 * plus `performance.now()`), so the two processes' records line up to well under a millisecond.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';

/** The broker child appends its pauses to the file this names (one `at ms kind` line each). */
export const PAUSES_FILE_ENV = 'VELA_COMPARE_PAUSES';

/** An event loop that did not turn for this long, ms, counts as a pause. */
export const STALL_MS = 4;

export type PauseKind = 'gc' | 'stall';

export interface Pause {
  /** Start, epoch ms. */
  at: number;
  ms: number;
  kind: PauseKind;
}

/** Record this process's pauses from `start()` to `stop()`. */
export class PauseLog {
  private readonly pauses: Pause[] = [];
  private observer: PerformanceObserver | undefined;
  private timer: NodeJS.Timeout | undefined;

  start(): this {
    this.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        this.pauses.push({ at: performance.timeOrigin + e.startTime, ms: e.duration, kind: 'gc' });
      }
    });
    this.observer.observe({ entryTypes: ['gc'] });
    let last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      // The timer asks for 1 ms: anything past STALL_MS is time the loop could not turn.
      if (now - last >= STALL_MS)
        this.pauses.push({ at: performance.timeOrigin + last, ms: now - last, kind: 'stall' });
      last = now;
    }, 1);
    this.timer.unref();
    return this;
  }

  /** The pauses recorded so far, and forget them. */
  take(): Pause[] {
    return this.pauses.splice(0);
  }

  stop(): Pause[] {
    this.observer?.disconnect();
    if (this.timer) clearInterval(this.timer);
    return this.take();
  }
}

/** Append `pauses` to `file` (the broker child, a few times a second). */
export function appendPauses(file: string, pauses: readonly Pause[]): void {
  if (pauses.length === 0) return;
  appendFileSync(file, pauses.map((p) => `${p.at.toFixed(3)} ${p.ms.toFixed(3)} ${p.kind}\n`).join(''));
}

/** The pauses a broker child has written to `file` so far; null when there is no such file. */
export function readPauses(file: string): Pause[] | null {
  if (!existsSync(file)) return null;
  const out: Pause[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [at, ms, kind] = line.split(' ');
    if ((kind === 'gc' || kind === 'stall') && Number.isFinite(Number(at)) && Number.isFinite(Number(ms))) {
      out.push({ at: Number(at), ms: Number(ms), kind });
    }
  }
  return out;
}

/** How a W3 window's slow messages line up with the two processes' pauses. */
export interface PauseBreakdown {
  /** A message slower than this (ms) is slow. */
  slowMs: number;
  /** Messages sent in the window that arrived. */
  messages: number;
  slow: number;
  /** Slow messages whose trip overlapped a pause of the client only, of the broker only, of both, of neither. */
  clientOnly: number;
  brokerOnly: number;
  both: number;
  neither: number;
  /** Time in the window the process was paused, ms (collections and stalls, overlaps counted once), and the collector's part. */
  client: { ms: number; gcMs: number };
  /** null: the server's pauses are not known (a peer that is not Vela's broker). */
  broker: { ms: number; gcMs: number } | null;
}

/** Sorted by start; each pause's end, for the overlap search. */
function intervals(pauses: readonly Pause[]): { starts: Float64Array; ends: Float64Array } {
  const sorted = [...pauses].sort((a, b) => a.at - b.at);
  const starts = new Float64Array(sorted.length);
  const ends = new Float64Array(sorted.length);
  let reach = -Infinity;
  sorted.forEach((p, i) => {
    starts[i] = p.at;
    // The furthest end so far: ends[] is then non-decreasing, so a binary search finds overlaps.
    reach = Math.max(reach, p.at + p.ms);
    ends[i] = reach;
  });
  return { starts, ends };
}

/** Whether some pause overlaps [from, to]. */
function overlaps(iv: { starts: Float64Array; ends: Float64Array }, from: number, to: number): boolean {
  // The last pause that starts at or before `to`: the furthest end of it and all before it.
  let lo = 0;
  let hi = iv.starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (iv.starts[mid]! <= to) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && iv.ends[lo - 1]! >= from;
}

/** Time in [from, to) covered by `pauses` (a collection is also a late timer: counted once), ms. */
function covered(pauses: readonly Pause[], from: number, to: number): number {
  const sorted = pauses
    .map((p) => [Math.max(p.at, from), Math.min(p.at + p.ms, to)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let total = 0;
  let end = -Infinity;
  for (const [a, b] of sorted) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
}

function pauseTime(pauses: readonly Pause[], from: number, to: number): { ms: number; gcMs: number } {
  return {
    ms: covered(pauses, from, to),
    gcMs: covered(
      pauses.filter((p) => p.kind === 'gc'),
      from,
      to,
    ),
  };
}

/**
 * Count the slow ones of `messages` (pairs: sent at, epoch ms, and latency, ms) by the pauses of the
 * client and (when known) the broker that overlapped their trip. `window` bounds the pause totals.
 */
export function pauseBreakdown(
  messages: ArrayLike<number>,
  client: readonly Pause[],
  broker: readonly Pause[] | null,
  window: { from: number; to: number },
  slowMs = 5,
): PauseBreakdown {
  const c = intervals(client);
  const b = broker ? intervals(broker) : null;
  const out: PauseBreakdown = {
    slowMs,
    messages: messages.length >> 1,
    slow: 0,
    clientOnly: 0,
    brokerOnly: 0,
    both: 0,
    neither: 0,
    client: pauseTime(client, window.from, window.to),
    broker: broker ? pauseTime(broker, window.from, window.to) : null,
  };
  for (let i = 0; i + 1 < messages.length; i += 2) {
    const sent = messages[i]!;
    const latency = messages[i + 1]!;
    if (!(latency > slowMs)) continue;
    out.slow++;
    const inClient = overlaps(c, sent, sent + latency);
    const inBroker = b !== null && overlaps(b, sent, sent + latency);
    if (inClient && inBroker) out.both++;
    else if (inClient) out.clientOnly++;
    else if (inBroker) out.brokerOnly++;
    else out.neither++;
  }
  return out;
}
