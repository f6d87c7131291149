/**
 * Time, injectable. Production code asks a `Clock` for the time so tests can move it by hand
 * (retention, retry schedules) instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/**
 * The wall time at start plus the monotonic time elapsed since: it never jumps when the system clock
 * is stepped (NTP, a manual change), so a step cannot expire every in-flight message at once or make
 * retention delete segments early. Deadlines that outlive the process are stored as wall times and
 * compared with this clock after a restart, which re-reads the wall time once.
 */
const wallAtStart = Date.now();
const monotonicAtStart = performance.now();

export const systemClock: Clock = {
  now: () => Math.floor(wallAtStart + (performance.now() - monotonicAtStart)),
};

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  constructor(private current = 0) {}
  now(): number {
    return this.current;
  }
  set(ms: number): void {
    this.current = ms;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}
