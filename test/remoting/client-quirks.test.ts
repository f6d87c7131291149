/**
 * rocketmq-client-go sends UPDATE_CONSUMER_OFFSET and END_TRANSACTION without the one-way flag and
 * never reads the answers: from a Go client they are processed and not answered (an unread answer
 * turns the client's close at shutdown into a reset that loses its last offsets); from other
 * clients they are answered as before.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { RequestCode, ResponseCode } from '../../src/remoting/codes.js';
import { encodeFrame } from '../../src/remoting/frame.js';
import { startTestBroker, uniqueName, closeAll, use, waitFor } from '../support/harness.js';
import { RawRemotingClient } from './raw-client.js';

after(closeAll);

test("a Go client's UPDATE_CONSUMER_OFFSET is committed and not answered; a Java client's is answered", async () => {
  const b = use(await startTestBroker());
  const topic = uniqueName('T');
  const group = uniqueName('G');
  await b.running.broker.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
  await b.running.broker.groups.upsert(group, {});
  const c = use(await RawRemotingClient.connect(b.running.remotingPort));
  c.writeRaw(
    encodeFrame({
      code: RequestCode.UPDATE_CONSUMER_OFFSET,
      language: 'GO',
      version: 317,
      opaque: 9001,
      flag: 0,
      extFields: { consumerGroup: group, topic, queueId: '0', commitOffset: '7' },
    }),
  );
  await waitFor(() => b.running.broker.offsets.get(group, topic, 0)?.offset === 7);
  const java = await c.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
    consumerGroup: group,
    topic,
    queueId: 0,
    commitOffset: 8,
  });
  assert.equal(java.code, ResponseCode.SUCCESS);
  assert.equal(b.running.broker.offsets.get(group, topic, 0)?.offset, 8);
  // Everything the broker sent on this connection: the Java answer only, none for opaque 9001.
  assert.equal(c.answers.has(9001), false);
  await c.close();
});
