/**
 * `vela admin` user and ACL commands, with mqadmin's names and flags: createUser, updateUser,
 * deleteUser, getUser, listUser, createAcl, updateAcl, deleteAcl, getAcl, listAcl. Lists are
 * comma-separated as in mqadmin (`-r Topic:a,Group:b -a Pub,Sub -i 10.0.0.0/8`). mqadmin prints
 * passwords in getUser and listUser; Vela never shows them.
 */
import type { Command } from 'commander';
import type { AclView, UserView } from '../acl-operations.js';
import type { CommonOptions, SubCommand } from './commands.js';
import { formatJson, formatTable } from './table.js';

const out = (text: string) => void process.stdout.write(text);
const seg = (name: string) => encodeURIComponent(name);
const list = (value: string) =>
  value
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');

const oneBroker = (cmd: Command) =>
  cmd
    .option('-c, --clusterName <cluster>', 'accepted and ignored (one broker)')
    .option('-b, --brokerAddr <addr>', 'accepted and ignored (one broker)');

export function renderUsers(users: readonly UserView[]): string {
  return formatTable(
    ['UserName', 'UserType', 'UserStatus'],
    users.map((u) => [u.username, u.userType, u.userStatus]),
  );
}

export function renderAcls(acls: readonly AclView[]): string {
  const rows = acls.flatMap((a) =>
    a.policies.length === 0
      ? [[a.subject, '', '', '', '', '']]
      : a.policies.flatMap((p) =>
          p.entries.map((e) => [
            a.subject,
            p.policyType,
            e.resource,
            e.actions.join(','),
            e.sourceIps.join(','),
            e.decision,
          ]),
        ),
  );
  return formatTable(['Subject', 'PolicyType', 'Resource', 'Actions', 'SourceIp', 'Decision'], rows);
}

