/**
 * The broker: the messaging model over the store. It owns the message store, the state journal and
 * the services built on them (topics, groups, produce, consume, sessions), and knows nothing of gRPC
 * or HTTP: the protocol edge and the admin API call into it.
 */
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import type { StoreOptions, FlushPolicy } from '../common/config.js';
import { systemClock, type Clock } from '../common/clock.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { MessageStore, type StoredMessage } from '../store/index.js';
import { StateJournal } from './state-journal.js';
import { TopicRegistry } from './topic-registry.js';
import { GroupRegistry } from './group-registry.js';
import { SessionRegistry } from './sessions.js';
import { ProduceService, DEFAULT_PRODUCE_LIMITS, type ProduceLimits } from './produce.js';
import { ConsumeService, DEFAULT_CONSUME_OPTIONS, type ConsumeOptions } from './consume/consume-service.js';
import { ReceiptHandles } from './receipt-handle.js';
import { FlowControl, DEFAULT_FLOW_CONTROL, type FlowControlOptions } from './flow-control.js';
import { dlqTopicOf, resendRecord } from './consume/retry-records.js';
import { OffsetStore } from './offsets.js';
import { PullService } from './pull.js';

export interface BrokerOptions {
  /** Where everything is stored. Required. */
  dataDir: string;
  /** @defaultValue 'sync' */
  flush?: FlushPolicy;
  /** The name clients see in routes. @defaultValue 'broker-0' */
  brokerName?: string;
  /** Create unknown topics on first send or route query (development only). @defaultValue false */
  autoCreateTopics?: boolean;
  /** Create unknown consumer groups on first use (development only). @defaultValue false */
  autoCreateGroups?: boolean;
  /** Allow `message.type=MIXED` topics. @defaultValue false */
  enableMixedMessageType?: boolean;
  produce?: Partial<ProduceLimits>;
  consume?: Partial<ConsumeOptions>;
  flowControl?: Partial<FlowControlOptions>;
  /** Further storage options (retention, segment size …). */
  store?: Partial<Omit<StoreOptions, 'dataDir' | 'flush' | 'clock' | 'logger'>>;
  clock?: Clock;
  logger?: Logger;
}

export class Broker {
  readonly brokerName: string;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly sessions: SessionRegistry;
  readonly produce: ProduceService;
  readonly consume: ConsumeService;
  readonly limits: ProduceLimits;
  readonly consumeOptions: ConsumeOptions;
  readonly flow: FlowControl;
  readonly offsets: OffsetStore;
  readonly pull: PullService;
  private sweepTimer: NodeJS.Timeout | null = null;
  private closing: Promise<void> | null = null;

  private constructor(
    readonly store: MessageStore,
    private readonly journal: StateJournal,
    parts: {
      topics: TopicRegistry;
      groups: GroupRegistry;
      sessions: SessionRegistry;
      consume: ConsumeService;
      offsets: OffsetStore;
      limits: ProduceLimits;
      consumeOptions: ConsumeOptions;
    },
    opts: BrokerOptions,
    readonly clock: Clock,
    readonly logger: Logger,
  ) {
    this.brokerName = opts.brokerName ?? 'broker-0';
    this.topics = parts.topics;
    this.groups = parts.groups;
    this.sessions = parts.sessions;
    this.consume = parts.consume;
    this.offsets = parts.offsets;
    this.pull = new PullService(
      store,
      this.topics,
      this.groups,
      this.sessions,
      this.offsets,
      (g) => this.consume.requireGroup(g),
      parts.consumeOptions.maxPollMs,
    );
    this.limits = parts.limits;
    this.consumeOptions = parts.consumeOptions;
    this.flow = new FlowControl(
      this.consume,
      { ...DEFAULT_FLOW_CONTROL, ...opts.flowControl },
      logger.child({ module: 'flow' }),
    );
    this.produce = new ProduceService(store, this.topics, this.limits, {
      autoCreateTopics: opts.autoCreateTopics ?? false,
      now: () => clock.now(),
      admit: (topic) => this.flow.admit(topic),
    });
  }

  static async open(opts: BrokerOptions): Promise<Broker> {
    const clock = opts.clock ?? systemClock;
    const logger = opts.logger ?? silentLogger();
    await mkdir(opts.dataDir, { recursive: true });
    const store = await MessageStore.open({
      ...opts.store,
      dataDir: join(opts.dataDir, 'store'),
      flush: opts.flush ?? 'sync',
      clock,
      logger: logger.child({ module: 'store' }),
    });
    try {
      const now = () => clock.now();
      const limits = { ...DEFAULT_PRODUCE_LIMITS, ...opts.produce };
      const consumeOptions = {
        ...DEFAULT_CONSUME_OPTIONS,
        autoCreateGroups: opts.autoCreateGroups ?? false,
        ...opts.consume,
      };
      const topics = new TopicRegistry(opts.enableMixedMessageType ?? false);
      const groups = new GroupRegistry();
      const sessions = new SessionRegistry(now);
      const handles = await ReceiptHandles.load(opts.dataDir);
      const consume = new ConsumeService(
        store,
        topics,
        groups,
        sessions,
        handles,
        consumeOptions,
        now,
        logger.child({ module: 'consume' }),
      );
      const offsets = new OffsetStore(now);
      const journal = await StateJournal.open(
        {
          dir: join(opts.dataDir, 'state'),
          flush: opts.flush ?? 'sync',
          logger: logger.child({ module: 'state' }),
        },
        [topics, groups, consume, offsets],
      );
      topics.journal = groups.journal = consume.journal = offsets.journal = journal;
      const broker = new Broker(
        store,
        journal,
        { topics, groups, sessions, consume, offsets, limits, consumeOptions },
        opts,
        clock,
        logger,
      );
      await consume.start();
      broker.flow.start();
      broker.sweepTimer = setInterval(() => sessions.sweep(), 5_000);
      broker.sweepTimer.unref();
      return broker;
    } catch (err) {
      await store.close();
      throw err;
    }
  }

