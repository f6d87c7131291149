/**
 * What push and simple consumers share: the consumer group and its subscriptions (topic → filter),
 * the subscription part of Settings and what the broker answers to it (FIFO flag, batch size,
 * long-polling time, the group's retry policy), ReceiveMessage, and the per-message verbs (ack,
 * changeInvisibleDuration) that need nothing but a received message.
 */
import { Code } from '../common/codes.js';
import { fromMillis, toMillis } from '../protocol/codec.js';
import { PrefixedMessage } from '../protocol/transport/grpc-wire.js';
import {
  WireFilterType,
  type FilterExpression as WireFilter,
  type MessageQueue,
  type Resource,
  type RetryPolicyWire,
  type Settings,
  type Status,
} from '../protocol/wire-types.js';
import { AckBatcher, type AckDone } from './ack-batcher.js';
import { ClientBase } from './client-base.js';
import type { Connection } from './connection.js';
import { VelaClientError, clientError, closedError, fromStatus, isOk } from './errors.js';
import {
  DecodedMessage,
  decodeAckResponse,
  decodeDeliveryFrame,
  encodeAckRequest,
  type DeliveryFrame,
} from './hot-codec.js';
import {
  MessageView,
  deliveryOf,
  setReceiptHandle,
  type DeliveryRef,
  type DeliverySource,
} from './message.js';
import { requiredName, type ClientConfig, type ClientOptions } from './options.js';

/** A filter: a tag expression (`*`, `TagA`, `TagA||TagB`) or an SQL92 predicate over properties. */
export interface FilterExpression {
  type: 'TAG' | 'SQL';
  expression: string;
}

/** Topic → tag expression (`'*'` for everything) or filter. */
export type Subscriptions =
  Record<string, string | FilterExpression> | Map<string, string | FilterExpression>;

export interface ConsumerOptions extends ClientOptions {
  /** The consumer group (created beforehand, e.g. with `Admin.createGroup`). Required. */
  group: string;
  /** Topic → filter. At least one. Required. */
  subscriptions: Subscriptions;
}

export interface ConsumerConfig {
  readonly base: ClientConfig;
  readonly group: string;
  readonly subscriptions: ReadonlyMap<string, WireFilter>;
}

export function resolveConsumerOptions(o: ConsumerOptions, base: ClientConfig): ConsumerConfig {
  const group = requiredName('group', o.group);
  const entries =
    o.subscriptions instanceof Map ? [...o.subscriptions] : Object.entries(o.subscriptions ?? {});
  if (entries.length === 0)
    throw clientError(Code.BAD_REQUEST, 'options.subscriptions needs at least one topic');
  const subscriptions = new Map<string, WireFilter>();
  for (const [topic, f] of entries) {
    requiredName('subscriptions topic', topic);
    const filter = typeof f === 'string' ? { type: 'TAG' as const, expression: f || '*' } : f;
    if (filter.type !== 'TAG' && filter.type !== 'SQL') {
      throw clientError(Code.ILLEGAL_FILTER_EXPRESSION, `unknown filter type for ${topic}`);
    }
    subscriptions.set(topic, {
      type: filter.type === 'SQL' ? WireFilterType.SQL : WireFilterType.TAG,
      expression: filter.expression,
    });
  }
  return Object.freeze({ base, group, subscriptions });
}

export interface ReceiveParams {
  batchSize: number;
  /** Absent with `autoRenew` (push consumers): the broker picks it and renews it. */
  invisibleMs?: number;
  autoRenew: boolean;
  pollMs: number;
  attemptId?: string;
  signal?: AbortSignal;
}

export abstract class ConsumerBase extends ClientBase {
  protected readonly group: string;
  protected readonly subscriptions: ReadonlyMap<string, WireFilter>;
  protected readonly acks: AckBatcher;
  /** From the broker's Settings reply. */
  protected brokerFifo = false;
  protected brokerBatchSize = 32;
  protected brokerPollMs: number | undefined;
  protected retryPolicy: RetryPolicyWire | undefined;
  private readonly groupRes: Resource;

  protected constructor(c: ConsumerConfig, kind: string) {
    super(c.base, kind);
    this.group = c.group;
    this.subscriptions = c.subscriptions;
    this.groupRes = this.resource(c.group);
    this.acks = new AckBatcher(this.timers, async (conn, group, topic, entries) => {
      const request = new PrefixedMessage(encodeAckRequest(group, topic, entries, true));
      const bytes = await conn.unaryBytes('AckMessage', request, {
        timeoutMs: this.clientConfig.requestTimeoutMs,
      });
      try {
        return decodeAckResponse(bytes);
      } catch (err) {
        throw new VelaClientError(
          Code.INTERNAL_ERROR,
          `AckMessage: cannot decode the answer: ${(err as Error).message}`,
          { rpc: 'AckMessage' },
        );
      }
    });
  }

  /** Long-polling time to announce in Settings. */
  protected abstract announcedPollMs(): number | undefined;

  protected override groupResource(): Resource {
    return this.groupRes;
  }

  protected startupTopics(): readonly string[] {
    return [...this.subscriptions.keys()];
  }

  protected settingsBody(): Settings {
    const poll = this.announcedPollMs();
    return {
      subscription: {
        group: this.groupRes,
        subscriptions: [...this.subscriptions].map(([topic, expression]) => ({
          topic: this.resource(topic),
          expression,
        })),
        ...(poll !== undefined ? { long_polling_timeout: fromMillis(poll) } : {}),
      },
    };
  }

