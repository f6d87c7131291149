/** Consumer groups (mqadmin `updateSubGroup`): create, update, delete, look up. Durable. */
import { VelaError } from '../common/errors.js';
import { checkGroupConfig, groupDefaults, type GroupConfig } from './metadata.js';
import { checkGroupName, checkNewGroupName } from './names.js';
import type { RetryPolicy } from './retry-policy.js';
import type { StateJournal, StateParticipant } from './state-journal.js';
import type { StateRecord } from './state-records.js';
import { decodeGroupsSnapshot, encodeGroupsSnapshot } from './state-snapshots.js';

export interface GroupUpdate {
  retryMaxTimes?: number;
  consumeMessageOrderly?: boolean;
  consumeBroadcastEnable?: boolean;
  consumeEnable?: boolean;
  retryPolicy?: RetryPolicy;
  fifoRetryIntervalMs?: number;
}

export class GroupRegistry implements StateParticipant {
  readonly stateKey = 'groups';
  private readonly groups = new Map<string, GroupConfig>();
  journal!: StateJournal;
  /** Runs before a group that does not exist is created (the broker clears what a deleted one left). */
  beforeCreate: ((name: string) => Promise<void>) | null = null;

  get(name: string): GroupConfig | undefined {
    return this.groups.get(name);
  }

  require(name: string): GroupConfig {
    const g = this.groups.get(name);
    if (!g) throw new VelaError('CONSUMER_GROUP_NOT_FOUND', name);
    return g;
  }

  list(): GroupConfig[] {
    return [...this.groups.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  async upsert(name: string, update: GroupUpdate): Promise<GroupConfig> {
    if (this.groups.has(name)) checkGroupName(name);
    else checkNewGroupName(name);
    const cur = this.groups.get(name) ?? groupDefaults(name);
    const next: GroupConfig = { ...cur };
    for (const [k, v] of Object.entries(update))
      if (v !== undefined) (next as unknown as Record<string, unknown>)[k] = v;
    next.name = name;
    checkGroupConfig(next);
    if (!this.groups.has(name) && this.beforeCreate) await this.beforeCreate(name);
    // Applied by the journal once durable (see `apply`).
    await this.journal.commit({ kind: 'group', config: next });
    return next;
  }

  async delete(name: string): Promise<void> {
    this.require(name);
    await this.journal.commit({ kind: 'groupDeleted', name });
  }

  apply(rec: StateRecord): boolean {
    if (rec.kind === 'group') this.groups.set(rec.config.name, rec.config);
    else if (rec.kind === 'groupDeleted') this.groups.delete(rec.name);
    else return false;
    return true;
  }

  snapshot(): unknown {
    return encodeGroupsSnapshot([...this.groups.values()]);
  }

  restore(data: unknown): void {
    this.groups.clear();
    for (const g of decodeGroupsSnapshot(data)) this.groups.set(g.name, g);
  }
}
