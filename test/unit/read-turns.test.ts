/** src/common/read-turns.ts: a socket gives at most its limit per event-loop turn, then waits for the next. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readTurns } from '../../src/common/read-turns.js';

function fakeSocket() {
  const log: string[] = [];
  return {
    log,
    destroyed: false,
    pause() {
      log.push('pause');
    },
    resume() {
      log.push('resume');
    },
  };
}

const nextTurn = () => new Promise((r) => setImmediate(r));

test('past the limit in one turn the socket pauses, and resumes in the next turn', async () => {
  const s = fakeSocket();
  const count = readTurns(s, 100);
  count(60);
  assert.deepEqual(s.log, []);
  count(60); // 120 ≥ 100
  count(60); // read ahead before the pause took hold: no second pause
  assert.deepEqual(s.log, ['pause']);
  await nextTurn();
  assert.deepEqual(s.log, ['pause', 'resume']);
  // A new turn starts from zero.
  count(99);
  await nextTurn();
  count(99);
  await nextTurn();
  assert.deepEqual(s.log, ['pause', 'resume'], 'under the limit in each turn: never paused');
});

test('a socket destroyed while paused is not resumed', async () => {
  const s = fakeSocket();
  const count = readTurns(s, 10);
  count(10);
  s.destroyed = true;
  await nextTurn();
  assert.deepEqual(s.log, ['pause']);
});
