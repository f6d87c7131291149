/**
 * The Producer: `send()` for normal, FIFO (`messageGroup`) and delay (`deliveryTimestamp`) messages,
 * `recallMessage()` for delay messages not yet due, and transactions (`beginTransaction()`, with a
 * `checker` the broker consults about transactions left open), with automatic batching
 * (send-batcher.ts) and the send retry of the RocketMQ seed:
 *
 * - a failed or timed-out request, a broker restarting or offline (transport errors), a slow broker,
 *   or a retriable error code is retried up to `maxAttempts` (the first attempt included), then the
 *   last error is thrown; every retry of a message keeps its message id;
 * - retries are immediate, on the next broker endpoint of the route when there are several, except
 *   for flow control (TOO_MANY_REQUESTS), which backs off exponentially (1 s, ×1.6, ±20 %, ≤ 120 s);
 * - after a transport failure the retry first waits for the connection, for at least
 *   `minConnectTimeoutMs` (MIN_CONNECT_TIMEOUT, 20 s);
 * - non-retriable codes (the 400xx class: bad request, not found, forbidden, too large …) are thrown
 *   at once.
 */
import { onAbort } from '../common/abort-listeners.js';
import { KeptKeyMap } from '../common/kept-key-map.js';
import { SlotSet } from '../common/slot-set.js';
import { Code, GrpcStatus } from '../common/codes.js';
import { PrefixedMessage } from '../protocol/transport/grpc-wire.js';
import {
  WireClientType,
  WirePermission,
  type Endpoints,
  type MessageQueue,
  type Settings,
  type Status,
  type TelemetryCommand,
} from '../protocol/wire-types.js';
import { backoffDelay, connectTimeout } from './backoff.js';
import { ClientBase } from './client-base.js';
import { endpointsKey } from './endpoints.js';
import { VelaClientError, abortReason, clientError, closedError, fromStatus, isOk } from './errors.js';
import { newMessageId } from './message-id.js';
import { MessageView, prepareMessage, wireOnQueue, type Message, type SendReceipt } from './message.js';
import { encodeSendRequest } from './send-encoder.js';
import { Transaction, type TransactionResolution } from './transaction.js';
import type { Connection } from './connection.js';
import { SendBatcher, type SendEntry } from './send-batcher.js';
import {
  resolveProducerOptions,
  type ProducerConfig,
  type ProducerOptions,
  type SendOptions,
} from './producer-options.js';

export type {
  ProducerOptions,
  SendOptions,
  TransactionChecker,
  TransactionCheckResult,
} from './producer-options.js';

interface SendResponse {
  status?: Status;
  entries?: {
    status?: Status;
    message_id?: string;
    offset?: number;
    transaction_id?: string;
    recall_handle?: string;
  }[];
}

const RESOLUTION_CODES = { COMMIT: 1, ROLLBACK: 2 } as const;
const SOURCE_CLIENT = 1;
const SOURCE_SERVER_CHECK = 2;

/** Until the broker's Settings say otherwise. */
const DEFAULT_MAX_BODY_SIZE = 4 * 1024 * 1024;

export class Producer extends ClientBase {
  protected readonly clientType = WireClientType.PRODUCER;
  private readonly options: ProducerConfig;
  private readonly batcher: SendBatcher | undefined;
  private readonly topics: Set<string>;
  // Not a Set and a Map with deletes: sends come and go at the call rate, and replaced hash tables
  // would keep each one alive until a full collection (slot-set.ts, kept-key-map.ts).
  private readonly inflight = new SlotSet<Promise<void>>();
  private readonly inflightByTopic = new KeptKeyMap<string, number>();
  private readonly closeSignal = new AbortController();
  private readonly roundRobin = new Map<string, number>();
  /** The broker each transactional message went to (EndTransaction goes there). */
  private readonly halfEndpoints = new WeakMap<object, Endpoints>();
  private maxBodySize = DEFAULT_MAX_BODY_SIZE;
  /** Each cached route's writable queues by broker, worked out once per route rather than per send. */
  private readonly writableQueues = new WeakMap<readonly MessageQueue[], WritableQueues>();

  constructor(options: ProducerOptions) {
    const config = resolveProducerOptions(options);
    super(config.base, 'producer');
    this.options = config;
    this.topics = new Set(config.topics);
    this.batcher = config.batching
      ? new SendBatcher(
          config.batching,
          this.timers,
          (topic, entries) => this.dispatch(topic, entries),
          (topic) => (this.inflightByTopic.get(topic) ?? 0) > 0,
        )
      : undefined;
  }

  /**
   * Send one message; resolves once the broker has stored it durably. Starts the producer if needed.
   * Rejects with a `VelaClientError` (the last one, after retries), or the signal's reason.
   */
  async send(message: Message, options: SendOptions = {}): Promise<SendReceipt> {
    return this.sendPrepared(message, false, options.signal);
  }

