/**
 * The PushConsumer: receives on its own and calls `listener` for each message.
 *
 * Per assignment (QueryAssignment, every `assignmentIntervalMs`) `receiveConcurrency` long-polling
 * loops receive with `auto_renew` (the broker keeps the messages invisible while this client lives) as
 * long as fewer than `maxCachedMessages`, with bodies of fewer than `maxCachedBytes`, are waiting or
 * running (acks on their way do not count, up to as many again; consume-dispatcher.ts). Listeners run
 * with bounded concurrency; for a FIFO group (the broker's Settings reply says `fifo`) the messages of
 * one message group run one at a time, in order (consume-dispatcher.ts). SUCCESS acks (batched);
 * FAILURE, a thrown error, a listener past `consumeTimeoutMs` or a corrupted body nacks:
 * ChangeInvisibleDuration with the group's retry interval for that attempt (the broker floors it to
 * the group's policy, and dead-letters the message once its attempts are spent).
 *
 * `close()` stops receiving, lets running listeners finish (each bounded by its consume timeout),
 * settles them, and only then terminates: messages received but never handed to the listener go back
 * to the broker with NotifyClientTermination.
 */
import { randomUUID } from 'node:crypto';
import { Code } from '../common/codes.js';
import { WireClientType, type MessageQueue, type Status } from '../protocol/wire-types.js';
import { nackDelayMs, receiveRetryDelay } from './backoff.js';
import { ConsumeDispatcher, type DispatchTicket } from './consume-dispatcher.js';
import {
  ConsumerBase,
  resolveConsumerOptions,
  type ConsumerConfig,
  type ConsumerOptions,
} from './consumer-base.js';
import { VelaClientError, clientError, isVelaClientError } from './errors.js';
import { withQueueDefaults } from './message-queue.js';
import type { MessageView } from './message.js';
import { integer, positive, resolveClientOptions } from './options.js';

/** What a listener answers. */
export const ConsumeResult = {
  /** Processed: the message is acknowledged. */
  SUCCESS: 'SUCCESS',
  /** Not processed: the message is redelivered after the group's retry interval. */
  FAILURE: 'FAILURE',
} as const;
export type ConsumeResult = (typeof ConsumeResult)[keyof typeof ConsumeResult];

export interface ConsumeContext {
  /** Aborted when the listener runs past `consumeTimeoutMs` (its result is then ignored). */
  signal: AbortSignal;
}

/** Processes one message. A thrown error (or rejected promise) counts as FAILURE. */
export type MessageListener = (
  message: MessageView,
  context: ConsumeContext,
) => ConsumeResult | Promise<ConsumeResult>;

export interface PushConsumerOptions extends ConsumerOptions {
  /** Called for every message. Required. */
  listener: MessageListener;
  /** Most listeners running at once (1–1024). @defaultValue 16 */
  concurrency?: number;
  /**
   * A listener still running after this long is treated as FAILURE (the message is nacked and its
   * signal aborted); `close()` waits for running listeners at most this long. @defaultValue 60000
   */
  consumeTimeoutMs?: number;
  /** Most messages per ReceiveMessage (1–1024; the broker may lower it: Vela tells push consumers 256). @defaultValue 256 */
  receiveBatchSize?: number;
  /** How long a receive waits on the broker for messages to arrive (the broker caps it at 20 s). @defaultValue 20000 */
  longPollingTimeoutMs?: number;
  /**
   * Messages received whose listener is not done (waiting or running), at most; receiving pauses
   * above it. A message whose ack is on its way no longer counts, unless more than this many acks are
   * waiting for the broker's answer. @defaultValue 1024
   */
  maxCachedMessages?: number;
  /**
   * The same window in body bytes (RocketMQ's `maxCacheMessageSizeInBytes`, 64 MiB): receiving pauses
   * while the bodies of the messages `maxCachedMessages` counts reach it. Receives already on their
   * way (one per receive loop) may each bring one more batch. @defaultValue 67108864
   */
  maxCachedBytes?: number;
  /**
   * ReceiveMessage calls in flight per assignment (each long-polls; several hide the broker's
   * per-receive latency when messages are plentiful). @defaultValue 4
   */
  receiveConcurrency?: number;
  /** Interval of QueryAssignment. @defaultValue 5000 */
  assignmentIntervalMs?: number;
  /** Attempts to ack or nack a message before giving up (the broker then redelivers it). @defaultValue 5 */
  settleMaxAttempts?: number;
}

