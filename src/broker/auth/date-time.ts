/**
 * The clock check of a signed request: its `x-mq-date-time` (`yyyyMMdd'T'HHmmss'Z'`) must be within
 * the skew window of the broker's clock, so a captured signature stops working after a while.
 *
 * The header is meant to be UTC, but the Java (SimpleDateFormat), Go (time.Now) and Python
 * (datetime.now) clients format their machine's *local* time and append a literal `Z`; only the
 * Node client and Vela's SDK send UTC. With `timeZoneOffsets` on, a value off by a whole time-zone
 * offset (a multiple of 15 minutes, −12 h to +14 h) is accepted too, within the same skew.
 */
import { VelaError } from '../../common/errors.js';

const QUARTER_HOUR = 15 * 60_000;
const WEST_MOST = -12 * 3600_000;
const EAST_MOST = 14 * 3600_000;

export interface ClockPolicy {
  /** Largest difference from the broker's clock; 0 turns the check off. */
  skewMs: number;
  /** Also accept local times stamped with a `Z` (see above). */
  timeZoneOffsets: boolean;
}

/** The instant a `yyyyMMdd'T'HHmmss'Z'` value names (read as UTC), or undefined if malformed. */
export function parseDateTime(value: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(t);
  if (back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    return undefined;
  }
  return t;
}

/** Throws `ACL_UNAUTHORIZED` unless `value` is a well-formed date-time within the policy's window of `nowMs`. */
export function checkDateTime(value: string, nowMs: number, policy: ClockPolicy): void {
  const stamped = parseDateTime(value);
  if (stamped === undefined) {
    throw new VelaError('ACL_UNAUTHORIZED', `x-mq-date-time "${value}" is not of the form yyyyMMddTHHmmssZ`);
  }
  if (policy.skewMs === 0) return;
  const diff = stamped - nowMs;
  if (Math.abs(diff) <= policy.skewMs) return;
  if (policy.timeZoneOffsets && diff >= WEST_MOST - policy.skewMs && diff <= EAST_MOST + policy.skewMs) {
    const offset = Math.round(diff / QUARTER_HOUR) * QUARTER_HOUR;
    if (Math.abs(diff - offset) <= policy.skewMs) return;
  }
  const minutes = Math.round(diff / 60_000);
  throw new VelaError(
    'ACL_UNAUTHORIZED',
    `x-mq-date-time ${value} is ${Math.abs(minutes)} min ${diff > 0 ? 'ahead of' : 'behind'} the broker's ` +
      `clock (allowed: ${Math.round(policy.skewMs / 1000)} s${policy.timeZoneOffsets ? ' plus a time-zone offset' : ''})`,
  );
}
