/** The store's queue table: found by key and by (topic, queue id), the two always agreeing. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { QueueTable } from '../../src/store/queue-table.js';
import type { QueueIndex } from '../../src/store/queue-index.js';
import { queueKey } from '../../src/store/store-types.js';

const queue = (topic: string, queueId: number) => ({ topic, queueId }) as unknown as QueueIndex;
const put = (t: QueueTable, q: QueueIndex) => t.set(queueKey(q.topic, q.queueId), q);

test('a queue is found by (topic, queue id) exactly when it is found by its key', () => {
  const t = new QueueTable();
  const a0 = queue('A', 0);
  const a7 = queue('A', 7);
  const b0 = queue('B', 0);
  for (const q of [a0, a7, b0]) put(t, q);
  assert.equal(t.at('A', 0), a0);
  assert.equal(t.at('A', 7), a7);
  assert.equal(t.at('B', 0), b0);
  assert.equal(t.at('A', 3), undefined, 'a hole between filed queues');
  assert.equal(t.at('A', 8), undefined);
  assert.equal(t.at('C', 0), undefined);
  assert.equal(t.size, 3);
  assert.deepEqual([...t.keys()].sort(), [queueKey('A', 0), queueKey('A', 7), queueKey('B', 0)].sort());

  assert.equal(t.delete(queueKey('A', 7)), true);
  assert.equal(t.at('A', 7), undefined);
  assert.equal(t.get(queueKey('A', 7)), undefined);
  assert.equal(t.at('A', 0), a0, "the topic's other queues stay");
  assert.equal(t.delete(queueKey('A', 7)), false);
  t.delete(queueKey('A', 0));
  assert.equal(t.at('A', 0), undefined);

  const again = queue('A', 0);
  put(t, again);
  assert.equal(t.at('A', 0), again, 'a topic created again');
  t.clear();
  assert.equal(t.at('A', 0), undefined);
  assert.equal(t.at('B', 0), undefined);
  assert.equal(t.size, 0);
});

test('a queue replaced under its key is the one found; ids outside the filed range go by key', () => {
  const t = new QueueTable();
  const first = queue('T', 2);
  const second = queue('T', 2);
  put(t, first);
  put(t, second);
  assert.equal(t.at('T', 2), second);
  assert.equal(t.size, 1);
  for (const id of [-1, 1 << 16, 2 ** 31]) {
    const odd = queue('T', id);
    put(t, odd);
    assert.equal(t.at('T', id), odd, `queue id ${id}`);
    t.delete(queueKey('T', id));
    assert.equal(t.at('T', id), undefined, `queue id ${id} deleted`);
  }
  assert.equal(t.at('T', 2), second);
});