  /**
   * Begin a transaction: messages sent with `transaction.send()` stay invisible until
   * `transaction.commit()` (or are discarded by `rollback()`). Give the producer a `checker` so that
   * the broker can resolve transactions this process leaves open (see `TransactionChecker`).
   */
  beginTransaction(): Transaction {
    this.assertOpen();
    return new Transaction({
      sendHalf: (m, signal) => this.sendPrepared(m, true, signal),
      endTransaction: (topic, receipt, resolution) =>
        this.endTransaction(topic, receipt, resolution, SOURCE_CLIENT),
    });
  }

  /**
   * Cancel a delay message before its delivery time, by the `recallHandle` of its receipt. Resolves
   * with the message id; rejects with PRECONDITION_FAILED once it has been delivered.
   */
  async recallMessage(topic: string, recallHandle: string): Promise<{ messageId: string }> {
    this.assertOpen();
    if (typeof topic !== 'string' || topic === '')
      throw clientError(Code.ILLEGAL_TOPIC, 'a topic is required');
    if (typeof recallHandle !== 'string' || recallHandle === '') {
      throw clientError(Code.BAD_REQUEST, 'a recall handle is required (SendReceipt.recallHandle)');
    }
    await this.start();
    const res = await this.call<{ status?: Status; message_id?: string }>(
      this.connectionFor(this.clientConfig.accessPoint),
      'RecallMessage',
      { topic: this.resource(topic), recall_handle: recallHandle },
    );
    return { messageId: res.message_id ?? '' };
  }

  private async sendPrepared(
    message: Message,
    transactional: boolean,
    signal?: AbortSignal,
  ): Promise<SendReceipt> {
    if (signal?.aborted) throw abortReason(signal);
    this.assertOpen();
    const prepared = prepareMessage(message, this.clientConfig.namespace, newMessageId(), transactional);
    await this.start();
    this.assertOpen();
    if (prepared.wire.body!.length > this.maxBodySize) {
      throw clientError(
        Code.MESSAGE_BODY_TOO_LARGE,
        `the body is ${prepared.wire.body!.length} bytes; the broker accepts at most ${this.maxBodySize}`,
      );
    }
    if (!this.topics.has(prepared.topic)) {
      this.topics.add(prepared.topic);
      this.resendSettings();
    }
    return new Promise<SendReceipt>((resolve, reject) => {
      let unlisten: (() => void) | undefined;
      const entry: SendEntry = {
        message: prepared,
        settled: false,
        signal,
        resolve: (r) => {
          if (entry.settled) return;
          entry.settled = true;
          unlisten?.();
          resolve(r);
        },
        reject: (err) => {
          if (entry.settled) return;
          entry.settled = true;
          unlisten?.();
          reject(err);
        },
      };
      // Not addEventListener: a caller's signal often outlives its sends (common/abort-listeners.ts).
      if (signal)
        unlisten = onAbort(signal, () => {
          entry.reject(abortReason(signal));
          entry.onAbort?.();
        });
      // FIFO messages bypass batching: a batch retried after a partial failure could reorder them.
      // Transactional messages are sent alone and never retried (a retry would leave an orphan).
      if (this.batcher && !prepared.fifo && !prepared.transactional) this.batcher.add(entry);
      else this.dispatch(prepared.topic, [entry]);
    });
  }

  /** End a transactional message on the broker that stored it. */
  private async endTransaction(
    topic: string,
    receipt: { messageId: string; transactionId?: string },
    resolution: TransactionResolution,
    source: number,
    endpoints?: Endpoints,
  ): Promise<void> {
    if (!receipt.transactionId) {
      throw clientError(Code.INVALID_TRANSACTION_ID, `message ${receipt.messageId} has no transaction id`);
    }
    const target = endpoints ?? this.halfEndpoints.get(receipt) ?? this.clientConfig.accessPoint;
    await this.call(this.connectionFor(target), 'EndTransaction', {
      topic: this.resource(topic),
      message_id: receipt.messageId,
      transaction_id: receipt.transactionId,
      resolution: RESOLUTION_CODES[resolution],
      source,
    });
  }

