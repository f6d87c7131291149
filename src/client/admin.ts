/**
 * Admin: a small client of the broker's HTTP admin API (the one `vela admin` uses): topics, consumer
 * groups, consumption progress and connections, message lookup, dead letters, users and ACLs.
 * Failures reject with `VelaClientError` carrying the broker's RocketMQ code (e.g. TOPIC_NOT_FOUND).
 */
import { Code } from '../common/codes.js';
import { adminRequestHeaders } from '../common/signature.js';
import { VelaClientError, clientError } from './errors.js';
import { positive } from './options.js';
import type {
  AdminCredentials,
  UserType,
  UserStatus,
  UserInfo,
  AclInput,
  AclInfo,
  TopicInput,
  TimerStatus,
  TransactionStatus,
  TopicInfo,
  GroupInput,
  GroupInfo,
  QueueStatus,
  ConsumerProgress,
  ConsumerConnection,
  StoredMessageInfo,
  ResetTarget,
  ResetOffsetResult,
  DeadLetterPage,
} from './admin-types.js';

export type * from './admin-types.js';

export interface AdminOptions {
  /** Base URL of the admin HTTP API. @defaultValue 'http://127.0.0.1:8082' */
  url?: string;
  /** Deadline of each request. @defaultValue 10000 */
  requestTimeoutMs?: number;
  /** The broker's admin token (`adminToken`), sent as `Authorization: Bearer …`. @defaultValue none */
  token?: string;
  /**
   * A super user's keys, when the broker runs with access control: each request is signed with
   * them (`x-vela-authorization`, as gRPC requests are signed). @defaultValue none
   */
  credentials?: AdminCredentials;
}

export class Admin {
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly token: string | undefined;
  private readonly credentials: AdminCredentials | undefined;

  constructor(options: AdminOptions = {}) {
    this.url = (options.url ?? 'http://127.0.0.1:8082').replace(/\/+$/, '');
    this.timeoutMs = positive('requestTimeoutMs', options.requestTimeoutMs, 10_000);
    this.token = options.token || undefined;
    if (options.credentials && (!options.credentials.accessKey || !options.credentials.secretKey)) {
      throw clientError(Code.BAD_REQUEST, 'credentials need an accessKey and a secretKey');
    }
    this.credentials = options.credentials ? Object.freeze({ ...options.credentials }) : undefined;
  }

  // Topics

  /** Create a topic, or update it (mqadmin `updateTopic`). */
  createTopic(topic: string, input: TopicInput = {}): Promise<TopicInfo> {
    const attributes = { ...(input.attributes ?? {}) };
    if (input.messageType) attributes['message.type'] = input.messageType;
    return this.request('POST', '/api/topics', {
      topic,
      ...(input.readQueueNums !== undefined ? { readQueueNums: input.readQueueNums } : {}),
      ...(input.writeQueueNums !== undefined ? { writeQueueNums: input.writeQueueNums } : {}),
      ...(input.perm !== undefined ? { perm: input.perm } : {}),
      ...(Object.keys(attributes).length > 0 ? { attributes } : {}),
    });
  }

  /** Same as `createTopic` (the broker's call is an upsert). */
  updateTopic(topic: string, input: TopicInput): Promise<TopicInfo> {
    return this.createTopic(topic, input);
  }

  getTopic(topic: string): Promise<TopicInfo> {
    return this.request('GET', `/api/topics/${enc(topic)}`);
  }

  listTopics(): Promise<TopicInfo[]> {
    return this.request('GET', '/api/topics');
  }

  async deleteTopic(topic: string): Promise<void> {
    await this.request('DELETE', `/api/topics/${enc(topic)}`);
  }

  /** Per queue: min and max offsets, last store time (mqadmin `topicStatus`). */
  topicStatus(topic: string): Promise<QueueStatus[]> {
    return this.request('GET', `/api/topics/${enc(topic)}/status`);
  }

