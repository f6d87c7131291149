/**
 * PullConsumer: queue-granularity consumption. The broker assigns each queue of a subscribed topic to
 * exactly one live consumer of the group (queried every `assignmentIntervalMs`; changes are emitted
 * as `assignment` events); the consumer reads its queues by offset and commits offsets, explicitly
 * (`commit()`) or every `autoCommitIntervalMs`. `close()` commits and leaves the group, so its peers
 * take its queues over at their next assignment query.
 *
 * Delivery is at-least-once: what was read after the last commit is read again by the next owner of
 * the queue (after a rebalance, a restart or a crash).
 */
import { EventEmitter } from 'node:events';
import { Code } from '../common/codes.js';
import { fromMillis } from '../protocol/codec.js';
import { WireClientType, type MessageQueue, type Settings, type Status } from '../protocol/wire-types.js';
import { ConsumerBase, decodeAnswer, resolveConsumerOptions, type ConsumerOptions } from './consumer-base.js';
import { clientError, fromStatus, isVelaClientError } from './errors.js';
import { withQueueDefaults } from './message-queue.js';
import type { DeliveryRef, MessageView } from './message.js';
import { integer, nonNegative, positive, resolveClientOptions } from './options.js';
import type { Connection } from './connection.js';

/** Where a queue the group never committed starts. */
export type StartPosition = 'BEGINNING' | 'END' | { timestamp: number };

export interface PullConsumerOptions extends ConsumerOptions {
  /** Messages per pull (at most 1024). @defaultValue 256 */
  batchSize?: number;
  /** How long a pull waits at the end of a queue. @defaultValue 2000 */
  longPollingTimeoutMs?: number;
  /** Commit offsets this often; 0 commits only when `commit()` is called (and on close). @defaultValue 5000 */
  autoCommitIntervalMs?: number;
  /** How often the assignment is refreshed. @defaultValue 1000 */
  assignmentIntervalMs?: number;
  /** Where queues without a committed offset start. @defaultValue 'BEGINNING' */
  startPosition?: StartPosition;
  /** Every consumer gets every queue, each with its own progress (the group must allow broadcast). @defaultValue false */
  broadcast?: boolean;
  /** Under which name a broadcast consumer's progress is kept across restarts. @defaultValue the client id */
  consumerName?: string;
}

export interface QueueRef {
  topic: string;
  queueId: number;
}

interface Position {
  /** Next offset to read. */
  next: number;
  /** Bumped by `seek`: a pull sent before it is answered for the old position, and dropped. */
  epoch: number;
  /** Answers of this queue's pulls taken so far. */
  answers: number;
  /** Next offset to consume: advanced as messages are handed out. */
  consumed: number;
  committed: number | null;
  conn: Connection;
  queue: MessageQueue;
}

const key = (topic: string, queueId: number) => `${topic}\u0000${queueId}`;

/** What a PullMessage answered, not yet applied to its queue's position. */
interface PullAnswer {
  messages: MessageView[];
  /** Where the queue's next read starts. */
  next?: number;
  /** The offset was out of range (retention, an admin reset): continue from here. */
  reset?: number;
}

interface PendingPull {
  k: string;
  pos: Position;
  /** `pos.epoch` when it was sent. */
  epoch: number;
  /** `pos.answers` when it was sent: a pull answered after another of its queue is stale. */
  answers: number;
  answer: Promise<PullAnswer>;
}

export class PullConsumer extends ConsumerBase {
  protected readonly clientType = WireClientType.PULL_CONSUMER;
  /** `assignment` (QueueRef[] now owned), `error` (a background failure). */
  readonly events = new EventEmitter();
  private readonly batchSize: number;
  private readonly pollMs: number;
  private readonly autoCommitMs: number;
  private readonly assignmentMs: number;
  private readonly startPosition: StartPosition;
  private readonly broadcast: boolean;
  private readonly consumerName: string | undefined;
  private readonly positions = new Map<string, Position>();
  private readonly closeSignal = new AbortController();
  private refreshing: Promise<void> | null = null;
  private rotation = 0;