interface PushConfig extends ConsumerConfig {
  readonly listener: MessageListener;
  readonly concurrency: number;
  readonly consumeTimeoutMs: number;
  readonly receiveBatchSize: number;
  readonly longPollingTimeoutMs: number;
  readonly maxCachedMessages: number;
  readonly maxCachedBytes: number;
  readonly receiveConcurrency: number;
  readonly assignmentIntervalMs: number;
  readonly settleMaxAttempts: number;
}

function resolvePushOptions(o: PushConsumerOptions): PushConfig {
  if (typeof o?.listener !== 'function') throw clientError(Code.BAD_REQUEST, 'options.listener is required');
  return Object.freeze({
    ...resolveConsumerOptions(o, resolveClientOptions(o)),
    listener: o.listener,
    concurrency: integer('concurrency', o.concurrency, 16, 1, 1024),
    consumeTimeoutMs: positive('consumeTimeoutMs', o.consumeTimeoutMs, 60_000),
    receiveBatchSize: integer('receiveBatchSize', o.receiveBatchSize, 256, 1, 1024),
    longPollingTimeoutMs: positive('longPollingTimeoutMs', o.longPollingTimeoutMs, 20_000),
    maxCachedMessages: integer('maxCachedMessages', o.maxCachedMessages, 1024, 1, 1_000_000),
    maxCachedBytes: integer('maxCachedBytes', o.maxCachedBytes, 64 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER),
    receiveConcurrency: integer('receiveConcurrency', o.receiveConcurrency, 4, 1, 64),
    assignmentIntervalMs: positive('assignmentIntervalMs', o.assignmentIntervalMs, 5000),
    settleMaxAttempts: integer('settleMaxAttempts', o.settleMaxAttempts, 5, 1, 1000),
  });
}

const TIMED_OUT = Symbol('timed out');

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

/** A listener's context: its signal is created only when the listener reads it. */
class ListenerContext implements ConsumeContext {
  private ac: AbortController | undefined;
  private timedOut: VelaClientError | undefined;

  get signal(): AbortSignal {
    if (!this.ac) {
      this.ac = new AbortController();
      if (this.timedOut) this.ac.abort(this.timedOut);
    }
    return this.ac.signal;
  }

  /** The listener ran past its timeout: its signal is (or will be, once read) aborted. */
  timeOut(err: VelaClientError): void {
    this.timedOut = err;
    this.ac?.abort(err);
  }
}

interface Loop {
  ac: AbortController;
  done: Promise<void>;
}

export class PushConsumer extends ConsumerBase {
  protected readonly clientType = WireClientType.PUSH_CONSUMER;
  private readonly options: PushConfig;
  private readonly dispatcher: ConsumeDispatcher;
  private readonly loops = new Map<string, Loop>();
  /**
   * Messages whose listener is to run (their tickets), from `runHead` on: one microtask runs those
   * queued when it starts (`runQueued`).
   */
  private readonly toRun: DispatchTicket[] = [];
  private runHead = 0;
  private runScheduled = false;

  constructor(options: PushConsumerOptions) {
    const config = resolvePushOptions(options);
    super(config, 'push-consumer');
    this.options = config;
    this.dispatcher = new ConsumeDispatcher(() => this.options.concurrency, {
      consume: (m, t) => this.consume(m, t),
      settle: (m, ok, t) => this.settle(m, ok, t),
    });
  }

  /** Whether the broker runs this group in FIFO order (known after `start()`). */
  get fifo(): boolean {
    return this.brokerFifo;
  }

  /** Messages received and not yet settled. */
  get cachedMessages(): number {
    return this.dispatcher.size;
  }

  protected announcedPollMs(): number {
    return this.options.longPollingTimeoutMs;
  }

  protected override async onStart(): Promise<void> {
    await this.scanAssignments(true);
    this.timers.interval(() => void this.scanAssignments(false), this.options.assignmentIntervalMs, {
      unref: true,
    });
  }

  protected override async onClose(): Promise<void> {
    const loops = [...this.loops.values()];
    this.loops.clear();
    for (const l of loops) l.ac.abort();
    await Promise.all(loops.map((l) => l.done));
    const dropped = await this.dispatcher.stop();
    if (dropped.length > 0) {
      this.logger.info(
        { messages: dropped.length },
        'messages received but not yet consumed go back to the broker on termination',
      );
    }
    await this.acks.drain();
  }