  /** Delay messages waiting for their time, per topic (or one topic), and when the next is due. */
  timerStatus(topic?: string): Promise<TimerStatus> {
    return this.request('GET', `/api/timer${topic ? `?topic=${enc(topic)}` : ''}`);
  }

  /** Transactions neither committed nor rolled back, per topic (or one topic). */
  transactionStatus(topic?: string): Promise<TransactionStatus> {
    return this.request('GET', `/api/transactions${topic ? `?topic=${enc(topic)}` : ''}`);
  }

  // Consumer groups

  /** Create a consumer group, or update it (mqadmin `updateSubGroup`). */
  createGroup(group: string, input: GroupInput = {}): Promise<GroupInfo> {
    return this.request('POST', '/api/groups', { group, ...input });
  }

  /** Same as `createGroup` (the broker's call is an upsert). */
  updateGroup(group: string, input: GroupInput): Promise<GroupInfo> {
    return this.createGroup(group, input);
  }

  getGroup(group: string): Promise<GroupInfo> {
    return this.request('GET', `/api/groups/${enc(group)}`);
  }

  listGroups(): Promise<GroupInfo[]> {
    return this.request('GET', '/api/groups');
  }

  async deleteGroup(group: string): Promise<void> {
    await this.request('DELETE', `/api/groups/${enc(group)}`);
  }

  /** Per queue of each topic the group consumes: offsets, in flight, lag (mqadmin `consumerProgress`). */
  consumerProgress(group: string, topic?: string): Promise<ConsumerProgress> {
    return this.request('GET', `/api/groups/${enc(group)}/progress${topic ? `?topic=${enc(topic)}` : ''}`);
  }

  /** The group's connected clients (mqadmin `consumerConnection`). */
  consumerConnection(group: string): Promise<ConsumerConnection[]> {
    return this.request('GET', `/api/groups/${enc(group)}/connections`);
  }

  /**
   * Move the group's position on a topic (every queue, or one with `queueId`): back to re-consume, or
   * forward to skip (mqadmin `resetOffsetByTime` / `resetOffset`). Takes effect for every consumer kind.
   */
  async resetOffset(group: string, topic: string, to: ResetTarget): Promise<ResetOffsetResult> {
    const body =
      'timestamp' in to
        ? { topic, timestamp: to.timestamp instanceof Date ? to.timestamp.getTime() : to.timestamp }
        : { topic, offset: to.offset, ...(to.queueId !== undefined ? { queueId: to.queueId } : {}) };
    return this.request('POST', `/api/groups/${enc(group)}/reset-offset`, body);
  }

  // Messages

  /** Messages with this id (newest first), optionally in one topic (mqadmin `queryMsgById`). */
  queryMessageById(messageId: string, topic?: string): Promise<StoredMessageInfo[]> {
    return this.request('GET', `/api/messages/${enc(messageId)}${topic ? `?topic=${enc(topic)}` : ''}`);
  }

  /** Messages with this key (newest first) (mqadmin `queryMsgByKey`). */
  queryMessageByKey(
    key: string,
    options: { topic?: string; limit?: number } = {},
  ): Promise<StoredMessageInfo[]> {
    const q = new URLSearchParams({ key });
    if (options.topic) q.set('topic', options.topic);
    if (options.limit !== undefined) q.set('limit', String(options.limit));
    return this.request('GET', `/api/messages?${q}`);
  }

  /** A page of the group's dead-letter queue (`%DLQ%<group>`), oldest first. */
  deadLetters(group: string, options: { offset?: number; limit?: number } = {}): Promise<DeadLetterPage> {
    const q = new URLSearchParams();
    if (options.offset !== undefined) q.set('offset', String(options.offset));
    if (options.limit !== undefined) q.set('limit', String(options.limit));
    const qs = q.size > 0 ? `?${q}` : '';
    return this.request('GET', `/api/groups/${enc(group)}/dlq${qs}`);
  }