  constructor(options: PullConsumerOptions) {
    const base = resolveClientOptions(options);
    super(resolveConsumerOptions(options, base), 'pull-consumer');
    this.batchSize = integer('batchSize', options.batchSize, 256, 1, 1024);
    this.pollMs = nonNegative('longPollingTimeoutMs', options.longPollingTimeoutMs, 2000);
    this.autoCommitMs = nonNegative('autoCommitIntervalMs', options.autoCommitIntervalMs, 5000);
    this.assignmentMs = positive('assignmentIntervalMs', options.assignmentIntervalMs, 1000);
    this.startPosition = options.startPosition ?? 'BEGINNING';
    this.broadcast = options.broadcast ?? false;
    this.consumerName = options.consumerName;
  }

  protected announcedPollMs(): number {
    return this.pollMs;
  }

  protected override settingsBody(): Settings {
    const body = super.settingsBody();
    if (!this.broadcast) return body;
    return {
      ...body,
      client_properties: {
        'vela.consume.mode': 'BROADCASTING',
        ...(this.consumerName ? { 'vela.consumer.name': this.consumerName } : {}),
      },
    };
  }

  protected override async onStart(): Promise<void> {
    await this.refreshAssignment();
    this.timers.interval(() => this.refreshInBackground(), this.assignmentMs);
    if (this.autoCommitMs > 0) {
      this.timers.interval(() => void this.commit().catch((err) => this.reportError(err)), this.autoCommitMs);
    }
  }

  /** The queues this consumer owns now. */
  assignment(): QueueRef[] {
    return [...this.positions.values()].map((p) => ({
      topic: p.queue.topic.name ?? '',
      queueId: p.queue.id,
    }));
  }

  /**
   * Messages as an async iterator, from every owned queue in turn. A message counts as consumed once
   * the loop asks for the next one; `commit()` (or auto-commit) makes that durable on the broker.
   *
   * With more than one queue owned, the next queue's pull is sent while the current one is answered
   * and its messages handed out, so the broker reads while this process decodes and consumes. An
   * answer moves its queue's read position only once the loop takes it: a loop left early leaves
   * nothing skipped, and a pull answered after a `seek` or a rebalance of its queue is dropped.
   */
  async *messages(options: { signal?: AbortSignal } = {}): AsyncGenerator<MessageView, void, undefined> {
    await this.start();
    const signal = options.signal
      ? AbortSignal.any([options.signal, this.closeSignal.signal])
      : this.closeSignal.signal;
    let idle = 0;
    let ahead: PendingPull | undefined;
    /** The pull whose messages are being handed out. */
    let taking: PendingPull | undefined;
    try {
      while (!signal.aborted && !this.isClosing) {
        let pull = ahead;
        ahead = undefined;
        if (!pull) {
          const owned = this.positions.size;
          if (owned === 0) {
            await this.timers.sleep(this.assignmentMs, signal).catch(() => undefined);
            continue;
          }
          // Wait at the end of a queue only when every queue came back empty in the last round.
          pull = this.sendPull(idle >= owned ? Math.min(this.pollMs, 500) : 0, signal);
        }
        // While this pull is answered and its messages handed out, another queue's is on its way.
        if (idle === 0 && this.positions.size > 1 && !signal.aborted) {
          ahead = this.sendPull(0, signal);
          ahead.answer.catch(() => {}); // awaited on the next turn, or dropped with the loop
        }
        let answer: PullAnswer;
        try {
          answer = await pull.answer;
        } catch (err) {
          if (signal.aborted || this.isClosing) return;
          if (!isVelaClientError(err) || !err.retriable) throw err;
          this.reportError(err);
          await this.timers.sleep(500, signal).catch(() => undefined);
          continue;
        }
        const { pos } = pull;
        if (!this.isCurrent(pull)) continue; // rebalanced or sought meanwhile
        // Another pull of this queue was answered first (when the owned queues change, the pull sent
        // ahead can fall on the queue of the one in flight): these messages were handed out already.
        if (pos.answers !== pull.answers) continue;
        pos.answers++;
        if (answer.reset !== undefined) {
          // Retention removed our offset, or an admin reset moved the group: continue where we are told.
          pos.next = pos.consumed = answer.reset;
          continue;
        }
        if (answer.next !== undefined) pos.next = answer.next;
        const batch = answer.messages;
        idle = batch.length === 0 ? idle + 1 : 0;
        taking = pull;
        for (const m of batch) {
          if (signal.aborted) return;
          if (!this.isCurrent(pull)) break; // the queue moved: drop the rest
          yield m;
          pos.consumed = m.queueOffset + 1;
        }
        taking = undefined;
      }
    } finally {
      // Left in the middle of a pull's messages: the next loop starts at the first one not consumed.
      if (taking && this.isCurrent(taking)) {
        taking.pos.next = taking.pos.consumed;
      }
      // The pull sent ahead is dropped: the next loop starts with its queue, as if it had not been sent.
      if (ahead) this.rotation--;
    }
  }

