import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { AckBatcher, MAX_ACK_ENTRIES } from '../../src/client/ack-batcher.js';
import type { Connection } from '../../src/client/connection.js';
import { Timers } from '../../src/common/timers.js';

interface Sent {
  entries: readonly { receiptHandle: string }[];
  answer: () => void;
}

function setup() {
  const sent: Sent[] = [];
  const timers = new Timers();
  const batcher = new AckBatcher(timers, (_conn, _group, _topic, entries) => {
    return new Promise((resolve) => {
      sent.push({
        entries,
        answer: () =>
          resolve({
            status: { code: 20000, message: 'OK' },
            entries: entries.map(() => ({ status: { code: 20000, message: 'OK' } })),
          }),
      });
    });
  });
  const conn = { key: 'broker-1' } as Connection;
  const ack = (h: string) => batcher.ack(conn, { name: 'G' }, { name: 'T' }, `id-${h}`, h);
  return { sent, ack, timers, batcher };
}

test('acks of one turn go out as one AckMessage', async () => {
  const { sent, ack, timers } = setup();
  const done = Array.from({ length: 10 }, (_, i) => ack(`h${i}`));
  await nextTurn();
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.entries.length, 10);
  sent[0]!.answer();
  await Promise.all(done);
  timers.clear();
});

test('while an AckMessage is in flight, acks of later turns gather into the next one', async () => {
  const { sent, ack, timers } = setup();
  const first = Array.from({ length: 5 }, (_, i) => ack(`a${i}`));
  await nextTurn();
  assert.equal(sent.length, 1);
  const later: Promise<void>[] = [];
  for (let turn = 0; turn < 4; turn++) {
    for (let i = 0; i < 5; i++) later.push(ack(`b${turn}-${i}`));
    await nextTurn();
  }
  assert.equal(sent.length, 1, 'nothing more sent while the first is unanswered');
  sent[0]!.answer();
  await Promise.all(first);
  await nextTurn();
  assert.equal(sent.length, 2);
  assert.equal(sent[1]!.entries.length, 20, 'the four turns in one AckMessage');
  sent[1]!.answer();
  await Promise.all(later);
  timers.clear();
});

test('a full batch goes at once even while another is in flight', async () => {
  const { sent, ack, timers } = setup();
  const first = ack('x');
  await nextTurn();
  const many = Array.from({ length: MAX_ACK_ENTRIES }, (_, i) => ack(`m${i}`));
  assert.equal(sent.length, 2, 'the last ack of a full batch sent it');
  assert.equal(sent[1]!.entries.length, MAX_ACK_ENTRIES);
  for (const s of sent) s.answer();
  await Promise.all([first, ...many]);
  timers.clear();
});

test('drain sends what waits behind an AckMessage in flight and waits for both', async () => {
  const { sent, ack, batcher, timers } = setup();
  void ack('p');
  await nextTurn();
  void ack('q');
  const drained = batcher.drain();
  assert.equal(sent.length, 2);
  let finished = false;
  void drained.then(() => (finished = true));
  sent[0]!.answer();
  await nextTurn();
  assert.equal(finished, false);
  sent[1]!.answer();
  await drained;
  timers.clear();
});

test("idle acks go out with the connection's next write of the turn, once", async () => {
  const sent: number[] = [];
  const timers = new Timers();
  const batcher = new AckBatcher(timers, (_conn, _group, _topic, entries) => {
    sent.push(entries.length);
    return Promise.resolve({
      status: { code: 20000, message: 'OK' },
      entries: entries.map(() => ({ status: { code: 20000, message: 'OK' } })),
    });
  });
  const hooks: (() => void)[] = [];
  const conn = { key: 'broker-1', beforeFlush: (fn: () => void) => hooks.push(fn) } as unknown as Connection;
  const done = [1, 2, 3].map((i) => batcher.ack(conn, { name: 'G' }, { name: 'T' }, `id-${i}`, `h${i}`));
  assert.equal(hooks.length, 1, 'one hook for the turn');
  assert.deepEqual(sent, [], 'nothing sent before the connection writes');
  hooks[0]!(); // the connection flushes what else this turn queued (a receive)
  assert.deepEqual(sent, [3], 'the acks joined that write');
  await Promise.all(done);
  await nextTurn();
  assert.deepEqual(sent, [3], 'not sent again at the end of the turn');
  // A turn in which the connection writes nothing else: the acks go at the end of the turn, and the
  // hook left behind does nothing when the connection next writes.
  const later = batcher.ack(conn, { name: 'G' }, { name: 'T' }, 'id-4', 'h4');
  await nextTurn();
  assert.deepEqual(sent, [3, 1]);
  await later;
  hooks[1]!();
  assert.deepEqual(sent, [3, 1]);
  timers.clear();
});
