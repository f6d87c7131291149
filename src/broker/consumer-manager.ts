/**
 * Queue-granularity consumers that register by heartbeat (RocketMQ's `ConsumerManager`): per consumer
 * group, the clients in it, how they consume (clustering or broadcasting, push or pull) and what they
 * subscribed to. Such clients balance queues among themselves from the group's client list, so every
 * change of membership is announced to listeners (who tell the clients to rebalance at once).
 *
 * A client is tied to the channel (connection) it heartbeats on: when the channel closes the client
 * leaves its groups at once; a client silent for `expireMs` (its heartbeats stopped but the channel
 * stayed open) is dropped by `sweep`.
 */
import { VelaError } from '../common/errors.js';
import { parseTagFilter, type TagFilter } from './filter.js';

export type MessageModel = 'CLUSTERING' | 'BROADCASTING';
export type ConsumeType = 'CONSUME_PASSIVELY' | 'CONSUME_ACTIVELY' | 'CONSUME_POP';

export interface Subscription {
  topic: string;
  /** The expression as the client wrote it (`*`, `A||B`). */
  expression: string;
  /** `TAG` (SQL92 is refused at registration). */
  expressionType: string;
  subVersion: number;
  filter: TagFilter;
}

export interface ConsumerClient {
  clientId: string;
  group: string;
  /** The channel (connection) it registered on. */
  channel: string;
  consumeType: ConsumeType;
  messageModel: MessageModel;
  consumeFromWhere: string;
  subscriptions: Map<string, Subscription>;
  language: string;
  version: number;
  remoteAddress: string;
  lastUpdate: number;
}

export interface ConsumerRegistration {
  clientId: string;
  group: string;
  channel: string;
  consumeType?: string;
  messageModel?: string;
  consumeFromWhere?: string;
  subscriptions: { topic: string; expression?: string; expressionType?: string; subVersion?: number }[];
  language?: string;
  version?: number;
  remoteAddress?: string;
}

export interface ProducerClient {
  clientId: string;
  group: string;
  channel: string;
  language: string;
  version: number;
  remoteAddress: string;
  lastUpdate: number;
}

export type GroupChangeListener = (group: string, clients: readonly ConsumerClient[]) => void;

/** Tag filters only: SQL92 is not supported (reference/server-semantics.md §9). */
export function parseSubscription(
  topic: string,
  expression: string | undefined,
  expressionType: string | undefined,
  subVersion?: number,
): Subscription {
  const type = (expressionType || 'TAG').toUpperCase();
  if (type !== 'TAG') {
    throw new VelaError(
      'ILLEGAL_FILTER_EXPRESSION',
      `${type} filters are not supported by this broker; use TAG expressions`,
    );
  }
  const expr = expression ?? '*';
  return {
    topic,
    expression: expr,
    expressionType: type,
    subVersion: subVersion ?? 0,
    filter: parseTagFilter(expr),
  };
}

export class ConsumerManager {
  /** group → clientId → client */
  private readonly groups = new Map<string, Map<string, ConsumerClient>>();
  /** group → clientId → producer */
  private readonly producers = new Map<string, Map<string, ProducerClient>>();
  private readonly listeners = new Set<GroupChangeListener>();

  constructor(
    private readonly now: () => number,
    /** A client whose heartbeats stopped is dropped after this long (RocketMQ: 120 s). */
    private readonly expireMs = 120_000,
  ) {}

  /**
   * Register or refresh a consumer (a heartbeat). Returns whether the group's membership or the
   * client's subscriptions changed. Throws `ILLEGAL_FILTER_EXPRESSION` for an unsupported filter.
   */
  register(r: ConsumerRegistration): boolean {
    const subscriptions = new Map<string, Subscription>();
    for (const s of r.subscriptions) {
      subscriptions.set(s.topic, parseSubscription(s.topic, s.expression, s.expressionType, s.subVersion));
    }
    let members = this.groups.get(r.group);
    if (!members) this.groups.set(r.group, (members = new Map()));
    const old = members.get(r.clientId);
    const client: ConsumerClient = {
      clientId: r.clientId,
      group: r.group,
      channel: r.channel,
      consumeType: (r.consumeType as ConsumeType) || 'CONSUME_PASSIVELY',
      messageModel: r.messageModel === 'BROADCASTING' ? 'BROADCASTING' : 'CLUSTERING',
      consumeFromWhere: r.consumeFromWhere ?? 'CONSUME_FROM_LAST_OFFSET',
      subscriptions,
      language: r.language ?? 'OTHER',
      version: r.version ?? 0,
      remoteAddress: r.remoteAddress ?? '',
      lastUpdate: this.now(),
    };
    members.set(r.clientId, client);
    const joined = !old || old.channel !== r.channel;
    const resubscribed = !!old && !sameSubscriptions(old.subscriptions, subscriptions);
    if (joined || resubscribed) this.emit(r.group);
    return joined || resubscribed;
  }