  /** The pull's queue is still ours and was not sought since it was sent. */
  private isCurrent(p: PendingPull): boolean {
    return this.positions.get(p.k) === p.pos && p.pos.epoch === p.epoch;
  }

  /** A pull of the next owned queue in turn, from its read position now. */
  private sendPull(pollMs: number, signal: AbortSignal): PendingPull {
    const owned = [...this.positions.entries()];
    const [k, pos] = owned[this.rotation++ % owned.length]!;
    return { k, pos, epoch: pos.epoch, answers: pos.answers, answer: this.pullOnce(pos, pollMs, signal) };
  }

  /** Commit the consumed position of every owned queue (only those that moved). */
  async commit(): Promise<void> {
    await Promise.all([...this.positions.values()].map((p) => this.commitQueue(p)));
  }

  /** Move a queue's read position to an offset, or to the first message stored at or after a time. */
  async seek(queue: QueueRef, to: number | { timestamp: number }): Promise<void> {
    const pos = this.positions.get(key(queue.topic, queue.queueId));
    if (!pos)
      throw clientError(
        Code.BAD_REQUEST,
        `queue ${queue.queueId} of ${queue.topic} is not assigned to this consumer`,
      );
    const offset = typeof to === 'number' ? to : await this.queryOffset(pos, { timestamp: to.timestamp });
    pos.next = pos.consumed = offset;
    pos.epoch++;
  }

  protected override async onClose(): Promise<void> {
    this.closeSignal.abort();
    await this.refreshing;
    await this.commit().catch((err) => this.reportError(err));
  }

  // -------------------------------------------------------------------------------------------------

  /** Background failures go to `events` 'error' listeners if there are any, else to the log. */
  private reportError(err: unknown): void {
    if (this.events.listenerCount('error') > 0) this.events.emit('error', err);
    else this.logger.warn({ err }, 'pull consumer background error');
  }

  /** One PullMessage from `pos.next`; the caller moves the position when it takes the answer. */
  private async pullOnce(pos: Position, pollMs: number, signal: AbortSignal): Promise<PullAnswer> {
    const topic = pos.queue.topic.name ?? '';
    const frames = await pos.conn.deliveries(
      'PullMessage',
      {
        group: this.groupResource(),
        message_queue: pos.queue,
        offset: pos.next,
        batch_size: this.batchSize,
        filter_expression: this.subscriptions.get(topic),
        long_polling_timeout: fromMillis(pollMs),
      },
      { timeoutMs: this.clientConfig.requestTimeoutMs + pollMs, signal },
    );
    const ref: DeliveryRef = {
      endpointKey: pos.conn.key,
      group: this.groupResource(),
      topic: this.resource(topic),
      receiptHandle: '',
      owner: this,
    };
    const { messages, status, nextOffset: next } = decodeAnswer(frames, true, 'PullMessage', ref);
    if (status?.code === Code.ILLEGAL_OFFSET && next !== undefined) return { messages: [], reset: next };
    if (status && status.code !== Code.OK && status.code !== Code.MESSAGE_NOT_FOUND)
      throw fromStatus(status, 'PullMessage');
    return { messages, ...(next !== undefined ? { next } : {}) };
  }