  /** The broker asks about a transaction left open: the checker decides, we tell the broker. */
  protected override onOrphanedTransaction(
    conn: Connection,
    command: NonNullable<TelemetryCommand['recover_orphaned_transaction_command']>,
  ): void {
    const checker = this.options.checker;
    const messageId = command.message?.system_properties?.message_id ?? '';
    if (!checker) {
      this.logger.warn(
        { messageId, transactionId: command.transaction_id },
        'the broker asked about an open transaction, but this producer has no checker',
      );
      return;
    }
    const p = (async () => {
      const view = new MessageView(command.message, {
        endpointKey: conn.key,
        group: {},
        topic: command.message.topic ?? {},
        receiptHandle: '',
        owner: this,
      });
      const answer = await checker(view);
      if (answer !== 'COMMIT' && answer !== 'ROLLBACK') return;
      await this.endTransaction(
        view.topic,
        { messageId: view.messageId, transactionId: command.transaction_id },
        answer,
        SOURCE_SERVER_CHECK,
        conn.endpoints,
      );
      this.logger.debug({ messageId, resolution: answer }, 'resolved a transaction the broker asked about');
    })().catch((err: unknown) =>
      this.logger.error(
        { err, messageId, transactionId: command.transaction_id },
        'checking a transaction failed',
      ),
    );
    const slot = this.inflight.add(p);
    void p.finally(() => this.inflight.remove(slot));
  }

  protected startupTopics(): readonly string[] {
    return this.options.topics;
  }

  protected settingsBody(): Settings {
    return {
      publishing: {
        topics: [...this.topics].map((t) => this.resource(t)),
        validate_message_type: true,
      },
    };
  }

  protected applySettings(s: Settings): void {
    const max = s.publishing?.max_body_size;
    if (max && max > 0) this.maxBodySize = max;
  }

  /** Send what is batched now, wait for requests in flight; waits for backoff or reconnection end at once. */
  protected override async onClose(): Promise<void> {
    this.batcher?.flushAll();
    this.closeSignal.abort(closedError('producer'));
    while (this.inflight.size > 0) await Promise.allSettled(this.inflight.values());
  }

  private dispatch(topic: string, entries: SendEntry[]): void {
    const p = this.sendWithRetry(topic, entries).catch((err: unknown) => {
      // Not expected (sendWithRetry settles every entry); never leave a caller hanging.
      this.logger.error({ err, topic }, 'send failed unexpectedly');
      for (const e of entries) e.reject(err);
    });
    const slot = this.inflight.add(p);
    this.inflightByTopic.set(topic, (this.inflightByTopic.get(topic) ?? 0) + 1);
    void p.finally(() => {
      this.inflight.remove(slot);
      const n = (this.inflightByTopic.get(topic) ?? 1) - 1;
      if (n > 0) this.inflightByTopic.set(topic, n);
      else this.inflightByTopic.delete(topic);
    });
  }

  /** A signal that aborts once every entry's caller has given up (none if some caller cannot). */
  private requestSignal(entries: readonly SendEntry[]): AbortSignal | undefined {
    if (!entries.some((e) => e.signal)) return undefined;
    const call = new AbortController();
    for (const e of entries) e.onAbort = () => entries.every((x) => x.settled) && call.abort();
    return call.signal;
  }

