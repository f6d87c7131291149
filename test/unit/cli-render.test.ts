/**
 * Every line `vela admin` renders escapes control characters, in the single-record layouts and the
 * warnings too: names kept from before today's name rules, or any text a future field carries.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderConsumerProgress, renderGroupConfig, renderTopicConfig } from '../../src/admin/cli/render.js';

const ESC = '\u001b';
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

test('topic and group configs and consumer-progress warnings are printed with control characters escaped', () => {
  const topic = renderTopicConfig({
    topic: `T${ESC}[2J`,
    readQueueNums: 1,
    writeQueueNums: 1,
    perm: 6,
    messageType: `NORMAL\r`,
    attributes: { k: `v${ESC}]0;x\u0007` },
  } as Parameters<typeof renderTopicConfig>[0]);
  assert.doesNotMatch(topic.replace(/\n$/, ''), CONTROL);
  assert.match(topic, /T\\x1b\[2J/);
  const group = renderGroupConfig({
    group: `G${ESC}[31m`,
    consumeEnable: true,
    consumeBroadcastEnable: true,
    consumeMessageOrderly: false,
    retryMaxTimes: 16,
    groupRetryPolicy: {},
    fifoRetryIntervalMs: 1000,
  } as Parameters<typeof renderGroupConfig>[0]);
  assert.doesNotMatch(group.replace(/\n$/, ''), CONTROL);
  const progress = renderConsumerProgress({
    group: 'G',
    queues: [],
    totalLag: 0,
    inflight: 0,
    waitingRetry: 0,
    deadLettered: 0,
    warnings: [`client ${ESC}[2Jevil\rFAKE`],
  } as Parameters<typeof renderConsumerProgress>[0]);
  for (const line of progress.split('\n')) assert.doesNotMatch(line, CONTROL);
});
