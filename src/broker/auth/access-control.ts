/**
 * Access control (RocketMQ ACL 2.0) as the edges use it: authenticate a request's credential
 * (signature, user, clock) into a principal, authorize what a principal asks to do, and require a
 * super user for administration. Off unless `aclEnabled`; the users and ACLs (auth-registry.ts) can
 * be managed either way, so they are in place before access control is turned on.
 */
import { VelaError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { authorize, type AccessRequest } from './authorizer.js';
import type { AuthRegistry } from './auth-registry.js';
import { parseAuthorization, verifyContentSignature, verifySignature } from './credential.js';
import { checkDateTime, type ClockPolicy } from './date-time.js';
import { UserStatus, UserType, type User } from './model.js';

export interface AccessControlSettings {
  enabled: boolean;
  clock: ClockPolicy;
}

/** Who an authenticated request comes from. */
export interface Principal {
  username: string;
}

/** What a request presents: its headers as sent. */
export interface Presented {
  /** The `authorization` header ('' when absent). */
  authorization: string;
  /** The `x-mq-date-time` header ('' when absent). */
  dateTime: string;
}

/** Signatures verified lately: clients sign many requests within one second (one date-time). */
const VERIFIED_CACHE = 4096;

export class AccessControl {
  /** `accessKey date-time signature` → the secret key that verified it (a changed key misses). */
  private readonly verified = new Map<string, string>();

  constructor(
    readonly registry: AuthRegistry,
    readonly settings: AccessControlSettings,
    private readonly now: () => number,
    private readonly logger: Logger,
  ) {}

  get enabled(): boolean {
    return this.settings.enabled;
  }

  /**
   * The principal a credential proves, or `ACL_UNAUTHORIZED` (no or malformed credential, unknown or
   * disabled user, wrong signature, date-time outside the window). `clock` overrides the policy (the
   * admin API, whose clients stamp UTC, allows no time-zone offset).
   */
  authenticate(p: Presented, clock: ClockPolicy = this.settings.clock): Principal {
    if (!p.authorization) {
      throw new VelaError('ACL_UNAUTHORIZED', 'the request is not signed (no authorization header)');
    }
    const credential = parseAuthorization(p.authorization);
    if (!credential.accessKey) {
      throw new VelaError('ACL_UNAUTHORIZED', 'the request carries no access key (configure credentials)');
    }
    if (!p.dateTime) throw new VelaError('ACL_UNAUTHORIZED', 'the x-mq-date-time header is missing');
    const user = this.registry.user(credential.accessKey);
    if (!user || !this.verify(user.password, credential.accessKey, p.dateTime, credential.signature)) {
      // One answer for both, so a caller cannot probe which access keys exist.
      this.logger.debug({ accessKey: credential.accessKey }, 'authentication failed');
      throw new VelaError(
        'ACL_UNAUTHORIZED',
        `the signature does not match access key ${credential.accessKey}`,
      );
    }
    if (user.userStatus === UserStatus.DISABLE) {
      throw new VelaError('ACL_UNAUTHORIZED', `User:${user.username} is disabled`);
    }
    checkDateTime(p.dateTime, this.now(), clock);
    return { username: user.username };
  }

  /**
   * The principal a Remoting request proves (RocketMQ's `AclClientRPCHook`): `signature` is the
   * Base64 HMAC-SHA1, keyed with the user's secret key, of `content` (the edge builds it from the
   * request as RocketMQ does). Remoting signatures carry no date-time, so there is no clock check.
   * `ACL_UNAUTHORIZED` for an unknown or disabled user or a wrong signature.
   */
  authenticateContent(accessKey: string, signature: string, content: Buffer): Principal {
    if (!accessKey) {
      throw new VelaError(
        'ACL_UNAUTHORIZED',
        'the request is not signed (no AccessKey): configure credentials',
      );
    }
    const user = this.registry.user(accessKey);
    if (!user || !verifyContentSignature(user.password, content, signature)) {
      this.logger.debug({ accessKey }, 'authentication failed');
      throw new VelaError('ACL_UNAUTHORIZED', `the signature does not match access key ${accessKey}`);
    }
    if (user.userStatus === UserStatus.DISABLE) {
      throw new VelaError('ACL_UNAUTHORIZED', `User:${user.username} is disabled`);
    }
    return { username: user.username };
  }

  /** `ACL_FORBIDDEN` unless the principal may do all of `requests` from `sourceIp`. */
  authorize(principal: Principal, requests: readonly AccessRequest[], sourceIp: string): void {
    const user = this.current(principal);
    if (user.userType === UserType.SUPER || requests.length === 0) return;
    authorize(user.username, this.registry.entriesOf(user.username), requests, sourceIp);
  }

  /** `ACL_FORBIDDEN` unless the principal is a super user. */
  requireSuper(principal: Principal): void {
    const user = this.current(principal);
    if (user.userType !== UserType.SUPER) {
      throw new VelaError('ACL_FORBIDDEN', `User:${user.username} is not a super user`);
    }
  }

  private verify(secret: string, accessKey: string, dateTime: string, signature: string): boolean {
    const key = `${accessKey} ${dateTime} ${signature.toUpperCase()}`;
    if (this.verified.get(key) === secret) return true;
    if (!verifySignature(secret, dateTime, signature)) return false;
    if (this.verified.size >= VERIFIED_CACHE) this.verified.clear();
    this.verified.set(key, secret);
    return true;
  }

  /** The user as it is now: deleted or disabled since authentication means no more access. */
  private current(principal: Principal): User {
    const user = this.registry.user(principal.username);
    if (!user) throw new VelaError('ACL_UNAUTHORIZED', `User:${principal.username} no longer exists`);
    if (user.userStatus === UserStatus.DISABLE) {
      throw new VelaError('ACL_UNAUTHORIZED', `User:${principal.username} is disabled`);
    }
    return user;
  }
}
