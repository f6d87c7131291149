/**
 * How a Remoting send's properties become a delivery time or a transaction, as RocketMQ's broker reads
 * them: delay levels clamped to 18, timer properties in RocketMQ's order of precedence, bad values refused.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { isVelaError } from '../../src/common/errors.js';
import {
  checkImmunityMsOf,
  delayLevelOf,
  deliveryTimeOf,
  isTransactionPrepared,
} from '../../src/remoting/special-sends.js';

const NOW = 1_700_000_000_000;

describe('Remoting delay and transaction properties', () => {
  test('delay levels: 1–18 map to RocketMQ delays; above 18 is clamped to 18 (2 h); 0 or below is none', () => {
    assert.equal(deliveryTimeOf({ DELAY: '1' }, NOW), NOW + 1000);
    assert.equal(deliveryTimeOf({ DELAY: '3' }, NOW), NOW + 10_000);
    assert.equal(deliveryTimeOf({ DELAY: '5' }, NOW), NOW + 60_000);
    assert.equal(deliveryTimeOf({ DELAY: '17' }, NOW), NOW + 3600_000);
    assert.equal(deliveryTimeOf({ DELAY: '18' }, NOW), NOW + 7200_000);
    assert.equal(deliveryTimeOf({ DELAY: '19' }, NOW), NOW + 7200_000);
    assert.equal(deliveryTimeOf({ DELAY: '1000' }, NOW), NOW + 7200_000);
    assert.equal(delayLevelOf({ DELAY: '99' }), 18);
    assert.equal(deliveryTimeOf({ DELAY: '0' }, NOW), undefined);
    assert.equal(deliveryTimeOf({ DELAY: '-2' }, NOW), undefined);
    assert.equal(deliveryTimeOf({}, NOW), undefined);
  });

  test('a delay level wins over timer properties', () => {
    assert.equal(deliveryTimeOf({ DELAY: '2', TIMER_DELIVER_MS: String(NOW + 60_000) }, NOW), NOW + 5000);
  });

  test('timer properties: TIMER_DELAY_SEC, then TIMER_DELAY_MS, then TIMER_DELIVER_MS; the past is now', () => {
    assert.equal(deliveryTimeOf({ TIMER_DELAY_SEC: '3', TIMER_DELAY_MS: '10' }, NOW), NOW + 3000);
    assert.equal(deliveryTimeOf({ TIMER_DELAY_MS: '1500', TIMER_DELIVER_MS: '5' }, NOW), NOW + 1500);
    assert.equal(deliveryTimeOf({ TIMER_DELIVER_MS: String(NOW + 42) }, NOW), NOW + 42);
    assert.equal(deliveryTimeOf({ TIMER_DELIVER_MS: String(NOW - 1) }, NOW), undefined);
    assert.equal(deliveryTimeOf({ TIMER_DELIVER_MS: String(NOW) }, NOW), undefined);
    assert.equal(deliveryTimeOf({ TIMER_DELAY_SEC: '0' }, NOW), undefined);
  });

  test('values that are not integers are refused with a clear error', () => {
    const bad: Record<string, string>[] = [
      { TIMER_DELAY_SEC: 'soon' },
      { TIMER_DELIVER_MS: '' },
      { TIMER_DELAY_MS: '1.5' },
    ];
    for (const props of bad) {
      assert.throws(
        () => deliveryTimeOf(props, NOW),
        (err: unknown) =>
          isVelaError(err) && err.kind === 'ILLEGAL_DELIVERY_TIME' && /not an integer/.test(err.message),
      );
    }
    assert.throws(
      () => deliveryTimeOf({ DELAY: 'x' }, NOW),
      (err: unknown) => isVelaError(err) && /delay level/.test(err.message),
    );
  });

  test('a prepared transaction message: TRAN_MSG=true or the TRANSACTION_PREPARED sysFlag', () => {
    assert.equal(isTransactionPrepared({ TRAN_MSG: 'true' }, 0), true);
    assert.equal(isTransactionPrepared({}, 0x4), true);
    assert.equal(isTransactionPrepared({}, 0x4 | 0x1), true);
    assert.equal(isTransactionPrepared({}, 0x8), false, 'a commit type is not a prepared message');
    assert.equal(isTransactionPrepared({ TRAN_MSG: 'false' }, 0), false);
    assert.equal(checkImmunityMsOf({ CHECK_IMMUNITY_TIME_IN_SECONDS: '60' }), 60_000);
    assert.equal(checkImmunityMsOf({}), undefined);
  });
});
