/**
 * User and ACL administration as operators do it: `vela admin createUser … listAcl` (mqadmin's
 * names and flags) as child processes against a broker with access control on, signed with a super
 * user's keys from the environment; no secret in any listing or log line; users and ACLs surviving a
 * restart.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startBroker, type RunningBroker } from '../../src/server.js';
import type { VelaClientError } from '../../src/index.js';
import { Admin, Producer } from '../../src/index.js';
import { captureLogger, tempDir } from '../helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SUPER = { accessKey: 'admin', secretKey: 'admin-Secret-1' };
const ALICE_SECRET = 'alice-Secret-2';

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `vela admin …` in a child process, with only the given VELA_* variables. */
function vela(args: string[], env: Record<string, string> = {}): Promise<Result> {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('VELA_')) base[k] = v;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'admin', ...args], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

describe('ACL administration', { timeout: 120_000 }, () => {
  const dir = tempDir('vela-acl-');
  const { logger, lines } = captureLogger();
  let running: RunningBroker;
  let addr: string;
  const open = () =>
    startBroker({
      dataDir: dir.path,
      grpcPort: 0,
      httpPort: 0,
      remotingPort: 0,
      aclEnabled: true,
      aclInitUser: `${SUPER.accessKey}:${SUPER.secretKey}`,
      logger,
    });
  const asSuper = (...args: string[]) =>
    vela([...args, '-n', addr], { VELA_ACCESS_KEY: SUPER.accessKey, VELA_SECRET_KEY: SUPER.secretKey });

  before(async () => {
    running = await open();
    addr = `127.0.0.1:${running.httpPort}`;
  });
  after(async () => {
    await running?.close();
    dir.cleanup();
  });

  test('vela admin manages users and ACLs with mqadmin’s commands, signed by a super user', async () => {
    const unsigned = await vela(['listUser', '-n', addr]);
    assert.equal(unsigned.code, 1, unsigned.stderr);
    assert.match(unsigned.stderr, /not signed.*code 40100/);

    const created = await asSuper('createUser', '-u', 'alice', '-p', ALICE_SECRET, '-c', 'DefaultCluster');
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /create user to .* success/);

    const [acl, bad, dup] = await Promise.all([
      asSuper(
        'createAcl',
        '-s',
        'User:alice',
        '-r',
        'Topic:orders,Topic:order-*,Group:G1',
        '-a',
        'Pub,Sub',
        '-i',
        '127.0.0.1,10.0.0.0/8',
        '-d',
        'Allow',
      ),
      asSuper('createAcl', '-s', 'User:alice', '-r', 'Topic:x', '-a', 'Publish', '-d', 'Allow'),
      asSuper('createUser', '-u', 'alice', '-p', 'other'),
    ]);
    assert.equal(acl.code, 0, acl.stderr);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /unknown action "Publish".*code 40000/);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /already exists/);

    const [users, getAcl, listAcl, asAlice] = await Promise.all([
      asSuper('listUser'),
      asSuper('getAcl', '-s', 'User:alice'),
      asSuper('listAcl', '-r', 'order', '--json'),
      vela(['listUser', '-n', addr], { VELA_ACCESS_KEY: 'alice', VELA_SECRET_KEY: ALICE_SECRET }),
    ]);
    assert.equal(users.code, 0, users.stderr);
    assert.match(users.stdout, /^#UserName\s+#UserType\s+#UserStatus\n/);
    assert.match(users.stdout, /\nadmin\s+Super\s+enable\n/);
    assert.match(users.stdout, /\nalice\s+Normal\s+enable\n/);
    assert.ok(!users.stdout.includes(ALICE_SECRET) && !users.stdout.includes(SUPER.secretKey), 'no secrets');
    assert.match(getAcl.stdout, /#Subject\s+#PolicyType\s+#Resource\s+#Actions\s+#SourceIp\s+#Decision/);
    assert.match(
      getAcl.stdout,
      /User:alice\s+Custom\s+Topic:order-\*\s+Pub,Sub\s+127\.0\.0\.1,10\.0\.0\.0\/8\s+Allow/,
    );
    const listed = JSON.parse(listAcl.stdout) as {
      subject: string;
      policies: { entries: { resource: string }[] }[];
    }[];
    assert.deepEqual(
      listed.map((a) => [a.subject, a.policies[0]!.entries.map((e) => e.resource)]),
      [['User:alice', ['Topic:orders', 'Topic:order-*']]],
      'resource filter',
    );
    assert.equal(asAlice.code, 1, 'a normal user may not administer');
    assert.match(asAlice.stderr, /not a super user.*code 40300/);

    const [delEntry, disable] = await Promise.all([
      asSuper('deleteAcl', '-s', 'User:alice', '-r', 'Group:G1'),
      asSuper('updateUser', '-u', 'alice', '-s', 'disable'),
    ]);
    assert.equal(delEntry.code, 0, delEntry.stderr);
    assert.equal(disable.code, 0, disable.stderr);
    const after = await asSuper('getAcl', '-s', 'User:alice', '--json');
    const entries = (JSON.parse(after.stdout) as { policies: { entries: { resource: string }[] }[] })
      .policies[0]!.entries;
    assert.deepEqual(
      entries.map((e) => e.resource),
      ['Topic:orders', 'Topic:order-*'],
    );
    const user = await asSuper('getUser', '-u', 'alice', '--json');
    assert.deepEqual(JSON.parse(user.stdout), {
      username: 'alice',
      userType: 'Normal',
      userStatus: 'disable',
    });
  });

  test('users and ACLs survive a restart; secrets never reach the log', async () => {
    const admin = new Admin({ url: `http://${addr}`, credentials: SUPER });
    await admin.createUser('carol', 'carol-Secret-3');
    await admin.createAcl({
      subject: 'User:carol',
      resources: ['Topic:t*'],
      actions: ['Pub'],
      decision: 'Deny',
    });
    await admin.createTopic('t1');
    await running.close();
    running = await open();
    addr = `127.0.0.1:${running.httpPort}`;
    const again = new Admin({ url: `http://${addr}`, credentials: SUPER });
    assert.deepEqual(await again.getUser('carol'), {
      username: 'carol',
      userType: 'Normal',
      userStatus: 'enable',
    });
    assert.deepEqual((await again.getAcl('User:carol')).policies[0]!.entries, [
      { resource: 'Topic:t*', actions: ['Pub'], sourceIps: [], decision: 'Deny' },
    ]);
    // The secret still verifies after the restart: carol is authenticated, then denied by her ACL.
    const p = new Producer({
      endpoints: `127.0.0.1:${running.grpcPort}`,
      credentials: { accessKey: 'carol', accessSecret: 'carol-Secret-3' },
      maxAttempts: 1,
    });
    await assert.rejects(p.send({ topic: 't1', body: 'x' }), (e: VelaClientError) => e.code === 40300);
    await p.close();
    const text = JSON.stringify(lines);
    assert.match(text, /created the initial super user/);
    for (const secret of [SUPER.secretKey, ALICE_SECRET, 'carol-Secret-3']) {
      assert.ok(!text.includes(secret), `no log line carries ${secret}`);
    }
  });
});
