import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRetention, type SegmentInfo } from '../../src/store/retention.js';

const H = 3600_000;
const policy = { retentionMs: 72 * H, cleanupRatio: 0.75, forceRatio: 0.85, maxDeletesPerRun: 10 };
const GB = 1024 ** 3;

/** n segments of 1 GB, the i-th last written `ageHours[i]` hours before `now`. */
function segments(ageHours: number[], now: number): SegmentInfo[] {
  return ageHours.map((age, i) => ({ base: i * GB, end: (i + 1) * GB, lastStoreTimestamp: now - age * H }));
}

test('segments older than the retention time are deleted, oldest first', () => {
  const now = 1000 * H;
  const plan = planRetention(
    segments([100, 80, 73, 71, 1], now),
    now,
    { totalBytes: 100 * GB, usedBytes: 10 * GB },
    policy,
  );
  assert.deepEqual(
    plan.delete.map((d) => [d.segment.base / GB, d.reason]),
    [
      [0, 'expired'],
      [1, 'expired'],
      [2, 'expired'],
    ],
  );
});

test('deletion stops at the first segment still within retention', () => {
  const now = 1000 * H;
  // An expired segment behind a younger one is kept: whole-prefix deletion keeps offsets contiguous.
  const plan = planRetention(
    segments([100, 10, 90, 1], now),
    now,
    { totalBytes: 100 * GB, usedBytes: 10 * GB },
    policy,
  );
  assert.deepEqual(
    plan.delete.map((d) => d.segment.base / GB),
    [0],
  );
});

test('the active segment is never deleted, however old', () => {
  const now = 1000 * H;
  const plan = planRetention(
    segments([500, 400], now),
    now,
    { totalBytes: 10 * GB, usedBytes: 9.8 * GB },
    policy,
  );
  assert.deepEqual(
    plan.delete.map((d) => d.segment.base / GB),
    [0],
  );
  assert.deepEqual(
    planRetention(segments([500], now), now, { totalBytes: 1, usedBytes: 1 }, policy).delete,
    [],
  );
});

test('above the cleanup ratio, unexpired segments go until use is below it, at most 10 a run', () => {
  const now = 1000 * H;
  const segs = segments(
    Array.from({ length: 30 }, (_, i) => 30 - i),
    now,
  );
  // 78 GB used of 100: two deletions bring it to 76, a third to 75 (still not below 75 %), a fourth below.
  const plan = planRetention(segs, now, { totalBytes: 100 * GB, usedBytes: 78 * GB }, policy);
  assert.deepEqual(
    plan.delete.map((d) => d.reason),
    ['disk-cleanup', 'disk-cleanup', 'disk-cleanup', 'disk-cleanup'],
  );
  assert.ok(plan.usageAfter < 0.75);
  const far = planRetention(segs, now, { totalBytes: 100 * GB, usedBytes: 84 * GB }, policy);
  assert.equal(far.delete.length, 10, 'cleanup is limited per run');
});

test('above the forced ratio there is no per-run limit', () => {
  const now = 1000 * H;
  const segs = segments(
    Array.from({ length: 30 }, (_, i) => 30 - i),
    now,
  );
  const plan = planRetention(segs, now, { totalBytes: 100 * GB, usedBytes: 90 * GB }, policy);
  assert.equal(plan.delete.length, 16);
  assert.ok(plan.delete.every((d) => d.reason === 'disk-forced'));
  assert.ok(plan.usageAfter < 0.75);
});

test('expired segments count towards freeing space', () => {
  const now = 1000 * H;
  // 98 % used: two expired segments free 2 GB (78 %), one forced deletion more gets below 75 %.
  const plan = planRetention(
    segments([100, 90, 5, 4, 3, 1], now),
    now,
    { totalBytes: 10 * GB, usedBytes: 9.8 * GB },
    policy,
  );
  assert.deepEqual(
    plan.delete.map((d) => d.reason),
    ['expired', 'expired', 'disk-forced'],
  );
  // 90 % used: the expired ones alone suffice.
  const enough = planRetention(
    segments([100, 90, 5, 4, 3, 1], now),
    now,
    { totalBytes: 10 * GB, usedBytes: 9 * GB },
    policy,
  );
  assert.deepEqual(
    enough.delete.map((d) => d.reason),
    ['expired', 'expired'],
  );
});

test('under the thresholds nothing young is touched', () => {
  const now = 1000 * H;
  const plan = planRetention(
    segments([5, 4, 3], now),
    now,
    { totalBytes: 100 * GB, usedBytes: 74 * GB },
    policy,
  );
  assert.deepEqual(plan.delete, []);
});
