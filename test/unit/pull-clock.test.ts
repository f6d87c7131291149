/** Pull long polling measures its wait on the broker's clock, not the system's. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Broker } from '../../src/broker/broker.js';
import { parseFilter } from '../../src/broker/filter.js';
import { ManualClock } from '../../src/common/clock.js';
import { sleep, tempDir } from '../helpers.js';

test('a long poll ends when the injected clock says its time is up', async () => {
  const dir = tempDir('vela-pull-clock-');
  const clock = new ManualClock(1_700_000_000_000);
  const broker = await Broker.open({ dataDir: dir.path }, { clock });
  try {
    await broker.topics.upsert('PC', { readQueueNums: 1, writeQueueNums: 1 });
    await broker.groups.upsert('PCG', {});
    let done = false;
    const pulling = broker.pull
      .pull({
        group: 'PCG',
        topic: 'PC',
        queueId: 0,
        offset: 0,
        filter: parseFilter('TAG', '*'),
        pollMs: 50,
        clientId: 'c',
      })
      .finally(() => (done = true));
    await sleep(200);
    assert.equal(done, false, 'no time has passed on the broker clock');
    clock.advance(50);
    const r = await pulling;
    assert.equal(r.status, 'NO_NEW_MESSAGE');
  } finally {
    await broker.close();
    dir.cleanup();
  }
});
