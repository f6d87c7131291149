/**
 * Retention decisions, as a pure function so they can be tested with a fake clock and fake disk use.
 *
 * - A sealed segment whose newest record is older than `retentionMs` is deleted.
 * - Disk use at or above `cleanupRatio`: oldest sealed segments are deleted, expired or not, until the
 *   projected use falls below `cleanupRatio`, at most `maxDeletesPerRun` per run.
 * - At or above `forceRatio`: the same without the per-run limit.
 * - The active (newest) segment is never deleted; acks never delete anything.
 */
export interface SegmentInfo {
  base: number;
  end: number;
  /** Store time of the segment's newest record (ms). */
  lastStoreTimestamp: number;
}

export interface RetentionPolicy {
  retentionMs: number;
  cleanupRatio: number;
  forceRatio: number;
  maxDeletesPerRun: number;
}

export type RetentionReason = 'expired' | 'disk-cleanup' | 'disk-forced';

export interface RetentionPlan {
  /** Segments to delete, oldest first. */
  delete: { segment: SegmentInfo; reason: RetentionReason }[];
  /** Disk use before and (projected) after. */
  usageBefore: number;
  usageAfter: number;
}

export function planRetention(
  segments: readonly SegmentInfo[],
  now: number,
  disk: { totalBytes: number; usedBytes: number },
  policy: RetentionPolicy,
): RetentionPlan {
  const ratio = (used: number) => (disk.totalBytes > 0 ? used / disk.totalBytes : 0);
  const usageBefore = ratio(disk.usedBytes);
  const sealed = segments.slice(0, -1);
  const plan: RetentionPlan['delete'] = [];
  let used = disk.usedBytes;
  let i = 0;
  for (; i < sealed.length; i++) {
    const s = sealed[i]!;
    if (s.lastStoreTimestamp + policy.retentionMs > now) break;
    plan.push({ segment: s, reason: 'expired' });
    used -= s.end - s.base;
  }
  if (usageBefore >= policy.cleanupRatio) {
    const forced = usageBefore >= policy.forceRatio;
    let budget = forced ? Infinity : policy.maxDeletesPerRun;
    for (; i < sealed.length && budget > 0 && ratio(used) >= policy.cleanupRatio; i++, budget--) {
      const s = sealed[i]!;
      plan.push({ segment: s, reason: forced ? 'disk-forced' : 'disk-cleanup' });
      used -= s.end - s.base;
    }
  }
  return { delete: plan, usageBefore, usageAfter: ratio(Math.max(0, used)) };
}
