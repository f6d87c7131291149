/**
 * Options shared by every gRPC client (Producer, PushConsumer, SimpleConsumer), with their defaults,
 * and the helpers that resolve user options once into frozen configs (invalid values throw
 * `BAD_REQUEST` at construction, not at first use).
 */
import { Code } from '../common/codes.js';
import type { Logger } from '../common/logger.js';
import { silentLogger } from '../common/silent-logger.js';
import { clientError } from './errors.js';
import { parseEndpoints } from './endpoints.js';
import type { Endpoints } from '../protocol/wire-types.js';
import type { ClientTls } from './h2-channel.js';

export type { ClientTls };

export interface SessionCredentials {
  accessKey: string;
  accessSecret: string;
  /** Sent as `x-mq-session-token` when set. */
  securityToken?: string;
}

export interface ClientOptions {
  /**
   * The broker's gRPC access point: `host:port`, or several joined by `;`. A missing port means 8081.
   * Required.
   */
  endpoints: string;
  /** Namespace of every topic and group (sent as `x-mq-namespace`). @defaultValue '' (none) */
  namespace?: string;
  /** Deadline of each RPC; long polls get their polling time on top. @defaultValue 3000 */
  requestTimeoutMs?: number;
  /**
   * How long to wait for the broker's reply to the Settings sent when a Telemetry session opens,
   * before failing with `REQUEST_TIMEOUT` instead of hanging. @defaultValue 5000
   */
  settingsTimeoutMs?: number;
  /** Signs every request (`authorization: MQv2-HMAC-SHA1 …`). @defaultValue none */
  credentials?: SessionCredentials;
  /** Interval of Heartbeat calls to every broker in use. @defaultValue 10000 */
  heartbeatIntervalMs?: number;
  /** Interval at which cached topic routes are queried again. @defaultValue 30000 */
  routeRefreshIntervalMs?: number;
  /** Wait before re-opening a Telemetry stream that ended while the client is open. @defaultValue 1000 */
  telemetryReconnectDelayMs?: number;
  /**
   * TLS to the broker: `true` checks its certificate against the system's CAs (and
   * `NODE_EXTRA_CA_CERTS`); `{ ca }` trusts that CA or self-signed certificate (a Vela broker's is
   * `<dataDir>/tls/vela-cert.pem`); `{ rejectUnauthorized: false }` skips the check (testing only).
   * A Vela broker serves TLS and plaintext on the same port. @defaultValue false (plaintext)
   */
  tls?: ClientTls;
  /** A pino logger (`createLogger` from `vela`). @defaultValue silent */
  logger?: Logger;
}

export interface ClientConfig {
  readonly accessPoint: Endpoints;
  readonly accessPointText: string;
  readonly namespace: string;
  readonly requestTimeoutMs: number;
  readonly settingsTimeoutMs: number;
  readonly credentials: SessionCredentials | undefined;
  readonly heartbeatIntervalMs: number;
  readonly routeRefreshIntervalMs: number;
  readonly telemetryReconnectDelayMs: number;
  readonly tls: ClientTls;
  readonly logger: Logger;
}

export function resolveClientOptions(o: ClientOptions): ClientConfig {
  if (!o || typeof o.endpoints !== 'string' || o.endpoints.trim() === '') {
    throw clientError(Code.ILLEGAL_ACCESS_POINT, 'options.endpoints is required (e.g. "127.0.0.1:8081")');
  }
  return Object.freeze({
    accessPoint: parseEndpoints(o.endpoints),
    accessPointText: o.endpoints,
    namespace: o.namespace ?? '',
    requestTimeoutMs: positive('requestTimeoutMs', o.requestTimeoutMs, 3000),
    settingsTimeoutMs: positive('settingsTimeoutMs', o.settingsTimeoutMs, 5000),
    credentials: o.credentials ? Object.freeze({ ...o.credentials }) : undefined,
    heartbeatIntervalMs: positive('heartbeatIntervalMs', o.heartbeatIntervalMs, 10_000),
    routeRefreshIntervalMs: positive('routeRefreshIntervalMs', o.routeRefreshIntervalMs, 30_000),
    telemetryReconnectDelayMs: nonNegative('telemetryReconnectDelayMs', o.telemetryReconnectDelayMs, 1000),
    tls: tlsOption(o.tls),
    logger: o.logger ?? silentLogger(),
  });
}

function tlsOption(v: ClientTls | undefined): ClientTls {
  if (v === undefined || v === false) return false;
  if (v === true) return true;
  if (typeof v !== 'object' || v === null) {
    throw clientError(Code.BAD_REQUEST, `options.tls must be true, false or an object, got ${String(v)}`);
  }
  return Object.freeze({ ...v });
}

/** A number > 0 (or the default), else BAD_REQUEST naming the option. */
export function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw clientError(Code.BAD_REQUEST, `options.${name} must be a positive number, got ${String(value)}`);
  }
  return value;
}

/** A number ≥ 0 (or the default). */
export function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw clientError(Code.BAD_REQUEST, `options.${name} must be a number ≥ 0, got ${String(value)}`);
  }
  return value;
}

/** An integer in [min, max] (or the default). */
export function integer(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw clientError(
      Code.BAD_REQUEST,
      `options.${name} must be an integer from ${min} to ${max}, got ${String(value)}`,
    );
  }
  return value;
}

/** A consumer group or topic name that must be present. */
export function requiredName(name: string, value: string | undefined): string {
  if (typeof value !== 'string' || value === '') {
    throw clientError(Code.BAD_REQUEST, `options.${name} is required`);
  }
  return value;
}
