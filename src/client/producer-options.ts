/** The Producer's options, their defaults and their validation (producer.ts). */
import { Code } from '../common/codes.js';
import type { BackoffPolicy } from './backoff.js';
import { clientError } from './errors.js';
import type { MessageView } from './message.js';
import type { TransactionResolution } from './transaction.js';
import {
  integer,
  nonNegative,
  positive,
  resolveClientOptions,
  type ClientConfig,
  type ClientOptions,
} from './options.js';
import type { BatchingConfig } from './send-batcher.js';

/**
 * What the broker asks about a transaction its producer left open (no commit or rollback after the
 * broker's check time-out, e.g. because the producer died): look at your own records and answer
 * `COMMIT` or `ROLLBACK`; `UNKNOWN` (or nothing) leaves it open, and the broker asks again later,
 * up to its maximum number of checks, after which it rolls the transaction back.
 */
export type TransactionChecker = (
  message: MessageView,
) => TransactionCheckResult | undefined | Promise<TransactionCheckResult | undefined>;
export type TransactionCheckResult = TransactionResolution | 'UNKNOWN';

export interface ProducerOptions extends ClientOptions {
  /** Answers the broker's checks of transactions left open (see `TransactionChecker`). @defaultValue none */
  checker?: TransactionChecker;
  /** Topics whose routes are fetched by `start()`, so unknown topics fail there. @defaultValue [] */
  topics?: string[];
  /** Attempts per message, the first included. @defaultValue 3 */
  maxAttempts?: number;
  /** Flow control (TOO_MANY_REQUESTS): wait before the first retry (INITIAL_BACKOFF). @defaultValue 1000 */
  initialBackoffMs?: number;
  /** Flow control: growth of the wait per retry (MULTIPLIER). @defaultValue 1.6 */
  backoffMultiplier?: number;
  /** Flow control: random spread of each wait, as a fraction (JITTER). @defaultValue 0.2 */
  backoffJitter?: number;
  /** Flow control: longest wait (MAX_BACKOFF). @defaultValue 120000 */
  maxBackoffMs?: number;
  /**
   * After a transport failure, how long a retry may wait for the connection to come back, at least
   * (MIN_CONNECT_TIMEOUT; the wait is `max(this, backoff)`). @defaultValue 20000
   */
  minConnectTimeoutMs?: number;
  /** Coalesce concurrent sends to one topic into one request (FIFO messages never are). @defaultValue true */
  batching?: boolean;
  /**
   * While a request of the same topic is in flight, how long a batch waits for company after its
   * first message (with nothing in flight it goes out at the end of the current event-loop turn, so a
   * lone send is not delayed); 0 = never wait. @defaultValue 1
   */
  batchLingerMs?: number;
  /** Most messages per batch (1–1024). @defaultValue 256 */
  maxBatchMessages?: number;
  /** Most bytes per batch (bodies and properties, roughly). @defaultValue 4194304 (4 MiB) */
  maxBatchBytes?: number;
  /** The wait used for backoffs; injectable so tests can use a fake clock. @defaultValue a tracked timer */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Random numbers in [0, 1) for the jitter. @defaultValue Math.random */
  random?: () => number;
}

export interface SendOptions {
  /**
   * Rejects the send with the signal's reason when aborted. A message already on the wire may still
   * be stored by the broker; an aborted send is never retried.
   */
  signal?: AbortSignal;
}

export interface ProducerConfig {
  readonly base: ClientConfig;
  readonly topics: readonly string[];
  readonly maxAttempts: number;
  readonly backoff: Readonly<BackoffPolicy>;
  readonly minConnectTimeoutMs: number;
  readonly batching: Readonly<BatchingConfig> | undefined;
  readonly sleep: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
  readonly random: () => number;
  readonly checker: TransactionChecker | undefined;
}

export function resolveProducerOptions(o: ProducerOptions): ProducerConfig {
  const base = resolveClientOptions(o);
  const jitter = nonNegative('backoffJitter', o.backoffJitter, 0.2);
  if (jitter >= 1) throw clientError(Code.BAD_REQUEST, 'options.backoffJitter must be below 1');
  const multiplier = positive('backoffMultiplier', o.backoffMultiplier, 1.6);
  return Object.freeze({
    base,
    topics: Object.freeze([...(o.topics ?? [])]),
    maxAttempts: integer('maxAttempts', o.maxAttempts, 3, 1, 1000),
    backoff: Object.freeze({
      initialMs: nonNegative('initialBackoffMs', o.initialBackoffMs, 1000),
      multiplier,
      jitter,
      maxMs: nonNegative('maxBackoffMs', o.maxBackoffMs, 120_000),
    }),
    minConnectTimeoutMs: nonNegative('minConnectTimeoutMs', o.minConnectTimeoutMs, 20_000),
    batching:
      o.batching === false
        ? undefined
        : Object.freeze({
            lingerMs: nonNegative('batchLingerMs', o.batchLingerMs, 1),
            maxMessages: integer('maxBatchMessages', o.maxBatchMessages, 256, 1, 1024),
            maxBytes: positive('maxBatchBytes', o.maxBatchBytes, 4 * 1024 * 1024),
          }),
    sleep: o.sleep,
    random: o.random ?? Math.random,
    checker: o.checker,
  });
}
