/**
 * The broker: the messaging model over the store. It owns the message store, the state journal and
 * the services built on them (topics, groups, produce, consume, sessions), and knows nothing of gRPC
 * or HTTP: the protocol edge and the admin API call into it.
 *
 * Its length is wiring, not behaviour: opening and closing the services in order, and the narrow API
 * the edges call, each method a line or two into the service (consume/, timer/, transaction/, …) that
 * does the work.
 */
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { resolveConfig, type ConfigInput, type VelaConfig } from '../common/config.js';
import { systemClock, type Clock } from '../common/clock.js';
import { silentLogger, type Logger } from '../common/logger.js';
import { VelaError } from '../common/errors.js';
import { Timers } from '../common/timers.js';
import { MessageStore, type DiskUsageProbe, type QueueState } from '../store/index.js';
import type { BrokerMessage } from './message.js';
import { StateJournal } from './state-journal.js';
import { TopicRegistry } from './topic-registry.js';
import { GroupRegistry } from './group-registry.js';
import { SessionRegistry } from './sessions.js';
import { ProduceService } from './produce.js';
import { ConsumeService, type ConsumeOptions } from './consume/consume-service.js';
import { ReceiptHandles } from './receipt-handle.js';
import { FlowControl } from './flow-control.js';
import { dlqTopicOf, resendRecord } from './consume/retry-records.js';
import { OffsetStore } from './offsets.js';
import { BroadcastRetention, isBroadcastConsumer } from './broadcast-retention.js';
import { PullService } from './pull.js';
import { ConsumerManager } from './consumer-manager.js';
import { QueueLocks } from './queue-locks.js';
import { SendBackService, deadLetteredBySendBack, groupResendRecord, groupRetryTopic } from './send-back.js';
import { groupConsumerKinds } from './group-kinds.js';
import { ClientChannels } from './client-channels.js';
import { TimerService } from './timer/timer-service.js';
import { TransactionService } from './transaction/transaction-service.js';
import { BrokerStats } from './stats.js';
import { DeliveryHistory } from './delivery-history.js';
import { ConsumptionObserver } from './consume-observer.js';
import { messageTypeOf } from './produce.js';
import { originIdOf } from './consume/retry-records.js';
import { AuthRegistry } from './auth/auth-registry.js';
import { AccessControl } from './auth/access-control.js';

/** What the broker needs at run time besides its settings. */
export interface BrokerDeps {
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** @defaultValue statfs of the data directory */
  diskUsage?: DiskUsageProbe;
}

/** The store behind each broker, for tests and tools that must look below the broker (src/internal.ts). */
const stores = new WeakMap<Broker, MessageStore>();

/** @internal The message store of a broker: for tests only, never for the edges. */
export function storeOf(broker: Broker): MessageStore {
  return stores.get(broker)!;
}