  /** Send `batch` (one topic) until every entry is settled: stored, refused, or out of attempts. */
  private async sendWithRetry(topic: string, batch: SendEntry[]): Promise<void> {
    const o = this.options;
    let entries = batch;
    let lastErrors = new Map<SendEntry, VelaClientError>();
    let reconnect = false;
    const maxAttempts = batch.some((e) => e.message.transactional) ? 1 : o.maxAttempts;
    for (let attempt = 1; ; attempt++) {
      entries = entries.filter((e) => !e.settled);
      if (entries.length === 0) return;
      const failed = new Map<SendEntry, VelaClientError>();
      // When every caller of this request has given up, the request itself is cancelled. Callers
      // without a signal cannot give up; when every caller passed the same signal (an application's
      // shutdown signal, say) the request takes that signal; otherwise a controller of its own.
      const callSignal = sharedSignal(entries) ?? this.requestSignal(entries);
      try {
        const queue = await this.pickQueue(topic, attempt);
        const conn = this.connectionFor(queue.broker.endpoints);
        await this.ensureSession(conn);
        if (reconnect) {
          await conn.waitForReady(
            connectTimeout(o.backoff, o.minConnectTimeoutMs, attempt - 1),
            this.closeSignal.signal,
          );
        }
        // Written by hand (after its gRPC prefix), or (a message it cannot write as protobufjs would)
        // by protobufjs.
        const bytes = encodeSendRequest(
          entries.map((e) => e.message.wire),
          queue.id,
          true,
        );
        const request = bytes
          ? new PrefixedMessage(bytes)
          : { messages: entries.map((e) => wireOnQueue(e.message.wire, queue.id)) };
        const res = await conn.unary<SendResponse>('SendMessage', request, {
          timeoutMs: this.clientConfig.requestTimeoutMs,
          ...(callSignal ? { signal: callSignal } : {}),
        });
        const results = res.entries ?? [];
        if (results.length !== entries.length) {
          const err =
            res.status && !isOk(res.status.code)
              ? fromStatus(res.status, 'SendMessage')
              : new VelaClientError(
                  Code.INTERNAL_ERROR,
                  `SendMessage answered ${results.length} entries for ${entries.length} messages`,
                  { rpc: 'SendMessage' },
                );
          for (const e of entries) failed.set(e, err);
        } else {
          entries.forEach((e, i) => {
            const r = results[i]!;
            const st = r.status ?? res.status;
            if (st && isOk(st.code)) {
              const receipt: SendReceipt = {
                messageId: r.message_id || e.message.messageId,
                offset: r.offset ?? 0,
                ...(r.transaction_id ? { transactionId: r.transaction_id } : {}),
                ...(r.recall_handle ? { recallHandle: r.recall_handle } : {}),
              };
              if (e.message.transactional) this.halfEndpoints.set(receipt, queue.broker.endpoints);
              e.resolve(receipt);
            } else failed.set(e, fromStatus(st, 'SendMessage'));
          });
        }
      } catch (err) {
        if (this.closeSignal.signal.aborted && err === this.closeSignal.signal.reason) {
          // Closing cut a reconnection wait short: each message fails with what failed it before.
          for (const e of entries) e.reject(lastErrors.get(e) ?? err);
          return;
        }
        if (callSignal?.aborted) return; // every caller aborted: each has its answer
        if (!(err instanceof VelaClientError)) {
          for (const e of entries) e.reject(err);
          return;
        }
        for (const e of entries) failed.set(e, err);
      }
      const retry = new Map<SendEntry, VelaClientError>();
      for (const [e, err] of failed) {
        if (e.settled) continue;
        if (!err.retriable || attempt >= maxAttempts) e.reject(err);
        else retry.set(e, err);
      }
      if (retry.size === 0) return;
      const errors = [...retry.values()];
      const flowControl = errors.some((e) => e.flowControl);
      const delay = flowControl ? backoffDelay(o.backoff, attempt, o.random) : 0;
      this.logger.debug(
        { topic, attempt, messages: retry.size, code: errors[0]!.codeName, delayMs: delay },
        'send failed; retrying',
      );
      if (flowControl) {
        try {
          await (o.sleep ?? ((ms, signal) => this.timers.sleep(ms, signal)))(delay, this.closeSignal.signal);
        } catch {
          for (const [e, err] of retry) e.reject(err);
          return;
        }
      }
      reconnect = errors.some((e) => e.transport && e.grpcCode === GrpcStatus.UNAVAILABLE);
      lastErrors = retry;
      entries = [...retry.keys()];
    }
  }

  /**
   * The queue for attempt `attempt`: brokers with a writable queue, taken in turn so that a retry goes
   * to another broker when the route has several; a queue of that broker in turn (the broker chooses
   * the real queue anyway, for FIFO by message group).
   */
  private async pickQueue(topic: string, attempt: number): Promise<MessageQueue> {
    const route = await this.route(topic);
    let writable = this.writableQueues.get(route);
    if (!writable) {
      writable = writableByBroker(route);
      this.writableQueues.set(route, writable);
    }
    const brokers = writable.brokers;
    if (brokers.length === 0) {
      throw new VelaClientError(Code.FORBIDDEN, `no writable queue in the route of ${topic}`, {
        rpc: 'QueryRoute',
      });
    }
    const n = this.roundRobin.get(topic) ?? Math.floor(Math.random() * 1024);
    if (attempt === 1) this.roundRobin.set(topic, n + 1);
    const own = writable.queues[(n + attempt - 1) % brokers.length]!;
    return own[n % own.length]!;
  }
}

interface WritableQueues {
  /** Brokers with a writable queue, in route order. */
  brokers: string[];
  /** The writable queues of each of `brokers`, same order. */
  queues: MessageQueue[][];
}

function writableByBroker(route: readonly MessageQueue[]): WritableQueues {
  const byBroker = new Map<string, MessageQueue[]>();
  for (const q of route) {
    const writable = q.permission === WirePermission.WRITE || q.permission === WirePermission.READ_WRITE;
    if (!writable || !q.broker?.endpoints?.addresses?.length) continue;
    const key = endpointsKey(q.broker.endpoints);
    let list = byBroker.get(key);
    if (!list) byBroker.set(key, (list = []));
    list.push(q);
  }
  return { brokers: [...byBroker.keys()], queues: [...byBroker.values()] };
}

/** The signal every entry was sent with, if they all share one. */
function sharedSignal(entries: readonly SendEntry[]): AbortSignal | undefined {
  const first = entries[0]?.signal;
  if (!first) return undefined;
  for (let i = 1; i < entries.length; i++) if (entries[i]!.signal !== first) return undefined;
  return first;
}
