/**
 * Authentication decisions of AccessControl: a valid signature proves the user; the same header
 * stops working once the secret key changes or the user is disabled or deleted (verified signatures
 * are remembered briefly, never across a change of key); an unknown user and a wrong secret get the
 * same answer; super users skip the ACL, normal users need an entry.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AccessControl } from '../../src/broker/auth/access-control.js';
import { AuthRegistry } from '../../src/broker/auth/auth-registry.js';
import type { StateJournal, StateRecord } from '../../src/broker/state-journal.js';
import { signRequest } from '../../src/common/signature.js';
import { silentLogger } from '../../src/common/logger.js';
import { isVelaError } from '../../src/common/errors.js';

async function setup() {
  const registry = new AuthRegistry();
  registry.journal = {
    commit: async (...recs: StateRecord[]) => void recs.forEach((r) => registry.apply(r)),
  } as unknown as StateJournal;
  await registry.createUser('alice', 'alice-secret');
  await registry.createUser('root', 'root-secret', 'Super');
  const acl = new AccessControl(
    registry,
    { enabled: true, clock: { skewMs: 60_000, timeZoneOffsets: false } },
    () => Date.now(),
    silentLogger(),
  );
  return { registry, acl };
}
const presented = (ak: string, sk: string) => {
  const s = signRequest(ak, sk);
  return { authorization: s.authorization, dateTime: s.dateTime };
};
const unauthorized = (re: RegExp) => (e: unknown) => isVelaError(e, 'ACL_UNAUTHORIZED') && re.test(e.message);

test('the same signed header stops working when the secret key changes', async () => {
  const { registry, acl } = await setup();
  const p = presented('alice', 'alice-secret');
  assert.deepEqual(acl.authenticate(p), { username: 'alice' });
  assert.deepEqual(acl.authenticate(p), { username: 'alice' }, 'again (remembered)');
  await registry.updateUser('alice', { password: 'new-secret' });
  assert.throws(() => acl.authenticate(p), unauthorized(/signature does not match/));
  assert.deepEqual(acl.authenticate(presented('alice', 'new-secret')), { username: 'alice' });
});

test('disabled or deleted users are refused, even with a principal from before', async () => {
  const { registry, acl } = await setup();
  const p = presented('alice', 'alice-secret');
  const principal = acl.authenticate(p);
  await registry.updateUser('alice', { userStatus: 'disable' });
  assert.throws(() => acl.authenticate(p), unauthorized(/disabled/));
  assert.throws(() => acl.authorize(principal, [], '127.0.0.1'), unauthorized(/disabled/));
  await registry.deleteUser('alice');
  assert.throws(() => acl.authorize(principal, [], '127.0.0.1'), unauthorized(/no longer exists/));
});

test('an unknown access key and a wrong secret get the same answer', async () => {
  const { acl } = await setup();
  const wrong = (() => {
    try {
      acl.authenticate(presented('alice', 'guess'));
    } catch (e) {
      return (e as Error).message.replace('alice', 'X');
    }
  })();
  const unknown = (() => {
    try {
      acl.authenticate(presented('mallory', 'guess'));
    } catch (e) {
      return (e as Error).message.replace('mallory', 'X');
    }
  })();
  assert.ok(wrong);
  assert.equal(wrong, unknown);
});

test('super users skip the ACL; normal users need an entry; requireSuper', async () => {
  const { registry, acl } = await setup();
  const topic = { type: 'Topic' as const, name: 't', actions: ['Pub' as const] };
  const root = acl.authenticate(presented('root', 'root-secret'));
  const alice = acl.authenticate(presented('alice', 'alice-secret'));
  acl.authorize(root, [topic], '10.0.0.1');
  acl.requireSuper(root);
  assert.throws(
    () => acl.authorize(alice, [topic], '10.0.0.1'),
    (e: unknown) => isVelaError(e, 'ACL_FORBIDDEN'),
  );
  assert.throws(
    () => acl.requireSuper(alice),
    (e: unknown) => isVelaError(e, 'ACL_FORBIDDEN'),
  );
  await registry.upsertAcl({
    subject: 'User:alice',
    resources: ['Topic:t'],
    actions: ['Pub'],
    decision: 'Allow',
  });
  acl.authorize(alice, [topic], '10.0.0.1');
});
