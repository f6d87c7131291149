/** Consumer groups (mqadmin `updateSubGroup`): create, update, delete, look up. Durable. */
import { VelaError } from '../common/errors.js';
import { checkGroupConfig, groupDefaults, type GroupConfig } from './metadata.js';
import { checkGroupName } from './names.js';
import type { RetryPolicy } from './retry-policy.js';
import type { StateJournal, StateParticipant, StateRecord } from './state-journal.js';

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
    checkGroupName(name);
    const cur = this.groups.get(name) ?? groupDefaults(name);
    const next: GroupConfig = { ...cur };
    for (const [k, v] of Object.entries(update))
      if (v !== undefined) (next as unknown as Record<string, unknown>)[k] = v;
    next.name = name;
    checkGroupConfig(next);
    // Applied by the journal once durable (see `apply`).
    await this.journal.commit({ k: 'group', v: next });
    return next;
  }

  async delete(name: string): Promise<void> {
    this.require(name);
    await this.journal.commit({ k: 'group-', name });
  }

  apply(rec: StateRecord): boolean {
    if (rec.k === 'group') this.groups.set((rec.v as GroupConfig).name, rec.v as GroupConfig);
    else if (rec.k === 'group-') this.groups.delete(rec.name as string);
    else return false;
    return true;
  }

  snapshot(): unknown {
    return [...this.groups.values()];
  }

  restore(data: unknown): void {
    this.groups.clear();
    for (const g of data as GroupConfig[]) this.groups.set(g.name, g);
  }
}