export function registerAclCommands(sub: SubCommand): void {
  // ---- users ----------------------------------------------------------------------------------------

  sub<CommonOptions & { username: string; password: string; userType?: string }>(
    'createUser',
    'create a user (its access key is the username, its secret key the password)',
    (cmd) =>
      oneBroker(
        cmd
          .requiredOption('-u, --username <name>', 'the username (access key)')
          .requiredOption('-p, --password <secret>', 'the password (secret key)')
          .option('-t, --userType <Super|Normal>', 'the user type (default Normal)'),
      ),
    async (client, o) => {
      const user = await client.post<UserView>('/api/acl/users', {
        username: o.username,
        password: o.password,
        ...(o.userType ? { userType: o.userType } : {}),
      });
      out(o.json ? formatJson(user) : `create user to ${client.baseUrl} success.\n`);
    },
  );

  sub<CommonOptions & { username: string; password?: string; userType?: string; userStatus?: string }>(
    'updateUser',
    "change a user's password, type or status",
    (cmd) =>
      oneBroker(
        cmd
          .requiredOption('-u, --username <name>', 'the username')
          .option('-p, --password <secret>', 'the new password (secret key)')
          .option('-t, --userType <Super|Normal>', 'the new user type')
          .option('-s, --userStatus <enable|disable>', 'the new user status'),
      ),
    async (client, o) => {
      const user = await client.put<UserView>(`/api/acl/users/${seg(o.username)}`, {
        ...(o.password !== undefined ? { password: o.password } : {}),
        ...(o.userType ? { userType: o.userType } : {}),
        ...(o.userStatus ? { userStatus: o.userStatus } : {}),
      });
      out(o.json ? formatJson(user) : `update user to ${client.baseUrl} success.\n`);
    },
  );

  sub<CommonOptions & { username: string }>(
    'deleteUser',
    'delete a user and its ACL',
    (cmd) => oneBroker(cmd.requiredOption('-u, --username <name>', 'the username')),
    async (client, o) => {
      const res = await client.delete<{ deleted: string }>(`/api/acl/users/${seg(o.username)}`);
      out(o.json ? formatJson(res) : `delete user to ${client.baseUrl} success.\n`);
    },
  );

  sub<CommonOptions & { username: string }>(
    'getUser',
    'show a user (never its secret key)',
    (cmd) => oneBroker(cmd.requiredOption('-u, --username <name>', 'the username')),
    async (client, o) => {
      const user = await client.get<UserView>(`/api/acl/users/${seg(o.username)}`);
      out(o.json ? formatJson(user) : renderUsers([user]));
    },
  );

  sub<CommonOptions & { filter?: string }>(
    'listUser',
    'list users (never their secret keys)',
    (cmd) => oneBroker(cmd.option('-f, --filter <text>', 'only usernames containing this')),
    async (client, o) => {
      const users = await client.get<UserView[]>('/api/acl/users', { filter: o.filter });
      out(o.json ? formatJson(users) : renderUsers(users));
    },
  );

  // ---- ACLs -----------------------------------------------------------------------------------------

  type AclOptions = CommonOptions & {
    subject: string;
    resources: string;
    actions: string;
    sourceIp?: string;
    decision: string;
  };
  const aclFlags = (cmd: Command) =>
    oneBroker(
      cmd
        .requiredOption('-s, --subject <User:name>', 'the subject, User:<username>')
        .requiredOption(
          '-r, --resources <list>',
          'resources, e.g. Topic:orders,Topic:order-*,Group:*,Cluster:*',
        )
        .requiredOption('-a, --actions <list>', 'actions: Pub, Sub, Create, Update, Delete, Get, List, All')
        .option('-i, --sourceIp <list>', 'source IPs or CIDR ranges (default: from anywhere)')
        .requiredOption('-d, --decision <Allow|Deny>', 'the decision'),
    );
  const aclBody = (o: AclOptions) => ({
    subject: o.subject,
    resources: list(o.resources),
    actions: list(o.actions),
    ...(o.sourceIp !== undefined ? { sourceIps: list(o.sourceIp) } : {}),
    decision: o.decision,
  });

  sub<AclOptions>(
    'createAcl',
    "add entries to a subject's ACL (an entry for the same resource is replaced)",
    aclFlags,
    async (client, o) => {
      const acl = await client.post<AclView>('/api/acl', aclBody(o));
      out(o.json ? formatJson(acl) : `create acl to ${client.baseUrl} success.\n`);
    },
  );

  sub<AclOptions>('updateAcl', 'the same as createAcl (as in RocketMQ)', aclFlags, async (client, o) => {
    const acl = await client.put<AclView>('/api/acl', aclBody(o));
    out(o.json ? formatJson(acl) : `update acl to ${client.baseUrl} success.\n`);
  });

  sub<CommonOptions & { subject: string; resources?: string }>(
    'deleteAcl',
    "remove one resource's entry from a subject's ACL, or the whole ACL",
    (cmd) =>
      oneBroker(
        cmd
          .requiredOption('-s, --subject <User:name>', 'the subject, User:<username>')
          .option('-r, --resources <resource>', 'only the entry for this resource'),
      ),
    async (client, o) => {
      const res = await client.delete<Record<string, string>>(`/api/acl/${seg(o.subject)}`, {
        resource: o.resources,
      });
      out(o.json ? formatJson(res) : `delete acl to ${client.baseUrl} success.\n`);
    },
  );

  sub<CommonOptions & { subject: string }>(
    'getAcl',
    "show a subject's ACL",
    (cmd) => oneBroker(cmd.requiredOption('-s, --subject <User:name>', 'the subject, User:<username>')),
    async (client, o) => {
      const acl = await client.get<AclView>(`/api/acl/${seg(o.subject)}`);
      out(o.json ? formatJson(acl) : renderAcls([acl]));
    },
  );

  sub<CommonOptions & { subject?: string; resource?: string }>(
    'listAcl',
    'list ACLs',
    (cmd) =>
      oneBroker(
        cmd
          .option('-s, --subject <text>', 'only subjects containing this')
          .option('-r, --resource <text>', 'only entries whose resource contains this'),
      ),
    async (client, o) => {
      const acls = await client.get<AclView[]>('/api/acl', { subject: o.subject, resource: o.resource });
      out(o.json ? formatJson(acls) : renderAcls(acls));
    },
  );
}
