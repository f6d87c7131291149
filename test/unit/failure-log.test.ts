/** The timer's failure log: once per change of state, with a count, never once per try. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FailureLog } from '../../src/broker/timer/failure-log.js';
import { VelaError } from '../../src/common/errors.js';
import { captureLogger } from '../helpers.js';

test('a failure repeated every tick is logged once, then once with its count when it clears', () => {
  const { logger, lines } = captureLogger();
  let now = 1000;
  const log = new FailureLog(logger, 'preparing delay messages', () => now);
  const readOnly = () => new VelaError('STORE_IO_ERROR', 'the schedule index is read-only');
  for (let i = 0; i < 50; i++) {
    log.failed(readOnly(), 1000);
    now += 1000;
  }
  assert.equal(lines.length, 1, 'one line for fifty failures');
  assert.equal(lines[0]!.level, 50);
  assert.match(lines[0]!.msg, /preparing delay messages failed; trying again every 1000 ms/);
  assert.equal(log.repeats, 50);
  log.succeeded();
  log.succeeded();
  assert.equal(lines.length, 2, 'one line when it clears, none for later successes');
  assert.equal(lines[1]!.level, 30);
  assert.match(lines[1]!.msg, /works again after 50 failed tries/);
  assert.equal(lines[1]!.failures, 50);
  assert.equal(lines[1]!.forMs, 50_000);
  assert.equal(log.repeats, 0);
});

test('a different failure is a change of state: the old one is summed up, the new one logged', () => {
  const { logger, lines } = captureLogger();
  const log = new FailureLog(logger, 'the timer checkpoint', () => 0);
  const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  log.failed(full);
  log.failed(Object.assign(new Error('ENOSPC: no space left on device, fdatasync'), { code: 'ENOSPC' }));
  log.failed(new VelaError('STORE_IO_ERROR', 'read-only'));
  log.failed(new VelaError('STORE_IO_ERROR', 'read-only'));
  log.close();
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg]),
    [
      [50, 'the timer checkpoint failed (repeats of this failure are counted, not logged)'],
      [40, 'the timer checkpoint failed 2 tries in a row before failing differently'],
      [50, 'the timer checkpoint failed (repeats of this failure are counted, not logged)'],
      [40, 'the timer checkpoint failed 2 tries in a row until the timer stopped'],
    ],
  );
});

test('a single failure that clears at once says so; nothing is logged when nothing failed', () => {
  const { logger, lines } = captureLogger();
  const log = new FailureLog(logger, 'delivering delay messages', () => 0);
  log.succeeded();
  log.close();
  assert.equal(lines.length, 0);
  log.failed(new Error('boom'));
  log.close();
  assert.equal(lines.length, 1, 'one failure, closed: nothing more to say');
});
