/**
 * The user and ACL store: mqadmin's semantics (createAcl adds or replaces per resource, deleteAcl
 * one entry or all, deleteUser takes the ACL along), its refusals, and durability as a state-journal
 * participant: replaying its records, or restoring its snapshot, rebuilds the same state.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthRegistry } from '../../src/broker/auth/auth-registry.js';
import type { StateJournal, StateRecord } from '../../src/broker/state-journal.js';
import { isVelaError } from '../../src/common/errors.js';

function registry(): { reg: AuthRegistry; records: StateRecord[] } {
  const records: StateRecord[] = [];
  const reg = new AuthRegistry();
  // Records go through JSON as they do on disk; like the journal, `commit` applies each once durable.
  reg.journal = {
    commit: async (...recs: StateRecord[]) => {
      for (const r of recs) records.push(JSON.parse(JSON.stringify(r)) as StateRecord);
      for (const r of recs) reg.apply(r);
    },
  } as unknown as StateJournal;
  return { reg, records };
}

const stateOf = (r: AuthRegistry) => ({
  users: r.listUsers().map((u) => ({ ...u, password: r.user(u.username)!.password })),
  acls: r.listAcls(),
});

test('createAcl adds entries and replaces the entry of the same resource; updateAcl is the same', async () => {
  const { reg } = registry();
  await reg.createUser('alice', 's1');
  await reg.upsertAcl({
    subject: 'User:alice',
    resources: ['Topic:a', 'Group:g'],
    actions: ['Pub'],
    decision: 'Allow',
  });
  await reg.upsertAcl({
    subject: 'user:alice',
    resources: ['topic:a'],
    actions: ['sub', 'SUB'],
    sourceIps: ['10.0.0.0/8'],
    decision: 'deny',
  });
  assert.deepEqual(reg.getAcl('User:alice').policies[0]!.entries, [
    { resource: 'Topic:a', actions: ['Sub'], sourceIps: ['10.0.0.0/8'], decision: 'Deny' },
    { resource: 'Group:g', actions: ['Pub'], sourceIps: [], decision: 'Allow' },
  ]);
});

test('deleteAcl removes one resource’s entry, or the whole ACL; deleteUser takes the ACL along', async () => {
  const { reg } = registry();
  await reg.createUser('bob', 's');
  await reg.upsertAcl({
    subject: 'User:bob',
    resources: ['Topic:a', 'Topic:b*'],
    actions: ['All'],
    decision: 'Allow',
  });
  await reg.deleteAcl('User:bob', 'Topic:b*');
  assert.deepEqual(
    reg.listAcls().map((a) => a.policies[0]!.entries.map((e) => e.resource)),
    [['Topic:a']],
  );
  await assert.rejects(reg.deleteAcl('User:bob', 'Topic:zzz'), (e: unknown) =>
    isVelaError(e, 'ACL_NOT_FOUND'),
  );
  await reg.deleteAcl('User:bob');
  assert.deepEqual(reg.getAcl('User:bob').policies, []);
  await assert.rejects(reg.deleteAcl('User:bob'), (e: unknown) => isVelaError(e, 'ACL_NOT_FOUND'));
  await reg.upsertAcl({ subject: 'User:bob', resources: ['*'], actions: ['Sub'], decision: 'Allow' });
  await reg.deleteUser('bob');
  assert.deepEqual(reg.listAcls(), []);
  await reg.createUser('bob', 's2');
  assert.deepEqual(reg.getAcl('User:bob').policies, [], 'a new user of the same name starts without rights');
});

test('refusals: duplicates, unknown users, malformed input', async () => {
  const { reg } = registry();
  await reg.createUser('carol', 'secret', 'super');
  assert.equal(reg.getUser('carol').userType, 'Super');
  const refused = (p: Promise<unknown>, kind: Parameters<typeof isVelaError>[1]) =>
    assert.rejects(p, (e: unknown) => isVelaError(e, kind));
  await refused(reg.createUser('carol', 'x'), 'ACL_USER_EXISTS');
  await refused(reg.createUser('bad/name', 'x'), 'ILLEGAL_ACL');
  await refused(reg.createUser('dave', ''), 'ILLEGAL_ACL');
  await refused(reg.createUser('dave', 'x\n'), 'ILLEGAL_ACL');
  await refused(reg.createUser('dave', 'x', 'Admin'), 'ILLEGAL_ACL');
  await refused(reg.updateUser('nobody', { password: 'x' }), 'ACL_USER_NOT_FOUND');
  await refused(reg.updateUser('carol', {}), 'ILLEGAL_ACL');
  await refused(reg.updateUser('carol', { userStatus: 'paused' }), 'ILLEGAL_ACL');
  const acl = { subject: 'User:carol', resources: ['Topic:a'], actions: ['Pub'], decision: 'Allow' };
  await refused(reg.upsertAcl({ ...acl, subject: 'User:nobody' }), 'ACL_USER_NOT_FOUND');
  await refused(reg.upsertAcl({ ...acl, subject: 'Group:carol' }), 'ILLEGAL_ACL');
  await refused(reg.upsertAcl({ ...acl, resources: [] }), 'ILLEGAL_ACL');
  await refused(reg.upsertAcl({ ...acl, actions: ['Any'] }), 'ILLEGAL_ACL');
  await refused(reg.upsertAcl({ ...acl, decision: 'Maybe' }), 'ILLEGAL_ACL');
  await refused(reg.upsertAcl({ ...acl, sourceIps: ['300.1.1.1'] }), 'ILLEGAL_ACL');
  await refused(reg.upsertAcl({ ...acl, resources: ['Queue:q'] }), 'ILLEGAL_ACL');
  assert.deepEqual(reg.listAcls(), [], 'nothing half-applied');
});

test('list filters: usernames containing the filter; subjects and resources containing theirs', async () => {
  const { reg } = registry();
  for (const u of ['app-orders', 'app-billing', 'ops']) await reg.createUser(u, 's');
  assert.deepEqual(
    reg.listUsers('app').map((u) => u.username),
    ['app-billing', 'app-orders'],
  );
  await reg.upsertAcl({
    subject: 'User:app-orders',
    resources: ['Topic:orders', 'Group:orders-g'],
    actions: ['Pub'],
    decision: 'Allow',
  });
  await reg.upsertAcl({ subject: 'User:ops', resources: ['*'], actions: ['All'], decision: 'Allow' });
  assert.deepEqual(
    reg.listAcls('app').map((a) => a.subject),
    ['User:app-orders'],
  );
  assert.deepEqual(
    reg.listAcls(undefined, 'Group').map((a) => [a.subject, a.policies[0]!.entries.map((e) => e.resource)]),
    [['User:app-orders', ['Group:orders-g']]],
  );
});

test('replaying the journal records or restoring the snapshot rebuilds the same state', async () => {
  const { reg, records } = registry();
  await reg.createUser('alice', 'a-secret');
  await reg.createUser('bob', 'b-secret', 'Super');
  await reg.upsertAcl({
    subject: 'User:alice',
    resources: ['Topic:t*', 'Group:g'],
    actions: ['Pub', 'Sub'],
    decision: 'Allow',
  });
  await reg.updateUser('alice', { password: 'a-secret-2', userStatus: 'disable' });
  await reg.deleteAcl('User:alice', 'Group:g');
  await reg.createUser('eve', 'e');
  await reg.upsertAcl({ subject: 'User:eve', resources: ['*'], actions: ['All'], decision: 'Deny' });
  await reg.deleteUser('eve');

  const replayed = new AuthRegistry();
  for (const r of records) assert.ok(replayed.apply(r), `a record of this participant: ${r.kind}`);
  assert.deepEqual(stateOf(replayed), stateOf(reg));
  assert.equal(
    replayed.apply({ kind: 'topicDeleted', name: 'T' }),
    false,
    'other participants’ records are left alone',
  );

  const restored = new AuthRegistry();
  restored.restore(JSON.parse(JSON.stringify(reg.snapshot())));
  assert.deepEqual(stateOf(restored), stateOf(reg));
  assert.equal(restored.user('alice')!.password, 'a-secret-2');
  assert.deepEqual(
    restored.entriesOf('alice').map((c) => c.pattern.key),
    ['Topic:t*'],
    'compiled entries follow the restored ACL',
  );
});
