/**
 * Consumer-group retry policies: how long a failed message waits before its next delivery.
 * CUSTOMIZED walks a table (the last value repeats); EXPONENTIAL grows from `initial` by
 * `multiplier` up to `max`. The JSON shape is mqadmin's `groupRetryPolicy`.
 */
import type { GroupRetryPolicy } from '../common/admin-api.js';
import { VelaError } from '../common/errors.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;

/** RocketMQ's `messageDelayLevel`: 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h. */
export const DELAY_LEVELS_MS: readonly number[] = Object.freeze([
  1 * S,
  5 * S,
  10 * S,
  30 * S,
  1 * M,
  2 * M,
  3 * M,
  4 * M,
  5 * M,
  6 * M,
  7 * M,
  8 * M,
  9 * M,
  10 * M,
  20 * M,
  30 * M,
  1 * H,
  2 * H,
]);
export const MAX_DELAY_LEVEL = DELAY_LEVELS_MS.length;

/**
 * 10 s, 30 s, 1 m, 2 m … 10 m, 20 m, 30 m, 1 h, 2 h (then 2 h again): design §3. RocketMQ's retry
 * table is its delay levels from the third on (retry n waits level 3 + n).
 */
export const DEFAULT_RETRY_TABLE_MS: readonly number[] = Object.freeze(DELAY_LEVELS_MS.slice(2));

export type RetryPolicy =
  | { type: 'CUSTOMIZED'; next: number[] }
  | { type: 'EXPONENTIAL'; initial: number; max: number; multiplier: number };

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  type: 'CUSTOMIZED',
  next: [...DEFAULT_RETRY_TABLE_MS],
}) as RetryPolicy;

/** Delay before delivery attempt `attempt + 1`, after attempt `attempt` (≥ 1) failed. */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  const n = Math.max(1, attempt);
  if (policy.type === 'CUSTOMIZED') {
    const table = policy.next.length > 0 ? policy.next : DEFAULT_RETRY_TABLE_MS;
    return table[Math.min(n - 1, table.length - 1)]!;
  }
  return Math.min(policy.max, policy.initial * Math.pow(policy.multiplier, Math.min(n - 1, 64)));
}

/** Longest retry interval: one year (further would be a lost message, and beyond a timer's reach). */
const MAX_INTERVAL_MS = 365 * 24 * 3600_000;
/** Most steps of a customized policy (RocketMQ's own table has 18). */
const MAX_RETRY_STEPS = 1000;

/** Parse mqadmin's JSON form: `{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[ms,…]}}` or EXPONENTIAL. */
export function parseRetryPolicy(json: unknown): RetryPolicy {
  const bad = (why: string) => new VelaError('ILLEGAL_GROUP_CONFIG', `retry policy: ${why}`);
  const o = typeof json === 'string' ? safeParse(json) : json;
  if (!o || typeof o !== 'object') throw bad('expected a JSON object');
  const rec = o as Record<string, unknown>;
  const type = String(rec.type ?? '').toUpperCase();
  if (type === 'CUSTOMIZED') {
    const c = (rec.customizedRetryPolicy ?? rec) as Record<string, unknown>;
    const next = c.next ?? [];
    if (
      !Array.isArray(next) ||
      next.length > MAX_RETRY_STEPS ||
      !next.every((x) => Number.isFinite(x) && x >= 0 && x <= MAX_INTERVAL_MS)
    ) {
      throw bad(
        `customizedRetryPolicy.next must be a list of at most ${MAX_RETRY_STEPS} intervals from 0 to ${MAX_INTERVAL_MS} ms (a year)`,
      );
    }
    return { type: 'CUSTOMIZED', next: next.length ? (next as number[]) : [...DEFAULT_RETRY_TABLE_MS] };
  }
  if (type === 'EXPONENTIAL') {
    const e = (rec.exponentialRetryPolicy ?? rec) as Record<string, unknown>;
    const initial = Number(e.initial ?? 5000);
    const max = Number(e.max ?? 2 * H);
    const multiplier = Number(e.multiplier ?? 2);
    if (!(initial >= 0 && max >= initial && max <= MAX_INTERVAL_MS && multiplier >= 1 && multiplier <= 1e6)) {
      throw bad(
        `exponentialRetryPolicy needs 0 ≤ initial ≤ max ≤ ${MAX_INTERVAL_MS} ms (a year) and 1 ≤ multiplier ≤ 1e6`,
      );
    }
    return { type: 'EXPONENTIAL', initial, max, multiplier };
  }
  throw bad(`unknown type "${String(rec.type)}" (CUSTOMIZED or EXPONENTIAL)`);
}

/** mqadmin's JSON form of a policy. */
export function formatRetryPolicy(p: RetryPolicy): GroupRetryPolicy {
  return p.type === 'CUSTOMIZED'
    ? { type: 'CUSTOMIZED', customizedRetryPolicy: { next: p.next } }
    : {
        type: 'EXPONENTIAL',
        exponentialRetryPolicy: { initial: p.initial, max: p.max, multiplier: p.multiplier },
      };
}

function safeParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}
