/**
 * Retry intervals. `backoffDelay` is the producer's flow-control backoff from the send-retry seed
 * (exponential: initial 1 s, ×1.6, jitter ±20 %, at most 120 s) and the connect-timeout rule
 * (`max(MIN_CONNECT_TIMEOUT, backoff)`); `nackDelayMs` reads the consumer group's retry policy from
 * the Settings reply to pick a push consumer's nack interval for a given delivery attempt.
 */
import { toMillis } from '../protocol/codec.js';
import type { RetryPolicyWire } from '../protocol/wire-types.js';

export interface BackoffPolicy {
  /** Wait before the first retry. */
  initialMs: number;
  /** Growth factor per retry. */
  multiplier: number;
  /** Random spread, as a fraction of the wait (0.2 = ±20 %). */
  jitter: number;
  /** Longest wait, jitter included. */
  maxMs: number;
}

/**
 * The wait before retry number `retry` (1 = the first retry):
 * `min(max, min(max, initial × multiplier^(retry−1)) × (1 ± jitter))`.
 * `random` returns a number in [0, 1) (0.5 means no jitter).
 */
export function backoffDelay(p: BackoffPolicy, retry: number, random: () => number = Math.random): number {
  const n = Math.max(1, retry);
  const base = Math.min(p.maxMs, p.initialMs * Math.pow(p.multiplier, Math.min(n - 1, 1024)));
  const spread = 1 + p.jitter * (2 * random() - 1);
  return Math.max(0, Math.min(p.maxMs, base * spread));
}

/** How long a connection attempt may take before retry `retry`: never less than `minConnectTimeoutMs`. */
export function connectTimeout(p: BackoffPolicy, minConnectTimeoutMs: number, retry: number): number {
  const n = Math.max(1, retry);
  return Math.max(minConnectTimeoutMs, Math.min(p.maxMs, p.initialMs * Math.pow(p.multiplier, n - 1)));
}

/**
 * The retry interval the group's policy gives after delivery attempt `attempt` failed (exponential:
 * `min(max, initial × multiplier^(attempt−1))`; customized: the attempt's entry, the last repeating).
 * The broker floors a push consumer's nack to the same policy, so this is a courtesy, not the rule.
 */
export function nackDelayMs(policy: RetryPolicyWire | undefined, attempt: number): number {
  const n = Math.max(1, attempt);
  const exp = policy?.exponential_backoff;
  if (exp) {
    const initial = toMillis(exp.initial) ?? 0;
    const max = toMillis(exp.max) ?? initial;
    const multiplier = exp.multiplier || 1;
    return Math.round(Math.min(max, initial * Math.pow(multiplier, Math.min(n - 1, 1024))));
  }
  const next = policy?.customized_backoff?.next ?? [];
  if (next.length > 0) return toMillis(next[Math.min(n - 1, next.length - 1)]) ?? 0;
  return 0;
}

/**
 * The pause before receiving again after a failed receive (the `failures`-th in a row): flow control
 * backs off from 100 ms, doubling up to 5 s, so a loaded broker is not hammered; other failures
 * (broker restarting, network) from 500 ms, doubling up to 5 s.
 */
export function receiveRetryDelay(flowControl: boolean, failures: number): number {
  const n = Math.max(1, failures);
  return Math.min(5000, (flowControl ? 100 : 500) * Math.pow(2, Math.min(n - 1, 16)));
}
