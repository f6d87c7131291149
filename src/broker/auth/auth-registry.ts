/**
 * Users and ACLs, durable through the state journal (participant `auth`), managed with mqadmin's
 * semantics: createUser refuses an existing name; updateUser changes the password, type or status;
 * deleteUser removes the user and its ACL; createAcl and updateAcl add entries to a user's ACL or
 * replace the entry for the same resource; deleteAcl removes one resource's entry or the whole ACL.
 *
 * Secret keys are stored (HMAC verification needs them) but never returned: views carry none.
 */
import { VelaError } from '../../common/errors.js';
import type { StateJournal, StateParticipant, StateRecord } from '../state-journal.js';
import { compileEntry, type CompiledEntry } from './authorizer.js';
import { parseIpRange } from './ip-range.js';
import {
  AclLimits,
  POLICY_TYPE,
  UserStatus,
  UserType,
  checkPassword,
  checkUsername,
  parseAction,
  parseDecision,
  parseSubject,
  parseUserStatus,
  parseUserType,
  subjectOf,
  viewOf,
  type Action,
  type Decision,
  type PolicyEntry,
  type User,
  type UserView,
} from './model.js';
import { parseResource } from './resource.js';

export interface UserUpdate {
  password?: string;
  userType?: string;
  userStatus?: string;
}

/** createAcl / updateAcl input, as mqadmin's flags give it. */
export interface AclInput {
  subject: string;
  resources: string[];
  actions: string[];
  sourceIps?: string[];
  decision: string;
}

export interface AclView {
  subject: string;
  policies: { policyType: string; entries: PolicyEntry[] }[];
}

export class AuthRegistry implements StateParticipant {
  readonly stateKey = 'auth';
  journal!: StateJournal;
  private readonly users = new Map<string, User>();
  private readonly acls = new Map<string, PolicyEntry[]>();
  private readonly compiled = new Map<string, CompiledEntry[]>();

  // ---- lookups (the authenticator and authorizer) ---------------------------------------------

  user(username: string): User | undefined {
    return this.users.get(username);
  }

  /** The user's ACL entries, parsed for matching. */
  entriesOf(username: string): readonly CompiledEntry[] {
    let c = this.compiled.get(username);
    if (!c) {
      c = (this.acls.get(username) ?? []).map(compileEntry);
      this.compiled.set(username, c);
    }
    return c;
  }

  get userCount(): number {
    return this.users.size;
  }

  // ---- users ----------------------------------------------------------------------------------

  async createUser(username: string, password: string, userType?: string): Promise<UserView> {
    checkUsername(username);
    checkPassword(password);
    const type = userType ? parseUserType(userType) : UserType.NORMAL;
    if (this.users.has(username)) throw new VelaError('ACL_USER_EXISTS', username);
    if (this.users.size >= AclLimits.maxUsers) {
      throw new VelaError('ILLEGAL_ACL', `at most ${AclLimits.maxUsers} users`);
    }
    const user: User = { username, password, userType: type, userStatus: UserStatus.ENABLE };
    await this.journal.commit({ kind: 'aclUser', user });
    return viewOf(user);
  }

  async updateUser(username: string, update: UserUpdate): Promise<UserView> {
    const cur = this.requireUser(username);
    if (update.password === undefined && !update.userType && !update.userStatus) {
      throw new VelaError('ILLEGAL_ACL', 'give a new password, user type or user status');
    }
    const next: User = {
      ...cur,
      ...(update.password !== undefined ? { password: checkPassword(update.password) } : {}),
      ...(update.userType ? { userType: parseUserType(update.userType) } : {}),
      ...(update.userStatus ? { userStatus: parseUserStatus(update.userStatus) } : {}),
    };
    await this.journal.commit({ kind: 'aclUser', user: next });
    return viewOf(next);
  }

  async deleteUser(username: string): Promise<void> {
    this.requireUser(username);
    await this.journal.commit({ kind: 'aclUserDeleted', name: username });
  }

  getUser(username: string): UserView {
    return viewOf(this.requireUser(username));
  }

  /** Users whose name contains `filter` (mqadmin listUser -f), by name. */
  listUsers(filter?: string): UserView[] {
    return [...this.users.values()]
      .filter((u) => !filter || u.username.includes(filter))
      .sort((a, b) => a.username.localeCompare(b.username))
      .map(viewOf);
  }

  /** Create the user as a super user unless one by that name exists (the init user at start-up). */
  async ensureSuperUser(username: string, password: string): Promise<boolean> {
    if (this.users.has(username)) return false;
    await this.createUser(username, password, UserType.SUPER);
    return true;
  }

  // ---- ACLs -----------------------------------------------------------------------------------

  /** createAcl and updateAcl (the same in RocketMQ): add the entries, replacing same-resource ones. */
  async upsertAcl(input: AclInput): Promise<AclView> {
    const username = parseSubject(input.subject);
    this.requireUser(username);
    const entries = entriesOf(input);
    const next = [...(this.acls.get(username) ?? [])];
    for (const e of entries) {
      const i = next.findIndex((x) => x.resource === e.resource);
      if (i >= 0) next[i] = e;
      else next.push(e);
    }
    if (next.length > AclLimits.maxEntriesPerSubject) {
      throw new VelaError('ILLEGAL_ACL', `at most ${AclLimits.maxEntriesPerSubject} entries per subject`);
    }
    await this.journal.commit({ kind: 'acl', user: username, entries: next });
    return this.getAcl(input.subject);
  }