  private async commitQueue(p: Position): Promise<void> {
    if (p.committed === p.consumed) return;
    const offset = p.consumed;
    await this.call(p.conn, 'UpdateOffset', { group: this.groupResource(), message_queue: p.queue, offset });
    p.committed = offset;
  }

  private async queryOffset(p: Position, where: StartPosition): Promise<number> {
    const policy = where === 'BEGINNING' ? 0 : where === 'END' ? 1 : 2;
    const res = await this.call<{ status?: Status; offset?: number }>(p.conn, 'QueryOffset', {
      message_queue: p.queue,
      query_offset_policy: policy,
      ...(typeof where === 'object' ? { timestamp: fromMillis(where.timestamp) } : {}),
    });
    return res.offset ?? 0;
  }

  private refreshInBackground(): void {
    if (this.refreshing || this.isClosing) return;
    this.refreshing = this.refreshAssignment()
      .catch((err: unknown) => void this.reportError(err))
      .finally(() => (this.refreshing = null));
  }

  /** Ask the broker which queues are ours; take new ones (at their committed offset), give up lost ones. */
  private async refreshAssignment(): Promise<void> {
    const owned = new Map<string, { conn: Connection; queue: MessageQueue }>();
    for (const topic of this.subscriptions.keys()) {
      const route = await this.route(topic);
      const broker = route[0]?.broker;
      if (!broker) continue;
      const conn = this.connectionFor(broker.endpoints);
      await this.ensureSession(conn);
      const res = await this.call<{ status?: Status; assignments?: { message_queue: MessageQueue }[] }>(
        conn,
        'QueryAssignment',
        {
          topic: this.resource(topic),
          group: this.groupResource(),
          endpoints: this.clientConfig.accessPoint,
        },
      );
      for (const a of res.assignments ?? []) {
        const queue = withQueueDefaults(a.message_queue);
        owned.set(key(topic, queue.id), { conn, queue });
      }
    }
    let changed = false;
    for (const [k, p] of [...this.positions]) {
      if (owned.has(k)) continue;
      this.positions.delete(k);
      changed = true;
      await this.commitQueue(p).catch((err) => this.reportError(err));
    }
    for (const [k, { conn, queue }] of owned) {
      if (this.positions.has(k)) continue;
      const start = await this.startingOffset(conn, queue);
      this.positions.set(k, {
        next: start.offset,
        epoch: 0,
        answers: 0,
        consumed: start.offset,
        committed: start.committed ? start.offset : null,
        conn,
        queue,
      });
      changed = true;
    }
    if (changed) this.events.emit('assignment', this.assignment());
  }

  private async startingOffset(
    conn: Connection,
    queue: MessageQueue,
  ): Promise<{ offset: number; committed: boolean }> {
    const res = await conn.unary<{ status?: Status; offset?: number }>(
      'GetOffset',
      { group: this.groupResource(), message_queue: queue },
      { timeoutMs: this.clientConfig.requestTimeoutMs },
    );
    if (res.status?.code === Code.OK) return { offset: res.offset ?? 0, committed: true };
    if (res.status && res.status.code !== Code.OFFSET_NOT_FOUND) throw fromStatus(res.status, 'GetOffset');
    const p: Position = { next: 0, epoch: 0, answers: 0, consumed: 0, committed: null, conn, queue };
    return { offset: await this.queryOffset(p, this.startPosition), committed: false };
  }
}