  protected applySettings(s: Settings): void {
    const sub = s.subscription;
    if (sub?.fifo !== undefined) this.brokerFifo = sub.fifo;
    if (sub?.receive_batch_size && sub.receive_batch_size > 0) this.brokerBatchSize = sub.receive_batch_size;
    const poll = toMillis(sub?.long_polling_timeout);
    if (poll !== undefined) this.brokerPollMs = poll;
    if (s.backoff_policy) this.retryPolicy = s.backoff_policy;
  }

  /** ReceiveMessage from `queue`: the messages, [] when none came (MESSAGE_NOT_FOUND), or a typed error. */
  protected async receiveFrom(
    conn: Connection,
    queue: MessageQueue,
    p: ReceiveParams,
  ): Promise<MessageView[]> {
    const topic = queue.topic?.name ?? '';
    const filter = this.subscriptions.get(topic) ?? { type: WireFilterType.TAG, expression: '*' };
    const frames = await conn.deliveries(
      'ReceiveMessage',
      {
        group: this.groupRes,
        message_queue: queue,
        filter_expression: filter,
        batch_size: p.batchSize,
        ...(p.invisibleMs !== undefined ? { invisible_duration: fromMillis(p.invisibleMs) } : {}),
        auto_renew: p.autoRenew,
        long_polling_timeout: fromMillis(p.pollMs),
        ...(p.attemptId ? { attempt_id: p.attemptId } : {}),
      },
      {
        timeoutMs: this.clientConfig.requestTimeoutMs + p.pollMs,
        ...(p.signal ? { signal: p.signal } : {}),
      },
    );
    const ref: DeliveryRef = {
      endpointKey: conn.key,
      group: this.groupRes,
      topic: this.resource(topic),
      receiptHandle: '',
      owner: this,
    };
    const { messages, status } = decodeAnswer(frames, false, 'ReceiveMessage', ref);
    if (messages.length > 0) return messages;
    if (!status || status.code === Code.MESSAGE_NOT_FOUND || isOk(status.code)) return [];
    throw fromStatus(status, 'ReceiveMessage');
  }

  /** The delivery behind `m`, if this consumer received it. */
  protected deliveryFor(m: MessageView): { conn: Connection; source: DeliverySource } {
    const source = deliveryOf(m);
    if (!source || source.owner !== this) {
      throw clientError(Code.BAD_REQUEST, 'this message was not received by this consumer');
    }
    const conn = this.connectionByKey(source.endpointKey);
    if (!conn || conn.isClosed) throw closedError('the connection this message came from');
    return { conn, source };
  }

  /** Acknowledge `m` (batched with other acks issued in the same turn of the event loop). */
  protected ackMessage(m: MessageView): Promise<void> {
    const { conn, source } = this.deliveryFor(m);
    return this.acks.ack(conn, source.group, source.topic, m.messageId, m.receiptHandle);
  }

  /** `ackMessage` without a promise: `done` is called once, never in this call. */
  protected ackMessageThen<A>(m: MessageView, done: AckDone<A>, arg: A): void {
    let d: { conn: Connection; source: DeliverySource };
    try {
      d = this.deliveryFor(m);
    } catch (err) {
      queueMicrotask(() => done(err, arg));
      return;
    }
    this.acks.ackThen(d.conn, d.source.group, d.source.topic, m.messageId, m.receiptHandle, done, arg);
  }

  /** ChangeInvisibleDuration; the message's receipt handle becomes the one returned. */
  protected async changeInvisible(m: MessageView, ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0)
      throw clientError(Code.ILLEGAL_INVISIBLE_TIME, `invalid duration ${ms} ms`);
    const { conn, source } = this.deliveryFor(m);
    const res = await this.call<{ status?: Status; receipt_handle?: string }>(
      conn,
      'ChangeInvisibleDuration',
      {
        group: source.group,
        topic: source.topic,
        receipt_handle: m.receiptHandle,
        invisible_duration: fromMillis(Math.round(ms)),
        message_id: m.messageId,
      },
    );
    if (res.receipt_handle) setReceiptHandle(m, res.receipt_handle);
  }
}

/** Decode one answer frame; bytes that do not parse are the broker's fault: an INTERNAL_ERROR. */
/**
 * A ReceiveMessage or PullMessage answer: its messages (views sharing `ref`), its first status and,
 * for a pull, its first next offset.
 */
export function decodeAnswer(
  frames: readonly Buffer[],
  pull: boolean,
  rpc: string,
  ref: DeliveryRef,
): { messages: MessageView[]; status?: Status; nextOffset?: number } {
  const messages: MessageView[] = [];
  let status: Status | undefined;
  let nextOffset: number | undefined;
  const scratch = new DecodedMessage(); // each message is copied into its MessageView at once
  for (const bytes of frames) {
    let f: DeliveryFrame;
    try {
      f = decodeDeliveryFrame(bytes, pull, scratch);
    } catch (err) {
      throw new VelaClientError(
        Code.INTERNAL_ERROR,
        `${rpc}: cannot decode an answer: ${(err as Error).message}`,
        {
          rpc,
        },
      );
    }
    if (f.message) messages.push(new MessageView(f.message, ref));
    else if (f.status) status ??= f.status;
    else if (f.nextOffset !== undefined) nextOffset ??= f.nextOffset;
  }
  return { messages, ...(status ? { status } : {}), ...(nextOffset !== undefined ? { nextOffset } : {}) };
}