export class Broker {
  readonly brokerName: string;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly sessions: SessionRegistry;
  readonly produce: ProduceService;
  readonly consume: ConsumeService;
  readonly flow: FlowControl;
  readonly offsets: OffsetStore;
  readonly pull: PullService;
  /** Queue-granularity clients registered by heartbeat (the Remoting endpoint's consumers). */
  readonly consumers: ConsumerManager;
  /** Orderly queue-granularity consumers' queue locks. */
  readonly queueLocks: QueueLocks;
  /** Retries and dead letters of queue-granularity consumers (`%RETRY%<group>`). */
  readonly sendBack: SendBackService;
  /** Delay (scheduled) messages. */
  readonly timer: TimerService;
  /** Forgets the state of broadcast consumers unused for a long time. */
  readonly broadcastRetention: BroadcastRetention;
  /** Transactional (half) messages. */
  readonly transactions: TransactionService;
  /** Live client streams the broker can send commands through. */
  readonly channels: ClientChannels;
  /** Counters for metrics and the console (stats.ts). */
  readonly stats: BrokerStats;
  /** Recent deliveries of messages, for the console (delivery-history.ts). */
  readonly deliveries: DeliveryHistory;
  /** Users, ACLs and the checks the edges make with them (ACL 2.0). */
  readonly acl: AccessControl;
  private readonly timers = new Timers(() => new VelaError('STORE_CLOSED', 'the broker is closing'));
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly store: MessageStore,
    private readonly journal: StateJournal,
    parts: {
      topics: TopicRegistry;
      groups: GroupRegistry;
      sessions: SessionRegistry;
      consume: ConsumeService;
      offsets: OffsetStore;
      timer: TimerService;
      transactions: TransactionService;
      channels: ClientChannels;
      stats: BrokerStats;
      deliveries: DeliveryHistory;
      auth: AuthRegistry;
    },
    readonly config: VelaConfig,
    readonly clock: Clock,
    readonly logger: Logger,
  ) {
    stores.set(this, store);
    this.brokerName = config.brokerName;
    this.topics = parts.topics;
    this.groups = parts.groups;
    this.sessions = parts.sessions;
    this.consume = parts.consume;
    this.offsets = parts.offsets;
    const now = () => clock.now();
    this.consumers = new ConsumerManager(now);
    this.queueLocks = new QueueLocks(now);
    this.timer = parts.timer;
    this.sendBack = new SendBackService(
      store,
      this.topics,
      now,
      logger.child({ module: 'send-back' }),
      this.timer,
    );
    this.transactions = parts.transactions;
    this.channels = parts.channels;
    this.stats = parts.stats;
    this.deliveries = parts.deliveries;
    const observer = new ConsumptionObserver(this.stats, this.deliveries, () => clock.now());
    this.consume.observer = observer;
    this.acl = new AccessControl(
      parts.auth,
      {
        enabled: config.aclEnabled,
        clock: { skewMs: config.acl.clockSkewMs, timeZoneOffsets: config.acl.timeZoneOffsets },
      },
      () => clock.now(),
      logger.child({ module: 'acl' }),
    );
    this.pull = new PullService(
      store,
      this.topics,
      this.groups,
      this.sessions,
      this.offsets,
      (g) => this.consume.requireGroup(g),
      config.consume.maxPollMs,
      clock,
      (g) => this.consumers.clusteringIds(g),
      this.consume.parking,
    );
    this.pull.observer = observer;
    this.broadcastRetention = new BroadcastRetention({
      now: () => clock.now(),
      retentionMs: config.consume.broadcastStateRetentionMs,
      known: () =>
        [...this.consume.groupTopics().map((gt) => gt.group), ...this.offsets.groupNames()].filter(
          isBroadcastConsumer,
        ),
      live: () => this.pull.liveBroadcastConsumers(),
      forget: async (consumer) => {
        await this.consume.forget({ group: consumer });
        await this.offsets.forget({ group: consumer });
      },
      logger: logger.child({ module: 'broadcast' }),
    });
    this.pull.onBroadcastUse = (consumer) => this.broadcastRetention.used(consumer);
    this.flow = new FlowControl(this.consume, config.flowControl, logger.child({ module: 'flow' }));
    this.produce = new ProduceService(store, this.topics, config.produce, {
      autoCreateTopics: config.autoCreateTopics,
      now: () => clock.now(),
      admit: (topic) => this.flow.admit(topic),
      special: {
        timer: this.timer,
        transactions: this.transactions,
        maxDelayMs: config.timer.maxDelayMs,
      },
      onStored: (topic, stored, ms) => {
        this.stats.flushed(ms);
        const type = messageTypeOf(stored[0]!.sysFlag ?? 0);
        if (stored.every((m) => (m.sysFlag ?? 0) === (stored[0]!.sysFlag ?? 0))) {
          this.stats.received(
            topic,
            type,
            stored.map((m) => m.body.length),
          );
        } else {
          for (const m of stored) this.stats.received(topic, messageTypeOf(m.sysFlag ?? 0), [m.body.length]);
        }
      },
    });
  }

  /**
   * Open (or recover) a broker in `config.dataDir`. A `ConfigInput` is resolved against the defaults
   * first (common/config.ts); a resolved config is used as it is.
   */
  static async open(input: ConfigInput | VelaConfig, deps: BrokerDeps = {}): Promise<Broker> {
    const config =
      Object.isFrozen(input) && 'grpcPorts' in input ? input : resolveConfig(input as ConfigInput);
    const clock = deps.clock ?? systemClock;
    const logger = deps.logger ?? silentLogger();
    await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
    const store = await MessageStore.open({
      ...config.store,
      dataDir: join(config.dataDir, 'store'),
      flush: config.flush,
      clock,
      logger: logger.child({ module: 'store' }),
      ...(deps.diskUsage ? { diskUsage: deps.diskUsage } : {}),
    });
    try {
      const now = () => clock.now();
      const consumeOptions: ConsumeOptions = { ...config.consume, autoCreateGroups: config.autoCreateGroups };
      const topics = new TopicRegistry(config.enableMixedMessageType);
      const groups = new GroupRegistry();
      const sessions = new SessionRegistry(now);
      const handles = await ReceiptHandles.load(config.dataDir);
      const consume = new ConsumeService({
        store,
        topics,
        groups,
        sessions,
        handles,
        options: consumeOptions,
        clock,
        logger: logger.child({ module: 'consume' }),
      });
      const offsets = new OffsetStore(now);
      const channels = new ClientChannels();
      const transactions = new TransactionService(
        store,
        topics,
        sessions,
        channels,
        config.transaction,
        clock,
        logger.child({ module: 'transaction' }),
      );
      const auth = new AuthRegistry();
      const journal = await StateJournal.open(
        {
          dir: join(config.dataDir, 'state'),
          flush: config.flush,
          logger: logger.child({ module: 'state' }),
          clock,
          compactBytes: config.store.stateCompactBytes,
          inlineWriteBytes: config.store.inlineWriteBytes,
        },
        [topics, groups, consume, offsets, transactions, auth],
      );
      topics.journal =
        groups.journal =
        consume.journal =
        offsets.journal =
        transactions.journal =
        auth.journal =
          journal;
      await initAccessControl(auth, config, logger);
      await transactions.recover();
      if (config.store.retentionMs < config.timer.maxDelayMs) {
        logger.warn(
          { retentionMs: config.store.retentionMs, maxDelayMs: config.timer.maxDelayMs },
          'store.retentionMs is shorter than timer.maxDelayMs: a delay message whose record ages out before its time is not delivered',
        );
      }
      const timer = await TimerService.open(
        store,
        topics,
        { dir: join(config.dataDir, 'timer'), flush: config.flush, settings: config.timer },
        clock,
        logger.child({ module: 'timer' }),
      );
      const broker = new Broker(
        store,
        journal,
        {
          topics,
          groups,
          sessions,
          consume,
          offsets,
          timer,
          transactions,
          channels,
          stats: new BrokerStats(clock.now()),
          deliveries: new DeliveryHistory(config.deliveryHistory),
          auth,
        },
        config,
        clock,
        logger,
      );
      // What a deleted topic or group left behind (a crash may have cut its purge short) must not
      // reappear in one created under its name.
      topics.beforeCreate = (name) => broker.purgeTopic(name);
      groups.beforeCreate = (name) => broker.purgeGroup(name);
      await consume.start();
      timer.start();
      transactions.start();
      broker.flow.start();
      broker.timers.interval(() => sessions.sweep(), 5_000, { unref: true });
      broker.timers.interval(() => broker.consumers.sweep(), 10_000, { unref: true });
      broker.timers.interval(
        () =>
          void broker.broadcastRetention
            .sweep()
            .catch((err) => logger.error({ err }, 'could not forget unused broadcast state')),
        Math.max(1000, Math.min(3600_000, config.consume.broadcastStateRetentionMs / 4)),
        { unref: true },
      );
      return broker;
    } catch (err) {
      await store.close();
      throw err;
    }
  }

  /** The offsets, size and last store time of one queue. */
  queueState(topic: string, queueId: number): QueueState {
    return this.store.queueState(topic, queueId);
  }

  /** The message stored at a log position (RocketMQ's commit-log offset), or null. */
  messageAt(logPosition: number): Promise<BrokerMessage | null> {
    if (!Number.isSafeInteger(logPosition) || logPosition < 0) return Promise.resolve(null);
    return this.store.getMessage(logPosition);
  }

  /** Storage figures for brokerStatus. */
  storageStats(): ReturnType<MessageStore['stats']> {
    return this.store.stats();
  }

  /** When the oldest message still stored was stored (0 when there is none). */
  async oldestStoreTimestamp(): Promise<number> {
    const m = await this.store.getMessage(this.store.stats().logStart);
    return m?.storeTimestamp ?? 0;
  }

  /**
   * When the message at `offset` of a queue was stored (0 if it is not stored): how long the oldest
   * unconsumed message has waited is what lag in time means.
   */
  async storeTimestampAt(topic: string, queueId: number, offset: number): Promise<number> {
    const r = await this.store.read(topic, queueId, offset, { maxCount: 1 });
    const m = r.messages[0];
    return m && m.queueOffset === offset ? m.storeTimestamp : 0;
  }

  /** Messages stored in a topic between two times (ms), oldest first, at most `limit`. */
  async messagesBetween(topic: string, from: number, to: number, limit = 32): Promise<BrokerMessage[]> {
    const t = this.topics.require(topic);
    const out: BrokerMessage[] = [];
    const cap = Math.min(Math.max(1, limit), 1000);
    for (let q = 0; q < Math.max(t.readQueueNums, t.writeQueueNums); q++) {
      // The oldest `cap` of each queue in the range, merged: the oldest `cap` of the topic.
      let at = await this.store.offsetForTimestamp(topic, q, from);
      let taken = 0;
      while (taken < cap) {
        const r = await this.store.read(topic, q, at, { maxCount: 64, maxBytes: 4 * 1024 * 1024 });
        if (r.messages.length === 0) break;
        let past = false;
        for (const m of r.messages) {
          if (m.storeTimestamp > to) {
            past = true;
            break;
          }
          if (m.storeTimestamp >= from && taken < cap) {
            out.push(m);
            taken++;
          }
        }
        if (past || r.nextOffset <= at) break;
        at = r.nextOffset;
      }
    }
    out.sort((a, b) => a.storeTimestamp - b.storeTimestamp || a.queueId - b.queueId);
    return out.slice(0, cap);
  }

  /**
   * Delete a topic: its metadata, its queues (the store releases their files and memory; the log
   * bytes go with retention), every group's committed offsets, in-flight, retry and FIFO state for
   * it. Nothing of it is delivered again; a topic created again under its name starts empty (the
   * purge is repeated then, in case a crash cut this one short).
   */
  async deleteTopic(name: string): Promise<void> {
    await this.topics.delete(name);
    await this.purgeTopic(name);
  }

  /** Delete a consumer group: its metadata, committed offsets, in-flight state and waiting retries. */
  async deleteGroup(name: string): Promise<void> {
    await this.groups.delete(name);
    await this.purgeGroup(name);
  }

  private async purgeTopic(name: string): Promise<void> {
    await this.consume.purgeTopic(name);
    await this.offsets.forget({ topic: name });
  }

  private async purgeGroup(name: string): Promise<void> {
    await this.consume.purgeGroup(name);
    await this.offsets.forget({ group: name });
  }

  /** Messages by id (queryMsgById), newest first. */
  findMessageById(messageId: string, topic?: string): Promise<BrokerMessage[]> {
    if (!messageId) throw new VelaError('ILLEGAL_MESSAGE_ID', 'a message id is required');
    return this.store.findById(messageId, { ...(topic ? { topic } : {}), limit: 32 });
  }

  /** Messages by key (queryMsgByKey), newest first. */
  findMessagesByKey(key: string, topic?: string, limit = 32): Promise<BrokerMessage[]> {
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
  ): Promise<{ messages: BrokerMessage[]; nextOffset: number; maxOffset: number }> {
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
   * a new message in the group's retry topic, due now, with its attempts counted afresh: the gRPC
   * retry topic of its topic, or `%RETRY%<group>` for dead letters of queue-granularity consumers.
   */
  async resendDeadLetters(group: string, messageId?: string): Promise<number> {
    this.groups.require(group);
    // Dead letters of the Remoting send-back go back to %RETRY%<group>, which queue-granularity
    // consumers read; others to the gRPC retry topic of their topic. Those not marked (older ones)
    // follow the group: queue-granularity when it has a Remoting retry topic and no POP consumption.
    const byQueue =
      this.topics.get(groupRetryTopic(group)) !== undefined && !groupConsumerKinds(this, group).pop;
    let offset = 0;
    let resent = 0;
    for (;;) {
      const page = await this.deadLetters(group, offset, 256);
      const chosen = page.messages.filter(
        (m) => !messageId || m.messageId === messageId || m.properties.ORIGIN_MESSAGE_ID === messageId,
      );
      if (chosen.length > 0) {
        const records = chosen.map((m) =>
          (deadLetteredBySendBack(m) ?? byQueue) ? groupResendRecord(m, group) : resendRecord(m, group),
        );
        if (records.some((r) => r.topic === groupRetryTopic(group)))
          await this.sendBack.ensureRetryTopic(group);
        await this.store.append(records);
      }
      for (const m of chosen) {
        this.deliveries.noted(originIdOf(m), {
          group,
          topic: m.properties.DLQ_ORIGIN_TOPIC ?? '',
          messageId: m.messageId,
          attempt: 0,
          clientId: '',
          via: 'ADMIN',
          retry: false,
          queueId: m.queueId,
          queueOffset: m.queueOffset,
          at: this.clock.now(),
          outcome: 'RESENT_FROM_DLQ',
        });
      }
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
        this.timers.clear();
        this.flow.stop();
        this.transactions.close();
        await this.timer.close();
        this.consume.stop();
        this.pull.stop();
        await this.consume.drain();
        await this.journal.close();
        await this.store.close();
      })();
    }
    return this.closing;
  }
}

/** The init user (`aclInitUser`), and a warning when access control is on with nobody to let in. */
async function initAccessControl(auth: AuthRegistry, config: VelaConfig, logger: Logger): Promise<void> {
  if (config.aclInitUser) {
    const i = config.aclInitUser.indexOf(':');
    const username = config.aclInitUser.slice(0, i);
    if (await auth.ensureSuperUser(username, config.aclInitUser.slice(i + 1))) {
      logger.info({ user: username }, 'created the initial super user (aclInitUser)');
    }
  }
  if (config.aclEnabled && auth.userCount === 0) {
    logger.warn(
      'access control is on but there are no users: every request will be refused (set aclInitUser)',
    );
  }
}
