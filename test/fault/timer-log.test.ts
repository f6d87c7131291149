/**
 * While the schedule index is read-only after a failed fsync, the timer keeps trying (every second)
 * and keeps failing until a restart: that is logged once when it starts and once, with a count, when
 * the broker stops, not once per try.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { captureLogger, tempDir } from '../helpers.js';
import { NodeFaults } from './node-faults.js';

test('a read-only schedule index is logged once per change of state, with a count, not per tick', async () => {
  const dir = tempDir();
  const faults = await new NodeFaults(dir.path).install();
  const { logger, lines } = captureLogger();
  const clock = new ManualClock(Date.now());
  const broker = await Broker.open({ dataDir: dir.path }, { logger, clock });
  try {
    await broker.topics.upsert('LogD', { attributes: { 'message.type': 'DELAY' } });
    const [r] = await broker.produce.send([
      {
        topic: 'LogD',
        messageId: 'M-log',
        body: Buffer.from('later'),
        deliveryTimestamp: clock.now() + 60_000,
      },
    ]);
    assert.ok(r && !(r instanceof Error), 'scheduled');
    faults.fail({ ops: ['fdatasync'], path: /\.slab$/, code: 'EIO' });
    for (let i = 0; i < 6; i++) await broker.timer.checkpoint();
    assert.ok(
      lines.some((l) => l.level === 60 && /READ-ONLY/.test(l.msg)),
      'the index went read-only (logged once, fatal)',
    );
    const failedLines = lines.filter((l) => /checkpoint failed/.test(l.msg));
    assert.equal(failedLines.length, 1, `six failed checkpoints, one line: ${JSON.stringify(failedLines)}`);
  } finally {
    faults.clear();
    await broker.close().catch(() => {});
    faults.uninstall();
    dir.cleanup();
  }
  const summary = lines.filter((l) =>
    /checkpoint failed \d+ tries in a row until the timer stopped/.test(l.msg),
  );
  assert.equal(summary.length, 1, 'one line with the count when the broker stops');
  assert.ok((summary[0]!.failures as number) >= 6);
});
