/**
 * User and ACL administration (mqadmin's createUser … listAcl) over the broker's access control: the
 * core the HTTP API calls. Inputs are checked here for shape; the registry checks their meaning.
 * Nothing returned carries a secret key.
 */
import type { AccessControl } from '../broker/auth/access-control.js';
import type { AclInput, AclView, UserUpdate } from '../broker/auth/auth-registry.js';
import type { UserView } from '../broker/auth/model.js';
import { VelaError } from '../common/errors.js';

export type { AclView, UserView };

const optionalString = (v: unknown, what: string): string | undefined => {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new VelaError('ILLEGAL_ACL', `${what} must be a string`);
  return v;
};

const stringList = (v: unknown, what: string): string[] | undefined => {
  if (v === undefined || v === null) return undefined;
  const list = typeof v === 'string' ? v.split(',') : v;
  if (!Array.isArray(list) || list.some((x) => typeof x !== 'string')) {
    throw new VelaError('ILLEGAL_ACL', `${what} must be a list of strings`);
  }
  return list as string[];
};

export class AclOperations {
  constructor(private readonly acl: AccessControl) {}

  /** Whether access control is on (the admin API then needs a super user). */
  get enabled(): boolean {
    return this.acl.enabled;
  }

  createUser(input: { username?: unknown; password?: unknown; userType?: unknown }): Promise<UserView> {
    return this.acl.registry.createUser(
      optionalString(input.username, 'username') ?? '',
      optionalString(input.password, 'password') ?? '',
      optionalString(input.userType, 'userType'),
    );
  }

  updateUser(
    username: string,
    input: { password?: unknown; userType?: unknown; userStatus?: unknown },
  ): Promise<UserView> {
    const update: UserUpdate = {};
    const password = optionalString(input.password, 'password');
    const userType = optionalString(input.userType, 'userType');
    const userStatus = optionalString(input.userStatus, 'userStatus');
    if (password !== undefined) update.password = password;
    if (userType !== undefined) update.userType = userType;
    if (userStatus !== undefined) update.userStatus = userStatus;
    return this.acl.registry.updateUser(username, update);
  }

  deleteUser(username: string): Promise<void> {
    return this.acl.registry.deleteUser(username);
  }

  getUser(username: string): UserView {
    return this.acl.registry.getUser(username);
  }

  listUser(filter?: string): UserView[] {
    return this.acl.registry.listUsers(filter || undefined);
  }

  /** createAcl and updateAcl: RocketMQ gives both the same meaning (add or replace entries). */
  upsertAcl(input: {
    subject?: unknown;
    resources?: unknown;
    actions?: unknown;
    sourceIps?: unknown;
    decision?: unknown;
  }): Promise<AclView> {
    const acl: AclInput = {
      subject: optionalString(input.subject, 'subject') ?? '',
      resources: stringList(input.resources, 'resources') ?? [],
      actions: stringList(input.actions, 'actions') ?? [],
      decision: optionalString(input.decision, 'decision') ?? '',
    };
    const ips = stringList(input.sourceIps, 'sourceIps');
    if (ips) acl.sourceIps = ips;
    return this.acl.registry.upsertAcl(acl);
  }

  deleteAcl(subject: string, resource?: string): Promise<void> {
    return this.acl.registry.deleteAcl(subject, resource || undefined);
  }

  getAcl(subject: string): AclView {
    return this.acl.registry.getAcl(subject);
  }

  listAcl(subjectFilter?: string, resourceFilter?: string): AclView[] {
    return this.acl.registry.listAcls(subjectFilter || undefined, resourceFilter || undefined);
  }
}
