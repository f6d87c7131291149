/**
 * Committed consumer offsets for queue-granularity (pull) consumption: per (consumer group, topic,
 * queue) the next offset to consume, as the client committed it, with the time of the commit. Kept
 * in the state journal, so offsets have the store's crash guarantees. An admin reset also leaves a
 * pending notice that the next pull of that queue receives, so a running consumer moves at once.
 */
import type { StateJournal, StateParticipant } from './state-journal.js';
import type { StateRecord } from './state-records.js';
import { decodeOffsetsSnapshot, encodeOffsetsSnapshot } from './state-snapshots.js';

export interface CommittedOffset {
  offset: number;
  updatedAt: number;
}

const key = (group: string, topic: string, queueId: number) => `${group}\u0000${topic}\u0000${queueId}`;
/** A group's own offsets and its broadcast consumers' (`group%BROADCAST%<name>`). */
const ofGroup = (g: string, group: string) => g === group || g.startsWith(`${group}%BROADCAST%`);
const parts = (k: string) => {
  const [group, topic, q] = k.split('\u0000') as [string, string, string];
  return { group, topic, queueId: Number(q) };
};

export class OffsetStore implements StateParticipant {
  readonly stateKey = 'offsets';
  journal!: StateJournal;
  private readonly offsets = new Map<string, CommittedOffset>();
  private readonly pendingResets = new Map<string, number>();

  constructor(private readonly now: () => number) {}

  get(group: string, topic: string, queueId: number): CommittedOffset | undefined {
    return this.offsets.get(key(group, topic, queueId));
  }

  async commit(group: string, topic: string, queueId: number, offset: number): Promise<void> {
    const updatedAt = this.now();
    // Applied by the journal once durable (see `apply`).
    await this.journal.commit({ kind: 'offsetCommitted', group, topic, queueId, offset, updatedAt });
  }

  /** An admin reset: commit `offset` and tell the next pull of that queue to move there. */
  async reset(group: string, topic: string, queueId: number, offset: number): Promise<void> {
    const updatedAt = this.now();
    await this.journal.commit({ kind: 'offsetReset', group, topic, queueId, offset, updatedAt });
  }

  /** Take the pending reset of a queue, if any (the pull that receives it clears it). */
  takeReset(group: string, topic: string, queueId: number): number | undefined {
    const k = key(group, topic, queueId);
    const o = this.pendingResets.get(k);
    if (o !== undefined) this.pendingResets.delete(k);
    return o;
  }

  /** Every committed offset of a group (and topic). */
  list(
    group: string,
    topic?: string,
  ): { topic: string; queueId: number; offset: number; updatedAt: number }[] {
    const out = [];
    for (const [k, v] of this.offsets) {
      const [g, t, q] = k.split('\u0000') as [string, string, string];
      if (g === group && (topic === undefined || t === topic))
        out.push({ topic: t, queueId: Number(q), ...v });
    }
    return out.sort((a, b) => a.topic.localeCompare(b.topic) || a.queueId - b.queueId);
  }

  /** The group's broadcast consumers with offsets for `topic` (`group%BROADCAST%<name>`). */
  broadcastGroups(group: string, topic: string): string[] {
    const out = new Set<string>();
    for (const k of this.offsets.keys()) {
      const [g, t] = k.split('\u0000') as [string, string];
      if (t === topic && g.startsWith(`${group}%BROADCAST%`)) out.add(g);
    }
    return [...out];
  }

  /** Every group name with offsets (broadcast consumers' `group%BROADCAST%<name>` included). */
  groupNames(): Set<string> {
    return new Set([...this.offsets.keys()].map((k) => k.slice(0, k.indexOf('\u0000'))));
  }

  hasGroup(group: string): boolean {
    for (const k of this.offsets.keys()) if (k.startsWith(`${group}\u0000`)) return true;
    return false;
  }

  async forget(filter: { group?: string; topic?: string }): Promise<void> {
    let changed = false;
    for (const k of [...this.offsets.keys()]) {
      const [g, t] = k.split('\u0000');
      if (
        (filter.group === undefined || ofGroup(g!, filter.group)) &&
        (filter.topic === undefined || t === filter.topic)
      ) {
        this.offsets.delete(k);
        this.pendingResets.delete(k);
        changed = true;
      }
    }
    if (changed)
      await this.journal.append({
        kind: 'offsetsForgotten',
        ...(filter.group ? { group: filter.group } : {}),
        ...(filter.topic ? { topic: filter.topic } : {}),
      });
  }

  apply(rec: StateRecord): boolean {
    if (rec.kind === 'offsetCommitted' || rec.kind === 'offsetReset') {
      const k = key(rec.group, rec.topic, rec.queueId);
      this.offsets.set(k, { offset: rec.offset, updatedAt: rec.updatedAt });
      if (rec.kind === 'offsetReset') this.pendingResets.set(k, rec.offset);
      return true;
    }
    if (rec.kind === 'offsetsForgotten') {
      for (const k of [...this.offsets.keys()]) {
        const { group, topic } = parts(k);
        if (
          (rec.group === undefined || ofGroup(group, rec.group)) &&
          (rec.topic === undefined || topic === rec.topic)
        ) {
          this.offsets.delete(k);
          this.pendingResets.delete(k);
        }
      }
      return true;
    }
    return false;
  }

  snapshot(): unknown {
    return encodeOffsetsSnapshot({
      offsets: [...this.offsets].map(([k, v]) => ({ ...parts(k), ...v })),
      resets: [...this.pendingResets].map(([k, offset]) => ({ ...parts(k), offset })),
    });
  }

  restore(data: unknown): void {
    const d = decodeOffsetsSnapshot(data);
    this.offsets.clear();
    this.pendingResets.clear();
    for (const r of d.offsets)
      this.offsets.set(key(r.group, r.topic, r.queueId), { offset: r.offset, updatedAt: r.updatedAt });
    for (const r of d.resets) this.pendingResets.set(key(r.group, r.topic, r.queueId), r.offset);
  }
}
