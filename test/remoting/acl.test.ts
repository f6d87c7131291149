/**
 * Access control on the Remoting endpoint: requests signed as RocketMQ's AclClientRPCHook signs them
 * (AccessKey + Base64 HMAC-SHA1 over the sorted extField values and the body) are checked against
 * Vela's ACL 2.0 users and ACLs. The Java producer and push consumer with the right keys work; a
 * wrong secret, an unsigned request, a user without the right, or a normal user's admin request is
 * answered NO_PERMISSION and stores nothing.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { RequestCode, ResponseCode } from '../../src/remoting/codes.js';
import { signedContent } from '../../src/remoting/acl.js';
import type { RemotingCommand } from '../../src/remoting/frame.js';
import { startTestBroker, uniqueName, closeAll, use, type TestBroker } from '../support/harness.js';
import { tempDir } from '../helpers.js';
import { javaClasspath, runJava } from './client-programs.js';
import { RawRemotingClient } from './raw-client.js';

let b: TestBroker;
const home = tempDir('vela-acl-home-');
const ns = () => `127.0.0.1:${b.running.remotingPort}`;
const APP = { ak: 'orders-app', sk: 'app-secret' };
const ROOT = { ak: 'root', sk: 'root-secret' };
let topic: string;
let group: string;

before(async () => {
  await javaClasspath();
  b = use(await startTestBroker({ aclEnabled: true, aclInitUser: `${ROOT.ak}:${ROOT.sk}` }));
  topic = uniqueName('T');
  group = uniqueName('G');
  const broker = b.running.broker;
  await broker.topics.upsert(topic, { readQueueNums: 2, writeQueueNums: 2 });
  await broker.groups.upsert(group, {});
  await broker.acl.registry.createUser(APP.ak, APP.sk);
  await broker.acl.registry.upsertAcl({
    subject: `User:${APP.ak}`,
    resources: [`Topic:${topic}`, `Group:${group}`],
    actions: ['Pub', 'Sub'],
    decision: 'Allow',
  });
});
after(async () => {
  await closeAll();
  home.cleanup();
});

/** Sign a request the way AclClientRPCHook does. */
function signed(code: number, ext: Record<string, string>, who: { ak: string; sk: string }, body?: Buffer) {
  const extFields = { ...ext, AccessKey: who.ak };
  const cmd: RemotingCommand = {
    code,
    language: 'JAVA',
    version: 475,
    opaque: 0,
    flag: 0,
    extFields,
    ...(body ? { body } : {}),
  };
  const signature = createHmac('sha1', who.sk).update(signedContent(cmd)).digest('base64');
  return { ...extFields, Signature: signature };
}

const stored = () => [0, 1].reduce((n, q) => n + b.running.broker.queueState(topic, q).maxOffset, 0);

describe('Remoting credentials (AclClientRPCHook)', { concurrency: false }, () => {
  test('the signed content is the sorted extField values, then the body', () => {
    const cmd: RemotingCommand = {
      code: 10,
      language: 'JAVA',
      version: 475,
      opaque: 1,
      flag: 0,
      extFields: { b: '2', a: '1', AccessKey: 'ak', Signature: 'ignored', C: '3' },
      body: Buffer.from('body'),
    };
    // Java's TreeMap order (UTF-16 code units): AccessKey, C, a, b
    assert.equal(signedContent(cmd).toString(), 'ak312body');
    const old = { ...cmd, version: 399, extFields: { ...cmd.extFields, _UNIQUE_KEY_QUERY: 'true' } };
    assert.equal(signedContent(old).toString(), 'ak312body', 'left out by clients up to V4_9_3');
  });

  test('the Java producer and push consumer with the right keys work', async () => {
    const ev = await runJava(home.path, ['acl-send', ns(), topic, '3', APP.ak, APP.sk]);
    assert.deepEqual(
      ev.filter((e) => e.event === 'sent').map((e) => e.status),
      ['SEND_OK', 'SEND_OK', 'SEND_OK'],
    );
    assert.equal(stored(), 3);
    const got = await runJava(home.path, ['acl-consume', ns(), topic, group, '3', APP.ak, APP.sk]);
    assert.deepEqual(
      got
        .filter((e) => e.event === 'received')
        .map((e) => e.body)
        .sort(),
      ['signed 0', 'signed 1', 'signed 2'],
    );
  });

  test('a wrong secret key is refused (NO_PERMISSION) and nothing is stored', async () => {
    const before = stored();
    const ev = await runJava(home.path, ['acl-send', ns(), topic, '1', APP.ak, 'not-the-secret']);
    const refused = ev.find((e) => e.event === 'refused');
    assert.ok(refused, 'the send fails');
    // The client's first request, the route query, is refused: it reports no route.
    assert.match(refused.error as string, /No route info of this topic|CODE: 16/);
    assert.equal(ev.filter((e) => e.event === 'sent').length, 0);
    assert.equal(stored(), before);
  });

  test('a user without the right on a topic is refused', async () => {
    const other = uniqueName('T');
    await b.running.broker.topics.upsert(other, {});
    const ev = await runJava(home.path, ['acl-send', ns(), other, '1', APP.ak, APP.sk]);
    assert.ok(ev.find((e) => e.event === 'refused'));
    assert.equal(b.running.broker.queueState(other, 0).maxOffset, 0);
  });

  test('raw frames: unsigned, wrong signature, admin codes need a super user', async () => {
    const c = use(await RawRemotingClient.connect(b.running.remotingPort));
    const unsigned = await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic });
    assert.equal(unsigned.code, ResponseCode.NO_PERMISSION);
    assert.match(unsigned.remark ?? '', /not signed/);
    const route = await c.request(
      RequestCode.GET_ROUTEINFO_BY_TOPIC,
      signed(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic }, APP),
    );
    assert.equal(route.code, ResponseCode.SUCCESS);
    const tampered = {
      ...signed(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic }, APP),
      topic: uniqueName('T'),
    };
    assert.equal(
      (await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, tampered)).code,
      ResponseCode.NO_PERMISSION,
    );
    // An admin request (mqadmin topicList): a normal user is refused, a super user served.
    const asApp = await c.request(
      RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
      signed(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, APP),
    );
    assert.equal(asApp.code, ResponseCode.NO_PERMISSION);
    assert.match(asApp.remark ?? '', /not a super user/);
    const asRoot = await c.request(
      RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
      signed(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, ROOT),
    );
    assert.equal(asRoot.code, ResponseCode.SUCCESS);
    assert.match(asRoot.body?.toString() ?? '', new RegExp(topic));
    await c.close();
  });
});

test('with access control off, the Remoting endpoint serves unsigned requests', async () => {
  const open = use(await startTestBroker());
  const t = uniqueName('T');
  await open.running.broker.topics.upsert(t, {});
  const c = use(await RawRemotingClient.connect(open.running.remotingPort));
  assert.equal(
    (await c.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: t })).code,
    ResponseCode.SUCCESS,
  );
  await c.close();
});