  /** Start a receive loop per new assignment, stop loops whose assignment is gone. */
  private async scanAssignments(initial: boolean): Promise<void> {
    if (this.isClosing) return;
    const wanted = new Map<string, MessageQueue>();
    const failedTopics = new Set<string>();
    for (const topic of this.subscriptions.keys()) {
      try {
        const route = await this.route(topic);
        const conn = this.connectionFor(route[0]!.broker.endpoints);
        const res = await this.call<{ status?: Status; assignments?: { message_queue?: MessageQueue }[] }>(
          conn,
          'QueryAssignment',
          {
            topic: this.resource(topic),
            group: this.groupResource(),
            endpoints: this.clientConfig.accessPoint,
          },
        );
        for (const a of res.assignments ?? []) {
          const q = a.message_queue && withQueueDefaults(a.message_queue);
          if (q?.broker?.endpoints) wanted.set(`${topic}@${q.broker.name}@${q.id}`, q);
        }
      } catch (err) {
        if (initial) throw err;
        failedTopics.add(topic);
        this.logger.warn({ err, topic }, 'QueryAssignment failed; keeping the current assignments');
      }
    }
    if (this.isClosing) return;
    for (const [key, queue] of wanted) {
      if (!this.loops.has(key)) {
        const ac = new AbortController();
        const loops = Array.from({ length: this.options.receiveConcurrency }, () =>
          this.receiveLoop(queue, ac.signal),
        );
        const loop: Loop = { ac, done: Promise.all(loops).then(() => undefined) };
        this.loops.set(key, loop);
      }
    }
    for (const [key, loop] of this.loops) {
      const topic = key.slice(0, key.indexOf('@'));
      if (!wanted.has(key) && !failedTopics.has(topic)) {
        loop.ac.abort();
        this.loops.delete(key);
      }
    }
  }

  private async receiveLoop(queue: MessageQueue, signal: AbortSignal): Promise<void> {
    const conn = this.connectionFor(queue.broker.endpoints);
    let attemptId = randomUUID();
    let failures = 0;
    const max = this.options.maxCachedMessages;
    const maxBytes = this.options.maxCachedBytes;
    while (!signal.aborted) {
      await this.dispatcher.waitForRoom(max, maxBytes);
      if (signal.aborted) break;
      const batchSize = Math.max(
        1,
        Math.min(this.options.receiveBatchSize, this.brokerBatchSize, max - this.dispatcher.held(max)),
      );
      try {
        const messages = await this.receiveFrom(conn, queue, {
          batchSize,
          autoRenew: true,
          pollMs: this.options.longPollingTimeoutMs,
          attemptId,
          signal,
        });
        attemptId = randomUUID();
        failures = 0;
        if (messages.length > 0) this.dispatcher.push(messages, (m) => this.orderingKey(m));
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        const flow = isVelaClientError(err) && err.flowControl;
        const delay = receiveRetryDelay(flow, failures);
        this.logger.debug({ err, topic: queue.topic.name, delayMs: delay }, 'receive failed; retrying');
        try {
          await this.timers.sleep(delay, signal);
        } catch {
          break;
        }
      }
    }
  }

  /** FIFO groups: one chain per (topic, message group), or per queue for messages without a group. */
  private orderingKey(m: MessageView): string | null {
    if (!this.brokerFifo) return null;
    return `${m.topic}\u0000${m.messageGroup ?? `#${m.queueId}`}`;
  }

  /**
   * Run the listener once; true for SUCCESS. Never rejects.
   *
   * Per message this costs no timer and no AbortController unless they can matter: a listener that
   * answers synchronously cannot run past its timeout unnoticed (a timer could only fire after it
   * returned), so only a pending promise arms the consume timeout, and the signal is created when
   * the listener first reads it (already aborted if the timeout has passed by then).
   */
  private consume(m: MessageView, t: DispatchTicket): void {
    if (m.corrupted) {
      this.logger.warn({ messageId: m.messageId, topic: m.topic }, 'corrupted message body; nacking it');
      queueMicrotask(() => t.consumed(false));
      return;
    }
    // The listener never runs inside the caller's turn (receive loop, dispatcher), and one microtask
    // runs the listeners handed over before it starts: `queueMicrotask` per message made an
    // AsyncResource, a bound function and a closure each time (in W2 about an eighth of what the
    // SDK's process allocated per message; docs/benchmarks.md, twenty-first session).
    this.toRun.push(t);
    if (!this.runScheduled) {
      this.runScheduled = true;
      queueMicrotask(this.runQueued);
    }
  }

