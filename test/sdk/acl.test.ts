/**
 * Access control through the SDK: a broker with ACL on, users and ACLs managed through Admin (a
 * super user's credentials; none or a normal user's are refused), and Producer / SimpleConsumer /
 * PushConsumer signing with a normal user's keys: allowed resources work, a wrong secret or no
 * credentials get UNAUTHORIZED, resources outside the user's rights FORBIDDEN, and a change of the
 * ACL applies to the next request.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Admin,
  ConsumeResult,
  Producer,
  PushConsumer,
  SimpleConsumer,
  VelaClientError,
  type MessageView,
} from '../../src/index.js';
import { startTestBroker, unique, use, closeAll, waitFor, type TestBroker } from './support.js';

const SUPER = { accessKey: 'root', secretKey: 'root-secret-0123' };
const ALICE = { accessKey: 'alice', accessSecret: 'alice-secret-4567' };
const UNAUTHORIZED = 40100;
const FORBIDDEN = 40300;

const refusedWith = (code: number) => (e: unknown) => {
  assert.ok(e instanceof VelaClientError, String(e));
  assert.equal(e.code, code, e.message);
  return true;
};

describe('ACL through the SDK', { concurrency: true }, () => {
  let b: TestBroker;
  let admin: Admin;
  let ns: string;
  before(async () => {
    b = await startTestBroker({ aclEnabled: true, aclInitUser: `${SUPER.accessKey}:${SUPER.secretKey}` });
    admin = new Admin({ url: b.adminUrl, credentials: SUPER });
    ns = unique('acl');
    await admin.createUser(ALICE.accessKey, ALICE.accessSecret);
    await admin.createAcl({
      subject: 'User:alice',
      resources: [`Topic:${ns}_*`, `Group:${ns}_G*`],
      actions: ['Pub', 'Sub'],
      decision: 'Allow',
    });
    await admin.createAcl({
      subject: 'User:alice',
      resources: [`Topic:${ns}_readonly`],
      actions: ['Pub'],
      decision: 'Deny',
    });
  });
  after(async () => {
    await closeAll();
    await b.close();
  });

  async function topicAndGroup(suffix = ''): Promise<{ topic: string; group: string }> {
    const topic = `${ns}_${unique('T')}${suffix}`;
    const group = `${ns}_G${unique('')}`;
    await admin.createTopic(topic);
    await admin.createGroup(group, { retryMaxTimes: 1 });
    return { topic, group };
  }

  test('the admin API needs a super user', async () => {
    const anonymous = new Admin({ url: b.adminUrl });
    await assert.rejects(anonymous.listTopics(), refusedWith(UNAUTHORIZED));
    const wrong = new Admin({ url: b.adminUrl, credentials: { ...SUPER, secretKey: 'nope' } });
    await assert.rejects(wrong.listUser(), refusedWith(UNAUTHORIZED));
    const normal = new Admin({
      url: b.adminUrl,
      credentials: { accessKey: ALICE.accessKey, secretKey: ALICE.accessSecret },
    });
    await assert.rejects(normal.listUser(), refusedWith(FORBIDDEN));
    const health = await fetch(`${b.adminUrl}/healthz`);
    assert.equal(health.status, 200, '/healthz stays open');
    assert.ok((await admin.listTopics()).length >= 0);
    const info = (await admin.brokerInfo()).acl as { enabled: boolean; users: number };
    assert.equal(info.enabled, true);
    assert.ok(info.users >= 2, 'root and alice at least');
  });

  test('users are listed without their secret keys', async () => {
    const users = await admin.listUser();
    assert.ok(users.some((u) => u.username === 'alice'));
    assert.deepEqual(
      users.find((u) => u.username === 'root'),
      {
        username: 'root',
        userType: 'Super',
        userStatus: 'enable',
      },
    );
    const text = JSON.stringify([users, await admin.getUser('alice'), await admin.listAcl()]);
    assert.ok(!text.includes(ALICE.accessSecret) && !text.includes(SUPER.secretKey), 'no secret in any view');
  });

  test('a producer signing with the user’s keys sends to its topics', async () => {
    const { topic } = await topicAndGroup();
    const p = use(new Producer({ endpoints: b.endpoints, credentials: ALICE, topics: [topic] }));
    await p.start();
    const r = await p.send({ topic, body: 'signed' });
    assert.ok(r.messageId);
    await p.close();
  });

  test('a wrong secret or no credentials: UNAUTHORIZED', async () => {
    const { topic } = await topicAndGroup();
    const wrong = use(
      new Producer({
        endpoints: b.endpoints,
        credentials: { ...ALICE, accessSecret: 'wrong' },
        maxAttempts: 1,
      }),
    );
    await assert.rejects(wrong.send({ topic, body: 'x' }), refusedWith(UNAUTHORIZED));
    await wrong.close();
    const none = use(new Producer({ endpoints: b.endpoints, maxAttempts: 1 }));
    await assert.rejects(none.send({ topic, body: 'x' }), refusedWith(UNAUTHORIZED));
    await none.close();
    const unknown = use(
      new Producer({ endpoints: b.endpoints, credentials: { accessKey: 'mallory', accessSecret: 'x' } }),
    );
    await assert.rejects(unknown.send({ topic, body: 'x' }), refusedWith(UNAUTHORIZED));
    await unknown.close();
  });

  test('a topic outside the user’s rights, or denied to it: FORBIDDEN', async () => {
    const other = unique('OtherT');
    await admin.createTopic(other);
    const readonly = `${ns}_readonly`;
    await admin.createTopic(readonly);
    const p = use(new Producer({ endpoints: b.endpoints, credentials: ALICE, maxAttempts: 1 }));
    await assert.rejects(p.send({ topic: other, body: 'x' }), refusedWith(FORBIDDEN));
    await assert.rejects(p.send({ topic: readonly, body: 'x' }), refusedWith(FORBIDDEN));
    assert.equal(
      (await admin.topicStatus(readonly)).reduce((n, q) => n + q.maxOffset, 0),
      0,
      'nothing stored',
    );
    await p.close();
  });

  test('a simple consumer receives and acks with Sub on the group and topic; another group is FORBIDDEN', async () => {
    const { topic, group } = await topicAndGroup();
    const p = use(new Producer({ endpoints: b.endpoints, credentials: ALICE }));
    await p.send({ topic, body: 'one' });
    const c = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        credentials: ALICE,
        group,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 300,
      }),
    );
    await c.start();
    const got: MessageView[] = [];
    await waitFor(async () => {
      got.push(...(await c.receive(1, 5000)));
      return got.length === 1;
    });
    await c.ack(got[0]!);
    await c.close();

    const foreignGroup = unique('ForeignG');
    await admin.createGroup(foreignGroup);
    const f = use(
      new SimpleConsumer({
        endpoints: b.endpoints,
        credentials: ALICE,
        group: foreignGroup,
        subscriptions: { [topic]: '*' },
        awaitDurationMs: 300,
      }),
    );
    await assert.rejects(f.start(), refusedWith(FORBIDDEN));
    await p.close();
  });

  test('a push consumer consumes with the user’s keys', async () => {
    const { topic, group } = await topicAndGroup();
    const p = use(new Producer({ endpoints: b.endpoints, credentials: ALICE }));
    const got: string[] = [];
    const c = use(
      new PushConsumer({
        endpoints: b.endpoints,
        credentials: ALICE,
        group,
        subscriptions: { [topic]: '*' },
        listener: (m) => {
          got.push(m.text());
          return ConsumeResult.SUCCESS;
        },
      }),
    );
    await c.start();
    await p.send({ topic, body: 'pushed' });
    await waitFor(() => got.length === 1, { timeoutMs: 10_000, what: 'the pushed message' });
    await c.close();
    await p.close();
  });

  test('ACL changes apply to the next request; deleting the user locks it out', async () => {
    const { topic } = await topicAndGroup();
    const bob = { accessKey: unique('bob').replace(/_/g, '-'), accessSecret: 'bob-secret' };
    await admin.createUser(bob.accessKey, bob.accessSecret);
    const p = use(new Producer({ endpoints: b.endpoints, credentials: bob, maxAttempts: 1 }));
    await assert.rejects(p.send({ topic, body: 'x' }), refusedWith(FORBIDDEN), 'no ACL yet');
    await admin.createAcl({
      subject: `User:${bob.accessKey}`,
      resources: [`Topic:${topic}`],
      actions: ['Pub'],
      decision: 'Allow',
    });
    await p.send({ topic, body: 'now allowed' });
    await admin.updateUser(bob.accessKey, { userStatus: 'disable' });
    await assert.rejects(p.send({ topic, body: 'x' }), refusedWith(UNAUTHORIZED), 'disabled');
    await admin.updateUser(bob.accessKey, { userStatus: 'enable', password: 'bob-secret-2' });
    await assert.rejects(p.send({ topic, body: 'x' }), refusedWith(UNAUTHORIZED), 'old secret');
    await admin.deleteUser(bob.accessKey);
    await assert.rejects(admin.getAcl(`User:${bob.accessKey}`), refusedWith(40400), 'ACL gone with the user');
    await p.close();
  });
});
