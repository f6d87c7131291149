/**
 * The SimpleConsumer: the application pulls. `receive(maxMessages, invisibleDurationMs)` takes up to
 * `maxMessages` messages, each invisible to the rest of the group for `invisibleDurationMs` (after
 * which, unacked, it is delivered again: the retry interval is the invisible duration); `ack()`
 * consumes one; `changeInvisibleDuration()` restarts its clock with a new duration (and replaces its
 * receipt handle). `messages()` is the same as an async iterator, which backs off on flow control
 * and transient failures instead of spinning, and ends on abort or close.
 */
import { Code } from '../common/codes.js';
import { WireClientType, WirePermission, type MessageQueue } from '../protocol/wire-types.js';
import { receiveRetryDelay } from './backoff.js';
import { ConsumerBase, resolveConsumerOptions, type ConsumerOptions } from './consumer-base.js';
import { clientError, closedError, isVelaClientError } from './errors.js';
import type { MessageView } from './message.js';
import { integer, positive, resolveClientOptions } from './options.js';

export interface SimpleConsumerOptions extends ConsumerOptions {
  /** How long `receive()` waits on the broker for messages to arrive (the broker caps it at 20 s). @defaultValue 20000 */
  awaitDurationMs?: number;
  /** `receive()`'s default `maxMessages` (1–32). @defaultValue 16 */
  maxMessages?: number;
  /** `receive()`'s default invisible duration (the broker accepts 10 s to 12 h). @defaultValue 30000 */
  invisibleDurationMs?: number;
}

export interface ReceiveOptions {
  /** Aborts a receive in progress (it rejects with the signal's reason). */
  signal?: AbortSignal;
  /** @defaultValue the consumer's `awaitDurationMs` */
  awaitDurationMs?: number;
}

export interface MessagesOptions {
  /** Invisible duration of each received message. @defaultValue the consumer's `invisibleDurationMs` */
  invisibleDurationMs?: number;
  /** Messages fetched per receive (1–32). @defaultValue the consumer's `maxMessages` */
  maxMessages?: number;
  /** Ends the iteration (without an error). */
  signal?: AbortSignal;
}

export class SimpleConsumer extends ConsumerBase {
  protected readonly clientType = WireClientType.SIMPLE_CONSUMER;
  private readonly awaitDurationMs: number;
  private readonly defaultMax: number;
  private readonly defaultInvisibleMs: number;
  private readonly closeSignal = new AbortController();
  private readonly receives = new Set<Promise<unknown>>();
  private nextTopic = 0;

  constructor(options: SimpleConsumerOptions) {
    const base = resolveClientOptions(options);
    const config = resolveConsumerOptions(options, base);
    super(config, 'simple-consumer');
    this.awaitDurationMs = positive('awaitDurationMs', options.awaitDurationMs, 20_000);
    this.defaultMax = integer('maxMessages', options.maxMessages, 16, 1, 32);
    this.defaultInvisibleMs = positive('invisibleDurationMs', options.invisibleDurationMs, 30_000);
  }

  protected announcedPollMs(): number {
    return this.awaitDurationMs;
  }

  /**
   * Receive up to `maxMessages` messages (from the subscribed topics in turn), waiting up to the
   * await duration for some to arrive. Resolves with [] when none came. Starts the consumer if needed.
   */
  async receive(
    maxMessages: number = this.defaultMax,
    invisibleDurationMs: number = this.defaultInvisibleMs,
    options: ReceiveOptions = {},
  ): Promise<MessageView[]> {
    if (!Number.isInteger(maxMessages) || maxMessages < 1 || maxMessages > 32) {
      throw clientError(Code.BAD_REQUEST, `maxMessages must be an integer from 1 to 32, got ${maxMessages}`);
    }
    if (!Number.isFinite(invisibleDurationMs) || invisibleDurationMs <= 0) {
      throw clientError(Code.ILLEGAL_INVISIBLE_TIME, `invalid invisible duration ${invisibleDurationMs} ms`);
    }
    this.assertOpen();
    await this.start();
    this.assertOpen();
    const topics = [...this.subscriptions.keys()];
    const topic = topics[this.nextTopic++ % topics.length]!;
    const queue = await this.readableQueue(topic);
    const conn = this.connectionFor(queue.broker.endpoints);
    const signal = options.signal
      ? AbortSignal.any([options.signal, this.closeSignal.signal])
      : this.closeSignal.signal;
    const p = this.receiveFrom(conn, queue, {
      batchSize: maxMessages,
      invisibleMs: Math.round(invisibleDurationMs),
      autoRenew: false,
      pollMs: options.awaitDurationMs ?? this.awaitDurationMs,
      signal,
    });
    this.receives.add(p);
    try {
      return await p;
    } finally {
      this.receives.delete(p);
    }
  }

  /** Acknowledge a message: consumed for this group. Rejects with INVALID_RECEIPT_HANDLE once expired. */
  async ack(message: MessageView): Promise<void> {
    this.assertOpen();
    await this.ackMessage(message);
  }

  /**
   * Make the message invisible for `invisibleDurationMs` from now (0: visible again at once). Its
   * receipt handle is replaced by the broker's new one, so later acks use it.
   */
  async changeInvisibleDuration(message: MessageView, invisibleDurationMs: number): Promise<void> {
    this.assertOpen();
    await this.changeInvisible(message, invisibleDurationMs);
  }

  /**
   * Messages as an async iterator: `for await (const m of consumer.messages({ signal })) { … ack … }`.
   * Flow control and transient failures back off (100 ms / 500 ms, doubling to 5 s); other errors are
   * thrown. Ends when `signal` aborts or the consumer closes. Messages already fetched but not yet
   * yielded when the loop ends come back after their invisible duration.
   */
  async *messages(options: MessagesOptions = {}): AsyncGenerator<MessageView, void, undefined> {
    const max = options.maxMessages ?? this.defaultMax;
    const invisible = options.invisibleDurationMs ?? this.defaultInvisibleMs;
    const signal = options.signal
      ? AbortSignal.any([options.signal, this.closeSignal.signal])
      : this.closeSignal.signal;
    let failures = 0;
    while (!signal.aborted && !this.isClosing) {
      let batch: MessageView[];
      try {
        batch = await this.receive(max, invisible, { signal });
        failures = 0;
      } catch (err) {
        if (signal.aborted || this.isClosing) return;
        if (!isVelaClientError(err) || !err.retriable) throw err;
        failures++;
        try {
          await this.timers.sleep(receiveRetryDelay(err.flowControl, failures), signal);
        } catch {
          return;
        }
        continue;
      }
      for (const m of batch) {
        if (signal.aborted) return;
        yield m;
      }
    }
  }

  protected override async onClose(): Promise<void> {
    this.closeSignal.abort(closedError('simple-consumer'));
    await Promise.allSettled([...this.receives]);
    await this.acks.drain();
  }

  private async readableQueue(topic: string): Promise<MessageQueue> {
    const queues = await this.route(topic);
    const q = queues.find(
      (x) =>
        (x.permission === WirePermission.READ || x.permission === WirePermission.READ_WRITE) &&
        x.broker?.endpoints?.addresses?.length,
    );
    if (!q) throw clientError(Code.FORBIDDEN, `no readable queue in the route of ${topic}`);
    return q;
  }
}