  /**
   * Run, in order, the listeners queued when this microtask started. Those their completion lets the
   * dispatcher start meanwhile wait for the next microtask, behind what was queued before it (the
   * receive loop's next receive, as when each listener had a microtask of its own).
   */
  private readonly runQueued = (): void => {
    const run = this.toRun;
    const end = run.length;
    let i = this.runHead;
    try {
      for (; i < end; i++) this.runListener(run[i]!);
    } finally {
      // Past the one that threw, if `runListener` did (it does not: it catches the listener's throws).
      this.runHead = i < end ? i + 1 : i;
      if (this.runHead < run.length) {
        queueMicrotask(this.runQueued);
      } else {
        run.length = 0;
        this.runHead = 0;
        this.runScheduled = false;
      }
    }
  };

  private runListener(t: DispatchTicket): void {
    const m = t.message;
    const context = new ListenerContext();
    let r: unknown;
    try {
      r = this.options.listener(m, context);
    } catch (err) {
      this.listenerThrew(m, err);
      t.consumed(false);
      return;
    }
    if (!isThenable(r)) {
      t.consumed(this.verdict(m, r));
      return;
    }
    this.withTimeout(r, m, (err) => context.timeOut(err)).then(
      (answer) => t.consumed(answer !== TIMED_OUT && this.verdict(m, answer)),
      (err: unknown) => {
        this.listenerThrew(m, err);
        t.consumed(false);
      },
    );
  }

  private listenerThrew(m: MessageView, err: unknown): void {
    this.logger.debug({ err, messageId: m.messageId, topic: m.topic }, 'listener threw; nacking the message');
  }

  /** SUCCESS or not, from what the listener answered. */
  private verdict(m: MessageView, r: unknown): boolean {
    if (r === ConsumeResult.SUCCESS) return true;
    if (r !== ConsumeResult.FAILURE) {
      this.logger.warn(
        { messageId: m.messageId, result: r },
        'listener returned neither SUCCESS nor FAILURE; nacking',
      );
    }
    return false;
  }

  /** The listener's pending answer, or TIMED_OUT once `consumeTimeoutMs` has passed (then `onTimeout`). */
  private async withTimeout(
    work: PromiseLike<unknown>,
    m: MessageView,
    onTimeout: (err: VelaClientError) => void,
  ): Promise<unknown> {
    const pending = Promise.resolve(work);
    pending.catch(() => {}); // a listener that rejects after its timeout must not be an unhandled rejection
    let cancel = (): void => {};
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      cancel = this.timers.timeout(() => resolve(TIMED_OUT), this.options.consumeTimeoutMs);
    });
    try {
      const r = await Promise.race([pending, timeout]);
      if (r === TIMED_OUT) {
        onTimeout(
          new VelaClientError(
            Code.REQUEST_TIMEOUT,
            `the listener ran past consumeTimeoutMs (${this.options.consumeTimeoutMs} ms)`,
          ),
        );
        this.logger.warn(
          { messageId: m.messageId, topic: m.topic },
          'listener timed out; nacking the message',
        );
      }
      return r;
    } finally {
      cancel();
    }
  }

  /**
   * Ack or nack, retrying retriable failures a few times; `t.settled()` once settled or given up on. An ack
   * that succeeds the first time (nearly all of them) goes through the ack batcher without a promise.
   */
  private settle(m: MessageView, ok: boolean, t: DispatchTicket): void {
    if (!ok) {
      void this.settleWithRetries(m, false, 1).then(() => t.settled());
      return;
    }
    this.ackMessageThen(m, this.acked, t);
  }

  /** An ack's outcome (one function for every ack: no callback made per message). */
  private readonly acked = (err: unknown, t: DispatchTicket): void => {
    if (err === undefined) t.settled();
    else void this.settleWithRetries(t.message, true, 1, err).then(() => t.settled());
  };

  /** Never rejects. `failed`: attempt `attempt` was already made and failed with it. */
  private async settleWithRetries(
    m: MessageView,
    ok: boolean,
    attempt: number,
    failed?: unknown,
  ): Promise<void> {
    for (let err = failed; ; attempt++) {
      if (err === undefined) {
        try {
          if (ok) await this.ackMessage(m);
          else await this.changeInvisible(m, nackDelayMs(this.retryPolicy, m.deliveryAttempt));
          return;
        } catch (e) {
          err = e;
        }
      }
      const retriable = isVelaClientError(err) && err.retriable;
      if (!retriable || attempt >= this.options.settleMaxAttempts) {
        this.logger.warn(
          { err, messageId: m.messageId, topic: m.topic, ack: ok },
          `could not ${ok ? 'ack' : 'nack'} the message; the broker will redeliver it`,
        );
        return;
      }
      await this.timers.sleep(Math.min(5000, 200 * Math.pow(2, attempt - 1))).catch(() => {});
      err = undefined;
    }
  }
}
