/**
 * The ACL 2.0 model in RocketMQ's words: users (an access key — the username — and its secret key,
 * Super or Normal, enabled or disabled), and per subject `User:<name>` a list of policy entries, each
 * a resource pattern, the actions it covers, the source IPs it applies to and a decision (Allow or
 * Deny). Names and spellings are mqadmin's, so the same commands and files work unchanged.
 */
import { VelaError } from '../../common/errors.js';

export const Action = {
  ALL: 'All',
  PUB: 'Pub',
  SUB: 'Sub',
  CREATE: 'Create',
  UPDATE: 'Update',
  DELETE: 'Delete',
  GET: 'Get',
  LIST: 'List',
} as const;
export type Action = (typeof Action)[keyof typeof Action];

export const Decision = { ALLOW: 'Allow', DENY: 'Deny' } as const;
export type Decision = (typeof Decision)[keyof typeof Decision];

export const UserType = { SUPER: 'Super', NORMAL: 'Normal' } as const;
export type UserType = (typeof UserType)[keyof typeof UserType];

export const UserStatus = { ENABLE: 'enable', DISABLE: 'disable' } as const;
export type UserStatus = (typeof UserStatus)[keyof typeof UserStatus];

/** RocketMQ's only policy type that users write (DEFAULT comes from ACL 1.0 migrations). */
export const POLICY_TYPE = 'Custom';

export interface User {
  /** The access key. */
  username: string;
  /** The secret key. Never leaves the broker: views and logs carry none of it. */
  password: string;
  userType: UserType;
  userStatus: UserStatus;
}

/** What the admin API shows of a user. */
export interface UserView {
  username: string;
  userType: UserType;
  userStatus: UserStatus;
}

export interface PolicyEntry {
  /** Resource key: `Topic:orders`, `Topic:order-*` (prefix), `Group:*`, `Cluster:*`, or `*`. */
  resource: string;
  actions: Action[];
  /** IPs and CIDR ranges the entry applies to; empty means from anywhere. */
  sourceIps: string[];
  decision: Decision;
}

export interface Acl {
  /** `User:<username>` */
  subject: string;
  entries: PolicyEntry[];
}

/** Limits that keep the ACL store bounded (it lives in memory). */
export const AclLimits = {
  maxUsers: 10_000,
  maxEntriesPerSubject: 1000,
  maxSourceIpsPerEntry: 64,
  maxUsernameLength: 128,
  maxPasswordLength: 256,
} as const;

export function viewOf(u: User): UserView {
  return { username: u.username, userType: u.userType, userStatus: u.userStatus };
}

const illegal = (why: string) => new VelaError('ILLEGAL_ACL', why);

function byName<T extends string>(values: readonly T[], what: string, raw: string): T {
  const v = raw.trim().toLowerCase();
  const found = values.find((x) => x.toLowerCase() === v);
  if (!found) throw illegal(`unknown ${what} "${raw}" (expected ${values.join(', ')})`);
  return found;
}

export const parseAction = (raw: string): Action => byName(Object.values(Action), 'action', raw);
export const parseDecision = (raw: string): Decision => byName(Object.values(Decision), 'decision', raw);
export const parseUserType = (raw: string): UserType => byName(Object.values(UserType), 'user type', raw);
export const parseUserStatus = (raw: string): UserStatus =>
  byName(Object.values(UserStatus), 'user status', raw);

/**
 * Access keys travel in `Credential=<AccessKey>[/…]` of a comma-separated header, so they cannot
 * hold `/`, `,`, `=` or spaces; this set covers names, e-mail addresses and generated keys.
 */
const USERNAME = /^[A-Za-z0-9_.@+-]+$/;

export function checkUsername(username: unknown): string {
  if (typeof username !== 'string' || username.trim() === '') throw illegal('the username is required');
  if (username.length > AclLimits.maxUsernameLength || !USERNAME.test(username)) {
    throw illegal(
      `username "${username}" must be 1-${AclLimits.maxUsernameLength} characters of A-Z a-z 0-9 _ . @ + -`,
    );
  }
  return username;
}

const hasControlCharacter = (s: string) =>
  [...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

export function checkPassword(password: unknown): string {
  if (typeof password !== 'string' || password === '') throw illegal('the password (secret key) is required');
  if (password.length > AclLimits.maxPasswordLength || hasControlCharacter(password)) {
    throw illegal(
      `the password must be 1-${AclLimits.maxPasswordLength} characters without control characters`,
    );
  }
  return password;
}

/** `User:<name>` → the username (the only subject type RocketMQ has). */
export function parseSubject(subject: unknown): string {
  if (typeof subject !== 'string' || !subject.includes(':')) {
    throw illegal(`subject "${String(subject)}" must be of the form User:<username>`);
  }
  const i = subject.indexOf(':');
  const type = subject.slice(0, i);
  if (type.toLowerCase() !== 'user') {
    throw illegal(`subject type "${type}" is not supported (expected User:<username>)`);
  }
  return checkUsername(subject.slice(i + 1));
}

export const subjectOf = (username: string): string => `User:${username}`;
