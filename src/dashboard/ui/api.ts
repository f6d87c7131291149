/**
 * The admin JSON API as the console calls it: same origin, JSON bodies for every change, the admin
 * token (when the broker has one) as a Bearer header and, when the broker runs with access control,
 * each request signed with a super user's keys (RocketMQ's HMAC-SHA1 signature, computed here with
 * WebCrypto). Token and keys are kept for this browser tab only.
 */
import type {
  ConsumerConnection,
  DeliveryRecord,
  GroupInfo,
  StoredMessageInfo,
  TopicLag,
} from '../../common/admin-api.js';
import {
  ADMIN_AUTHORIZATION_HEADER,
  authorizationValue,
  DATE_TIME_HEADER,
  formatDateTime,
} from '../../common/signature-format.js';

export type { QueueLag, TopicLag } from '../../common/admin-api.js';

const TOKEN_KEY = 'vela.adminToken';
const KEYS_KEY = 'vela.aclKeys';

/** A user's keys (access control on). */
export interface AclKeys {
  accessKey: string;
  secretKey: string;
}

export function aclKeys(): AclKeys | null {
  try {
    const k = JSON.parse(sessionStorage.getItem(KEYS_KEY) ?? 'null') as AclKeys | null;
    return k && typeof k.accessKey === 'string' && typeof k.secretKey === 'string' ? k : null;
  } catch {
    return null;
  }
}

export function setAclKeys(keys: AclKeys | null): void {
  if (keys) sessionStorage.setItem(KEYS_KEY, JSON.stringify(keys));
  else sessionStorage.removeItem(KEYS_KEY);
}

/** The headers that sign a request made now (as `vela admin` and the SDK sign theirs). */
async function signed(keys: AclKeys): Promise<Record<string, string>> {
  if (!globalThis.crypto?.subtle) {
    throw new ApiError(
      'signing requests needs WebCrypto: open the console over HTTPS or on a loopback address',
      0,
    );
  }
  const utf8 = new TextEncoder();
  const dateTime = formatDateTime(Date.now());
  const key = await crypto.subtle.importKey(
    'raw',
    utf8.encode(keys.secretKey),
    { name: 'HMAC', hash: 'SHA-1' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, utf8.encode(dateTime)));
  const hex = Array.from(mac, (b) => b.toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase();
  return {
    [DATE_TIME_HEADER]: dateTime,
    [ADMIN_AUTHORIZATION_HEADER]: authorizationValue(keys.accessKey, hex),
  };
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: number,
    readonly kind?: string,
  ) {
    super(message);
  }
}

export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? '';
}

export function setToken(value: string): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** What a 401 asks for: the admin token, or a user's keys (access control). */
export type Credential = 'token' | 'keys';

/** Listeners told when the API asks for a token or keys (401). */
const unauthorized = new Set<(what: Credential) => void>();
export function onUnauthorized(fn: (what: Credential) => void): () => void {
  unauthorized.add(fn);
  return () => unauthorized.delete(fn);
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const t = token();
  if (t) headers.authorization = `Bearer ${t}`;
  const keys = aclKeys();
  if (keys) Object.assign(headers, await signed(keys));
  const res = await fetch(path, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const e = (json ?? {}) as { message?: string; code?: number; error?: string };
    if (res.status === 401) {
      const what: Credential = e.error === 'ACL_UNAUTHORIZED' ? 'keys' : 'token';
      for (const fn of unauthorized) fn(what);
    }
    throw new ApiError(e.message ?? `HTTP ${res.status}`, res.status, e.code, e.error);
  }
  return json as T;
}

export const api = {
  get: <T>(path: string) => call<T>('GET', path),
  post: <T>(path: string, body: unknown) => call<T>('POST', path, body),
  del: <T>(path: string) => call<T>('DELETE', path),
};

export const enc = encodeURIComponent;

// --- shapes of the answers the console uses ------------------------------------------------------

export interface Overview {
  brokerName: string;
  clusterName: string;
  version: string;
  startedAt: number;
  uptimeMs: number;
  now: number;
  topics: number;
  groups: number;
  clients: number;
  totals: { messagesIn: number; bytesIn: number; messagesOut: number; bytesOut: number };
  storage: {
    logBytes: number;
    segments: number;
    queues: number;
    diskUsedRatio: number;
    oldestStoreTimestamp: number;
    retentionMs: number;
    diskCleanupRatio: number;
    diskRefuseRatio: number;
    flush: string;
  };
  flowControl: {
    refusingWrites: boolean;
    maxReadyBacklog: number;
    refusingTopics: { topic: string; group: string; backlog: number }[];
  };
  deliveryHistory: { messages: number; capacity: number };
}

export interface TopicStat {
  topic: string;
  messageType: string;
  readQueueNums: number;
  writeQueueNums: number;
  perm: number;
  minOffset: number;
  maxOffset: number;
  messages: number;
  lastStoreTimestamp: number;
}

export type GroupConfigView = GroupInfo;

export interface GroupStat extends GroupConfigView {
  kinds: string[];
  lag: number;
  lagLatencyMs: number;
  inflight: number;
  waitingRetry: number;
  dlqSize: number;
  clients: number;
}

export type Connection = ConsumerConnection;

export interface GroupDetail extends GroupConfigView {
  topics: TopicLag[];
  dlqSize: number;
  dlqTopic: string;
  deadLetteredSinceStart: number;
  connections: Connection[];
}

export interface MessageInfo extends StoredMessageInfo {
  originTopic?: string;
  originMessageId?: string;
}

export interface DlqPage {
  group: string;
  dlqTopic: string;
  messages: MessageInfo[];
  nextOffset: number;
  maxOffset: number;
}

/** A delivery as the message view lists it: pull reads say whether the group has committed past them. */
export interface Delivery extends DeliveryRecord {
  committed?: boolean;
}