  /** Delete a topic's metadata and every group's consumption state for it (messages age out). */
  async deleteTopic(name: string): Promise<void> {
    await this.topics.delete(name);
    await this.consume.forget({ topic: name });
    await this.offsets.forget({ topic: name });
  }

  async deleteGroup(name: string): Promise<void> {
    await this.groups.delete(name);
    await this.consume.forget({ group: name });
    await this.offsets.forget({ group: name });
  }

  /** Messages by id (queryMsgById), newest first. */
  findMessageById(messageId: string, topic?: string): Promise<StoredMessage[]> {
    if (!messageId) throw new VelaError('ILLEGAL_MESSAGE_ID', 'a message id is required');
    return this.store.findById(messageId, { ...(topic ? { topic } : {}), limit: 32 });
  }

  /** Messages by key (queryMsgByKey), newest first. */
  findMessagesByKey(key: string, topic?: string, limit = 32): Promise<StoredMessage[]> {
    if (!key) throw new VelaError('ILLEGAL_MESSAGE_KEY', 'a key is required');
    return this.store.findByKey(key, { ...(topic ? { topic } : {}), limit });
  }

  /**
   * Move a group on a topic to the first message stored at or after `timestamp`, or to an explicit
   * `offset` (clamped to what is stored), on every queue or one. Takes effect for pull consumers at
   * their next pull and for push/simple consumers at once. Returns the old and new offset per queue.
   */
  async resetOffset(
    group: string,
    topic: string,
    to: { timestamp: number } | { offset: number },
    queueId?: number,
  ): Promise<{ queueId: number; oldOffset: number | null; newOffset: number }[]> {
    this.groups.require(group);
    const t = this.topics.require(topic);
    const queues = queueId === undefined ? Array.from({ length: t.readQueueNums }, (_, i) => i) : [queueId];
    if (queueId !== undefined && (queueId < 0 || queueId >= t.readQueueNums)) {
      throw new VelaError('BAD_REQUEST', `queue ${queueId} is not a readable queue of ${topic}`);
    }
    const rows = [];
    for (const q of queues) {
      const qs = this.store.queueState(topic, q);
      const newOffset =
        'timestamp' in to
          ? await this.store.offsetForTimestamp(topic, q, to.timestamp)
          : Math.min(Math.max(to.offset, qs.minOffset), qs.maxOffset);
      const pulled = this.offsets.get(group, topic, q)?.offset;
      await this.offsets.reset(group, topic, q, newOffset);
      for (const g of this.offsets.broadcastGroups(group, topic))
        await this.offsets.reset(g, topic, q, newOffset);
      const popped = await this.consume.resetQueue(group, topic, q, newOffset);
      rows.push({ queueId: q, oldOffset: pulled ?? popped ?? null, newOffset });
    }
    this.logger.info({ group, topic, to, queues: rows }, 'consumer offsets reset');
    return rows;
  }

  /** Messages in a group's dead-letter queue, oldest first, from `offset`. */
  async deadLetters(
    group: string,
    offset = 0,
    limit = 32,
  ): Promise<{ messages: StoredMessage[]; nextOffset: number; maxOffset: number }> {
    this.groups.require(group);
    const dlq = dlqTopicOf(group);
    const r = await this.store.read(dlq, 0, Math.max(offset, this.store.queueState(dlq, 0).minOffset), {
      maxCount: Math.min(Math.max(1, limit), 1000),
      maxBytes: 16 * 1024 * 1024,
    });
    return { messages: r.messages, nextOffset: r.nextOffset, maxOffset: r.maxOffset };
  }

  /**
   * Send dead letters back to their group (all of them, or those with one message id): each becomes
   * a new message in the group's retry topic, due now, with its attempts counted afresh.
   */
  async resendDeadLetters(group: string, messageId?: string): Promise<number> {
    this.groups.require(group);
    let offset = 0;
    let resent = 0;
    for (;;) {
      const page = await this.deadLetters(group, offset, 256);
      const chosen = page.messages.filter(
        (m) => !messageId || m.messageId === messageId || m.properties.ORIGIN_MESSAGE_ID === messageId,
      );
      if (chosen.length > 0) await this.store.append(chosen.map((m) => resendRecord(m, group)));
      resent += chosen.length;
      if (page.messages.length === 0 || page.nextOffset >= page.maxOffset) break;
      offset = page.nextOffset;
    }
    if (messageId && resent === 0)
      throw new VelaError('MESSAGE_NOT_FOUND', `no dead letter ${messageId} in ${group}`);
    this.logger.info({ group, messageId, resent }, 'dead letters resent');
    return resent;
  }

  /** Stop serving consumers, persist state and close the store. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        if (this.sweepTimer) clearInterval(this.sweepTimer);
        this.flow.stop();
        this.consume.stop();
        this.pull.stop();
        await this.journal.close();
        await this.store.close();
      })();
    }
    return this.closing;
  }
}