  /** Send dead letters back to the group: one (by message id) or all. Resolves with how many. */
  async resendDeadLetters(group: string, messageId?: string): Promise<number> {
    const r = await this.request<{ resent: number }>(
      'POST',
      `/api/groups/${enc(group)}/dlq/resend`,
      messageId ? { messageId } : {},
    );
    return r.resent;
  }

  /** Broker name, counts and storage figures. */
  brokerInfo(): Promise<Record<string, unknown>> {
    return this.request('GET', '/api/broker');
  }

  // Users and ACLs (mqadmin's commands)

  /** A new user (its access key is the username). @param userType @defaultValue 'Normal' */
  createUser(username: string, password: string, userType?: UserType): Promise<UserInfo> {
    return this.request('POST', '/api/acl/users', { username, password, ...(userType ? { userType } : {}) });
  }

  /** Change a user's password (secret key), type or status. */
  updateUser(
    username: string,
    update: { password?: string; userType?: UserType; userStatus?: UserStatus },
  ): Promise<UserInfo> {
    return this.request('PUT', `/api/acl/users/${enc(username)}`, update);
  }

  /** Delete a user and its ACL. */
  async deleteUser(username: string): Promise<void> {
    await this.request('DELETE', `/api/acl/users/${enc(username)}`);
  }

  getUser(username: string): Promise<UserInfo> {
    return this.request('GET', `/api/acl/users/${enc(username)}`);
  }

  /** Users whose name contains `filter`. */
  listUser(filter?: string): Promise<UserInfo[]> {
    return this.request('GET', `/api/acl/users${filter ? `?filter=${enc(filter)}` : ''}`);
  }

  /** Add entries to a subject's ACL (an entry for the same resource is replaced). */
  createAcl(acl: AclInput): Promise<AclInfo> {
    return this.request('POST', '/api/acl', acl);
  }

  /** The same as createAcl, as in RocketMQ. */
  updateAcl(acl: AclInput): Promise<AclInfo> {
    return this.request('PUT', '/api/acl', acl);
  }

  /** Remove one resource's entry from a subject's ACL, or (no resource) the whole ACL. */
  async deleteAcl(subject: string, resource?: string): Promise<void> {
    await this.request('DELETE', `/api/acl/${enc(subject)}${resource ? `?resource=${enc(resource)}` : ''}`);
  }

  getAcl(subject: string): Promise<AclInfo> {
    return this.request('GET', `/api/acl/${enc(subject)}`);
  }

  /** ACLs whose subject contains `subject`, with the entries whose resource contains `resource`. */
  listAcl(filter: { subject?: string; resource?: string } = {}): Promise<AclInfo[]> {
    const q = new URLSearchParams();
    if (filter.subject) q.set('subject', filter.subject);
    if (filter.resource) q.set('resource', filter.resource);
    const qs = q.toString();
    return this.request('GET', `/api/acl${qs ? `?${qs}` : ''}`);
  }

  private headers(json: boolean): Record<string, string> {
    return adminRequestHeaders({ json, token: this.token, credentials: this.credentials });
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, {
        method,
        headers: this.headers(body !== undefined),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const timedOut = (err as Error)?.name === 'TimeoutError';
      throw new VelaClientError(
        timedOut ? Code.REQUEST_TIMEOUT : Code.INTERNAL_ERROR,
        `admin ${method} ${path} failed: ${(err as Error)?.message ?? String(err)}`,
        { retriable: true, cause: err },
      );
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const e = (json ?? {}) as { code?: number; message?: string };
      const code =
        typeof e.code === 'number'
          ? e.code
          : res.status >= 500
            ? Code.INTERNAL_SERVER_ERROR
            : Code.BAD_REQUEST;
      throw new VelaClientError(code, `admin ${method} ${path}: ${e.message ?? `HTTP ${res.status}`}`);
    }
    if (json === undefined) throw clientError(Code.INTERNAL_ERROR, `admin ${method} ${path}: not JSON`);
    return json as T;
  }
}

const enc = encodeURIComponent;
