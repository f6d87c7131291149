/**
 * The clock window of signed requests: within the skew of the broker's clock, or (time-zone
 * offsets on) off by a whole time-zone offset within the skew, as the Java, Go and Python clients
 * stamp local time with a `Z`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkDateTime, parseDateTime } from '../../src/broker/auth/date-time.js';
import { formatDateTime } from '../../src/common/signature.js';
import { isVelaError } from '../../src/common/errors.js';

const NOW = Date.UTC(2025, 5, 15, 12, 0, 0);
const MIN = 60_000;
const H = 60 * MIN;
const strict = { skewMs: 5 * MIN, timeZoneOffsets: false };
const zones = { skewMs: 5 * MIN, timeZoneOffsets: true };
const at = (offsetMs: number) => formatDateTime(NOW + offsetMs);
const ok = (v: string, p = strict) => checkDateTime(v, NOW, p);
const refused = (v: string, p = strict) =>
  assert.throws(
    () => checkDateTime(v, NOW, p),
    (e: unknown) => isVelaError(e, 'ACL_UNAUTHORIZED'),
    v,
  );

test('parseDateTime reads yyyyMMddTHHmmssZ as UTC and refuses anything else', () => {
  assert.equal(parseDateTime('20250615T120000Z'), NOW);
  for (const bad of [
    '',
    '20250615T120000',
    '2025-06-15T12:00:00Z',
    '20251315T120000Z',
    '20250631T120000Z',
    '20250615T250000Z',
    '20250615T126000Z',
  ]) {
    assert.equal(parseDateTime(bad), undefined, bad);
  }
});

test('strict: within the skew either way, refused beyond it', () => {
  ok(at(0));
  ok(at(5 * MIN));
  ok(at(-5 * MIN));
  refused(at(5 * MIN + 1000));
  refused(at(-5 * MIN - 1000));
  refused(at(8 * H), strict);
  refused('not-a-date');
});

test('time-zone offsets: local time stamped with Z is accepted, off by whole quarter hours', () => {
  ok(at(8 * H), zones); // Asia/Shanghai
  ok(at(5.5 * H + 2 * MIN), zones); // India, a clock 2 min fast
  ok(at(5.75 * H), zones); // Nepal
  ok(at(-3.5 * H - 4 * MIN), zones); // Newfoundland
  ok(at(14 * H), zones); // Kiribati
  ok(at(-12 * H), zones);
  refused(at(8 * H + 7 * MIN), zones); // not near a time-zone offset
  refused(at(14 * H + 6 * MIN), zones); // beyond the easternmost zone
  refused(at(-12 * H - 6 * MIN), zones);
  refused(at(3 * 24 * H), zones); // a replay days later
});

test('a skew of 0 turns the clock check off (RocketMQ checks none); the format is still checked', () => {
  const off = { skewMs: 0, timeZoneOffsets: false };
  ok(at(-400 * 24 * H), off);
  refused('2025-06-15', off);
});

test('the refusal says how far off the clock is', () => {
  assert.throws(
    () => checkDateTime(at(-20 * MIN), NOW, strict),
    (e: unknown) => isVelaError(e) && /20 min behind the broker's clock/.test(e.message),
  );
});
