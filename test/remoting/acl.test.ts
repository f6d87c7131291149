/**
 * Access control and the Remoting endpoint: it does not verify Remoting credentials (AccessKey and
 * Signature fields), so with access control on it fails closed: every request, signed or not, is
 * answered NO_PERMISSION and nothing is stored, while the gRPC port keeps checking signatures.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { RequestCode, ResponseCode } from '../../src/remoting/codes.js';
import { startTestBroker, uniqueName, closeAll, use } from '../support/harness.js';
import { RawRemotingClient } from './raw-client.js';

after(closeAll);

test('with access control on, every Remoting request is refused with NO_PERMISSION', async () => {
  const b = use(await startTestBroker({ aclEnabled: true, aclInitUser: 'root:root-secret' }));
  const topic = uniqueName('T');
  await b.running.broker.topics.upsert(topic, {});
  const c = use(await RawRemotingClient.connect(b.running.remotingPort));
  const route = await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic });
  assert.equal(route.code, ResponseCode.NO_PERMISSION);
  assert.match(route.remark ?? '', /does not check credentials/);
  // A request carrying ACL fields (as AclClientRPCHook adds them) is refused too: they are not verified.
  const send = await c.request(
    RequestCode.SEND_MESSAGE_V2,
    {
      a: 'P',
      b: topic,
      c: 'TBW102',
      d: 4,
      e: 0,
      f: 0,
      g: Date.now(),
      h: 0,
      AccessKey: 'root',
      Signature: 'x',
    },
    Buffer.from('x'),
  );
  assert.equal(send.code, ResponseCode.NO_PERMISSION);
  assert.equal(b.running.broker.queueState(topic, 0).maxOffset, 0, 'nothing stored');
});

test('with access control off, the Remoting endpoint serves as before', async () => {
  const b = use(await startTestBroker());
  const topic = uniqueName('T');
  await b.running.broker.topics.upsert(topic, {});
  const c = use(await RawRemotingClient.connect(b.running.remotingPort));
  assert.equal((await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic })).code, ResponseCode.SUCCESS);
});