  /** Remove one resource's entry (`resource` given) or the subject's whole ACL. */
  async deleteAcl(subject: string, resource?: string): Promise<void> {
    const username = parseSubject(subject);
    this.requireUser(username);
    const cur = this.acls.get(username);
    if (!cur) throw new VelaError('ACL_NOT_FOUND', `${subject} has no ACL`);
    let next: PolicyEntry[] = [];
    if (resource) {
      const key = parseResource(resource).key;
      next = cur.filter((e) => e.resource !== key);
      if (next.length === cur.length)
        throw new VelaError('ACL_NOT_FOUND', `${subject} has no entry for ${key}`);
    }
    if (next.length === 0) await this.journal.commit({ kind: 'aclDeleted', user: username });
    else await this.journal.commit({ kind: 'acl', user: username, entries: next });
  }

  getAcl(subject: string): AclView {
    const username = parseSubject(subject);
    this.requireUser(username);
    return aclView(username, this.acls.get(username) ?? []);
  }

  /** ACLs whose subject contains `subjectFilter`, with the entries whose resource contains `resourceFilter`. */
  listAcls(subjectFilter?: string, resourceFilter?: string): AclView[] {
    const out: AclView[] = [];
    for (const [username, entries] of [...this.acls].sort((a, b) => a[0].localeCompare(b[0]))) {
      const subject = subjectOf(username);
      if (subjectFilter && !subject.includes(subjectFilter)) continue;
      const kept = resourceFilter ? entries.filter((e) => e.resource.includes(resourceFilter)) : entries;
      if (kept.length > 0) out.push(aclView(username, kept));
    }
    return out;
  }

  // ---- the journal ----------------------------------------------------------------------------

  apply(rec: StateRecord): boolean {
    switch (rec.kind) {
      case 'aclUser':
        this.users.set(rec.user.username, rec.user);
        return true;
      case 'aclUserDeleted':
        this.users.delete(rec.name);
        this.setAcl(rec.name, []);
        return true;
      case 'acl':
        this.setAcl(rec.user, rec.entries);
        return true;
      case 'aclDeleted':
        this.setAcl(rec.user, []);
        return true;
      default:
        return false;
    }
  }

  snapshot(): unknown {
    return {
      users: [...this.users.values()],
      acls: [...this.acls].map(([user, entries]) => ({ user, entries })),
    };
  }

  restore(data: unknown): void {
    const d = data as { users: User[]; acls: { user: string; entries: PolicyEntry[] }[] };
    this.users.clear();
    this.acls.clear();
    this.compiled.clear();
    for (const u of d.users) this.users.set(u.username, u);
    for (const a of d.acls) this.acls.set(a.user, a.entries);
  }

  private setAcl(username: string, entries: PolicyEntry[]): void {
    if (entries.length === 0) this.acls.delete(username);
    else this.acls.set(username, entries);
    this.compiled.delete(username);
  }

  private requireUser(username: string): User {
    const u = this.users.get(checkUsername(username));
    if (!u) throw new VelaError('ACL_USER_NOT_FOUND', username);
    return u;
  }
}

function aclView(username: string, entries: PolicyEntry[]): AclView {
  return {
    subject: subjectOf(username),
    policies:
      entries.length === 0 ? [] : [{ policyType: POLICY_TYPE, entries: entries.map((e) => ({ ...e })) }],
  };
}

/** Validate an ACL input into entries, one per resource (RocketMQ's Policy.of). */
function entriesOf(input: AclInput): PolicyEntry[] {
  const list = (v: unknown, what: string): string[] => {
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new VelaError('ILLEGAL_ACL', `${what} must be a list of strings`);
    }
    return (v as string[]).map((x) => x.trim()).filter((x) => x !== '');
  };
  const resources = list(input.resources, 'resources');
  if (resources.length === 0) throw new VelaError('ILLEGAL_ACL', 'at least one resource is required');
  const actionNames = list(input.actions, 'actions');
  if (actionNames.length === 0) throw new VelaError('ILLEGAL_ACL', 'at least one action is required');
  const actions = [...new Set(actionNames.map(parseAction))] as Action[];
  const sourceIps = input.sourceIps === undefined ? [] : list(input.sourceIps, 'sourceIps');
  if (sourceIps.length > AclLimits.maxSourceIpsPerEntry) {
    throw new VelaError('ILLEGAL_ACL', `at most ${AclLimits.maxSourceIpsPerEntry} source IPs per entry`);
  }
  for (const ip of sourceIps) parseIpRange(ip);
  if (typeof input.decision !== 'string')
    throw new VelaError('ILLEGAL_ACL', 'a decision (Allow or Deny) is required');
  const decision: Decision = parseDecision(input.decision);
  const keys = [...new Set(resources.map((r) => parseResource(r).key))];
  return keys.map((resource) => ({ resource, actions, sourceIps: [...sourceIps], decision }));
}
