/** Topics: create, update, delete, look up. Durable through the state journal. */
import { VelaError } from '../common/errors.js';
import { checkTopicConfig, parseMessageType, topicDefaults, type TopicConfig } from './metadata.js';
import { checkNewTopicName, checkTopicName } from './names.js';
import type { StateJournal, StateParticipant } from './state-journal.js';
import type { StateRecord } from './state-records.js';
import { decodeTopicsSnapshot, encodeTopicsSnapshot } from './state-snapshots.js';

export interface TopicUpdate {
  readQueueNums?: number;
  writeQueueNums?: number;
  perm?: number;
  /** Attributes, e.g. `{ "message.type": "FIFO" }`. */
  attributes?: Record<string, string>;
}

export class TopicRegistry implements StateParticipant {
  readonly stateKey = 'topics';
  private readonly topics = new Map<string, TopicConfig>();
  journal!: StateJournal;
  /** Runs before a topic that does not exist is created (the broker clears what a deleted one left). */
  beforeCreate: ((name: string) => Promise<void>) | null = null;

  constructor(private readonly allowMixed: boolean) {}

  get(name: string): TopicConfig | undefined {
    return this.topics.get(name);
  }

  /** The topic, or `TOPIC_NOT_FOUND`. */
  require(name: string): TopicConfig {
    const t = this.topics.get(name);
    if (!t) throw new VelaError('TOPIC_NOT_FOUND', name);
    return t;
  }

  list(): TopicConfig[] {
    return [...this.topics.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Create or update a topic (mqadmin `updateTopic`); `system` lets the broker create its own (%DLQ%). */
  async upsert(name: string, update: TopicUpdate, opts: { system?: boolean } = {}): Promise<TopicConfig> {
    // Names in the system namespaces are the broker's: nobody else creates one (existing ones, such as
    // a DLQ, may still be updated).
    if (!opts.system) {
      if (this.topics.has(name)) checkTopicName(name);
      else checkNewTopicName(name);
    }
    const cur = this.topics.get(name) ?? topicDefaults(name);
    const attributes = { ...cur.attributes };
    let messageType = cur.messageType;
    for (const [k, v] of Object.entries(update.attributes ?? {})) {
      if (k === 'message.type') messageType = parseMessageType(v, this.allowMixed);
      else attributes[k] = v;
    }
    const next: TopicConfig = {
      name,
      readQueueNums: update.readQueueNums ?? cur.readQueueNums,
      writeQueueNums: update.writeQueueNums ?? cur.writeQueueNums,
      perm: update.perm ?? cur.perm,
      messageType,
      attributes,
    };
    checkTopicConfig(next);
    if (!this.topics.has(name) && this.beforeCreate) await this.beforeCreate(name);
    // Applied by the journal once durable (see `apply`).
    await this.journal.commit({ kind: 'topic', config: next });
    return next;
  }

  async delete(name: string): Promise<void> {
    this.require(name);
    await this.journal.commit({ kind: 'topicDeleted', name });
  }

  apply(rec: StateRecord): boolean {
    if (rec.kind === 'topic') this.topics.set(rec.config.name, rec.config);
    else if (rec.kind === 'topicDeleted') this.topics.delete(rec.name);
    else return false;
    return true;
  }

  snapshot(): unknown {
    return encodeTopicsSnapshot([...this.topics.values()]);
  }

  restore(data: unknown): void {
    this.topics.clear();
    for (const t of decodeTopicsSnapshot(data)) this.topics.set(t.name, t);
  }
}
