/**
 * Queue locks for orderly queue-granularity consumers (RocketMQ's `RebalanceLockManager`,
 * LOCK_BATCH_MQ / UNLOCK_BATCH_MQ): a consumer consumes a queue in order only while it holds the
 * group's lock on it, so two consumers never work on one queue at once, even while a rebalance moves
 * it. A lock lasts `ttlMs` (60 s) unless its holder renews it; clients renew every 20 s.
 */
export interface LockedQueue {
  topic: string;
  queueId: number;
}

interface Lock {
  clientId: string;
  lastUpdate: number;
}

const qkey = (topic: string, queueId: number) => `${queueId}\u0000${topic}`;

export class QueueLocks {
  /** group → queue → lock */
  private readonly locks = new Map<string, Map<string, Lock>>();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs = 60_000,
  ) {}

  /** Lock (or renew) what is free or already ours; returns the queues now held by `clientId`. */
  tryLock(group: string, clientId: string, queues: readonly LockedQueue[]): LockedQueue[] {
    let table = this.locks.get(group);
    if (!table) this.locks.set(group, (table = new Map()));
    const now = this.now();
    const out: LockedQueue[] = [];
    for (const q of queues) {
      const k = qkey(q.topic, q.queueId);
      const cur = table.get(k);
      if (!cur || cur.clientId === clientId || now - cur.lastUpdate > this.ttlMs) {
        table.set(k, { clientId, lastUpdate: now });
        out.push(q);
      }
    }
    return out;
  }

  /** Release the queues `clientId` holds (others' locks are left alone). */
  unlock(group: string, clientId: string, queues: readonly LockedQueue[]): void {
    const table = this.locks.get(group);
    if (!table) return;
    for (const q of queues) {
      const k = qkey(q.topic, q.queueId);
      if (table.get(k)?.clientId === clientId) table.delete(k);
    }
    if (table.size === 0) this.locks.delete(group);
  }

  /** Release everything a client holds (it left). */
  releaseClient(clientId: string): void {
    for (const [group, table] of [...this.locks]) {
      for (const [k, l] of [...table]) if (l.clientId === clientId) table.delete(k);
      if (table.size === 0) this.locks.delete(group);
    }
  }

  /** The live holder of a queue's lock, if any. */
  holder(group: string, topic: string, queueId: number): string | undefined {
    const l = this.locks.get(group)?.get(qkey(topic, queueId));
    return l && this.now() - l.lastUpdate <= this.ttlMs ? l.clientId : undefined;
  }

  /** Whether the group holds any live lock (its consumers are orderly). */
  hasLocks(group: string): boolean {
    const table = this.locks.get(group);
    if (!table) return false;
    const now = this.now();
    for (const l of table.values()) if (now - l.lastUpdate <= this.ttlMs) return true;
    return false;
  }
}