  registerProducer(p: Omit<ProducerClient, 'lastUpdate'>): void {
    let members = this.producers.get(p.group);
    if (!members) this.producers.set(p.group, (members = new Map()));
    members.set(p.clientId, { ...p, lastUpdate: this.now() });
  }

  /** A client left a group (UNREGISTER_CLIENT). */
  unregister(group: string, clientId: string): void {
    const members = this.groups.get(group);
    if (members?.delete(clientId)) {
      if (members.size === 0) this.groups.delete(group);
      this.emit(group);
    }
  }

  unregisterProducer(group: string, clientId: string): void {
    const members = this.producers.get(group);
    if (members?.delete(clientId) && members.size === 0) this.producers.delete(group);
  }

  /** A channel closed: every client registered on it leaves its groups. */
  channelClosed(channel: string): void {
    for (const [group, members] of [...this.groups]) {
      let changed = false;
      for (const [id, c] of [...members]) {
        if (c.channel === channel) {
          members.delete(id);
          changed = true;
        }
      }
      if (members.size === 0) this.groups.delete(group);
      if (changed) this.emit(group);
    }
    for (const [group, members] of [...this.producers]) {
      for (const [id, p] of [...members]) if (p.channel === channel) members.delete(id);
      if (members.size === 0) this.producers.delete(group);
    }
  }

  /** Drop clients whose heartbeats stopped; returns how many. */
  sweep(): number {
    const cutoff = this.now() - this.expireMs;
    let n = 0;
    for (const [group, members] of [...this.groups]) {
      let changed = false;
      for (const [id, c] of [...members]) {
        if (c.lastUpdate < cutoff) {
          members.delete(id);
          changed = true;
          n++;
        }
      }
      if (members.size === 0) this.groups.delete(group);
      if (changed) this.emit(group);
    }
    for (const [group, members] of [...this.producers]) {
      for (const [id, p] of [...members]) if (p.lastUpdate < cutoff) members.delete(id);
      if (members.size === 0) this.producers.delete(group);
    }
    return n;
  }

  /** The clients of a group, sorted by client id. */
  clients(group: string): ConsumerClient[] {
    const members = this.groups.get(group);
    return members ? [...members.values()].sort((a, b) => (a.clientId < b.clientId ? -1 : 1)) : [];
  }

  /** Client ids of the group that share its queues (clustering consumers), sorted. */
  clusteringIds(group: string): string[] {
    return this.clients(group)
      .filter((c) => c.messageModel === 'CLUSTERING')
      .map((c) => c.clientId);
  }

  client(group: string, clientId: string): ConsumerClient | undefined {
    return this.groups.get(group)?.get(clientId);
  }

  /** The subscription of `topic` that the group's clients registered (the most recent one). */
  subscription(group: string, topic: string): Subscription | undefined {
    let best: ConsumerClient | undefined;
    for (const c of this.groups.get(group)?.values() ?? []) {
      if (c.subscriptions.has(topic) && (!best || c.lastUpdate > best.lastUpdate)) best = c;
    }
    return best?.subscriptions.get(topic);
  }

  producerClients(group: string): ProducerClient[] {
    const members = this.producers.get(group);
    return members ? [...members.values()] : [];
  }

  /** Every group with registered producers. */
  producerGroupNames(): string[] {
    return [...this.producers.keys()].sort();
  }

  /** Every group with registered consumers. */
  groupNames(): string[] {
    return [...this.groups.keys()].sort();
  }

  /** Groups whose consumers subscribed to `topic`. */
  groupsOfTopic(topic: string): string[] {
    const out: string[] = [];
    for (const [group, members] of this.groups) {
      for (const c of members.values()) {
        if (c.subscriptions.has(topic)) {
          out.push(group);
          break;
        }
      }
    }
    return out.sort();
  }

  /** Channels of a group's clients (to notify them). */
  channelsOf(group: string): string[] {
    return [...new Set(this.clients(group).map((c) => c.channel))];
  }

  onChange(listener: GroupChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(group: string): void {
    const clients = this.clients(group);
    for (const l of this.listeners) l(group, clients);
  }
}

function sameSubscriptions(a: Map<string, Subscription>, b: Map<string, Subscription>): boolean {
  if (a.size !== b.size) return false;
  for (const [topic, s] of a) {
    const t = b.get(topic);
    if (!t || t.expression !== s.expression || t.expressionType !== s.expressionType) return false;
  }
  return true;
}
