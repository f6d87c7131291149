/**
 * Client deadlines too far away for a timer mean "no deadline".
 *
 * grpc-js (up to 1.14.7, the newest) arms a server call's deadline timer with `timeout | 0`: a
 * `grpc-timeout` above 2^31 − 1 ms (24.8 days) wraps to a negative delay and the call is cancelled
 * with DEADLINE_EXCEEDED at once. The official Java client opens every Telemetry stream with a
 * deadline 60 × 365 days away (`ClientImpl.TELEMETRY_TIMEOUT`, sent as `31536000M`), so without this
 * each Java client loses its Settings stream at startup and fails ("Failed to fetch topics").
 *
 * The fix wraps grpc-js's own header handler (its server call class is exported by the module that
 * defines it, not by the package index): a timeout a timer cannot hold leaves the call without a
 * server-side deadline, as gRPC specifies for an absent one; shorter timeouts go through unchanged.
 * Remove it once grpc-js clamps the timeout itself.
 */
import { BaseServerInterceptingCall } from '@grpc/grpc-js/build/src/server-interceptors.js';

/** The longest delay `setTimeout` honours. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** gRPC's timeout units (PROTOCOL-HTTP2: `TimeoutUnit`) in milliseconds. */
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** A `grpc-timeout` header value in milliseconds; undefined when it is not one. */
export function grpcTimeoutMs(header: unknown): number | undefined {
  const m = /^\s*(\d{1,8})\s*([HMSmun])\s*$/.exec(String(header));
  return m ? Number(m[1]) * UNIT_MS[m[2]!]! : undefined;
}

type TimeoutHandler = (this: unknown, header: unknown) => void;
const WRAPPED = Symbol.for('vela.grpcTimeoutClamp');

/** Install the fix (idempotent: it wraps grpc-js once per process). */
export function installGrpcTimeoutClamp(): void {
  const proto = BaseServerInterceptingCall.prototype as unknown as Record<PropertyKey, unknown>;
  const original = proto.handleTimeoutHeader as TimeoutHandler | undefined;
  if (typeof original !== 'function') {
    throw new Error('@grpc/grpc-js changed: BaseServerInterceptingCall.handleTimeoutHeader is gone');
  }
  if (proto[WRAPPED]) return;
  const clamped: TimeoutHandler = function (this: unknown, header: unknown) {
    const ms = grpcTimeoutMs(header);
    if (ms !== undefined && ms > MAX_TIMER_MS) return;
    original.call(this, header);
  };
  proto.handleTimeoutHeader = clamped;
  proto[WRAPPED] = true;
}
