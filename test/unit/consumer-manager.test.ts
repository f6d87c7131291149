import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { ConsumerManager } from '../../src/broker/consumer-manager.js';
import { QueueLocks } from '../../src/broker/queue-locks.js';
import {
  levelForDelay,
  DELAY_LEVELS_MS,
  groupOfRetryTopic,
  groupRetryTopic,
} from '../../src/broker/send-back.js';
import { ManualClock } from '../../src/common/clock.js';

const reg = (clientId: string, channel: string, expression = '*', messageModel = 'CLUSTERING') => ({
  clientId,
  group: 'G',
  channel,
  messageModel,
  subscriptions: [{ topic: 'T', expression }],
});

describe('ConsumerManager', () => {
  test('announces joins, subscription changes, leaves and closed channels, not plain refreshes', () => {
    const clock = new ManualClock(1000);
    const m = new ConsumerManager(() => clock.now(), 60_000);
    const events: string[][] = [];
    m.onChange((_g, clients) => events.push(clients.map((c) => c.clientId)));
    assert.equal(m.register(reg('b', 'ch1')), true);
    assert.equal(m.register(reg('b', 'ch1')), false, 'a refresh');
    assert.equal(m.register(reg('a', 'ch2')), true);
    assert.equal(m.register(reg('a', 'ch2', 'X||Y')), true, 'new subscription');
    assert.deepEqual(m.clusteringIds('G'), ['a', 'b']);
    assert.equal(m.subscription('G', 'T')?.filter.matches('X'), true);
    m.channelClosed('ch2');
    m.unregister('G', 'b');
    assert.deepEqual(events, [['b'], ['a', 'b'], ['a', 'b'], ['b'], []]);
    assert.deepEqual(m.groupNames(), []);
  });

  test('broadcasting clients do not share queues; silent clients expire', () => {
    const clock = new ManualClock(0);
    const m = new ConsumerManager(() => clock.now(), 120_000);
    m.register(reg('a', 'ch1'));
    m.register(reg('z', 'ch2', '*', 'BROADCASTING'));
    assert.deepEqual(m.clusteringIds('G'), ['a']);
    assert.deepEqual(m.groupsOfTopic('T'), ['G']);
    clock.advance(60_000);
    m.register(reg('a', 'ch1'));
    clock.advance(70_000);
    assert.equal(m.sweep(), 1);
    assert.deepEqual(
      m.clients('G').map((c) => c.clientId),
      ['a'],
    );
  });

  test('SQL92 subscriptions are refused', () => {
    const m = new ConsumerManager(() => 0);
    assert.throws(
      () =>
        m.register({
          ...reg('a', 'c'),
          subscriptions: [{ topic: 'T', expression: 'a>1', expressionType: 'SQL92' }],
        }),
      /SQL92 filters are not supported/,
    );
  });
});

describe('QueueLocks', () => {
  test('one holder per queue until it unlocks or its lock lapses', () => {
    const clock = new ManualClock(0);
    const l = new QueueLocks(() => clock.now(), 60_000);
    const qs = [
      { topic: 'T', queueId: 0 },
      { topic: 'T', queueId: 1 },
    ];
    assert.equal(l.tryLock('G', 'a', qs).length, 2);
    assert.equal(l.tryLock('G', 'b', qs).length, 0);
    assert.equal(l.tryLock('H', 'b', qs).length, 2, 'locks are per group');
    l.unlock('G', 'b', qs); // not b's: nothing happens
    assert.equal(l.holder('G', 'T', 0), 'a');
    l.unlock('G', 'a', [qs[0]!]);
    assert.deepEqual(l.tryLock('G', 'b', qs), [qs[0]]);
    clock.advance(60_001);
    assert.equal(l.holder('G', 'T', 1), undefined);
    assert.equal(l.tryLock('G', 'b', qs).length, 2, 'a lapsed lock can be taken');
    l.releaseClient('b');
    assert.equal(l.hasLocks('G'), false);
  });
});

describe('delay levels', () => {
  test('a delay rounds up to the next of RocketMQ 18 levels', () => {
    assert.equal(DELAY_LEVELS_MS.length, 18);
    assert.equal(levelForDelay(0), 1);
    assert.equal(levelForDelay(1000), 1);
    assert.equal(levelForDelay(1001), 2);
    assert.equal(levelForDelay(10_000), 3);
    assert.equal(levelForDelay(2 * 3600_000), 18);
    assert.equal(levelForDelay(10 * 3600_000), 18);
    assert.equal(groupOfRetryTopic(groupRetryTopic('g_1')), 'g_1');
    assert.equal(groupOfRetryTopic('T'), undefined);
  });
});
