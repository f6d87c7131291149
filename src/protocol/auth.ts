/**
 * Access control at the gRPC edge: which headers carry a call's credential, and what each RPC needs
 * of the user (RocketMQ's DefaultAuthorizationContextBuilder for gRPC), decided by broker/auth.
 *
 * | RPC | needs |
 * | --- | --- |
 * | SendMessage, EndTransaction, RecallMessage | Pub on each topic |
 * | QueryRoute | Pub or Sub on the topic |
 * | ReceiveMessage, AckMessage, ForwardMessageToDeadLetterQueue, QueryAssignment, PullMessage | Sub on the group and the topic |
 * | ChangeInvisibleDuration; Heartbeat of a consumer; NotifyClientTermination naming a group | Sub on the group |
 * | UpdateOffset | Sub or Update on the group and the topic |
 * | GetOffset | Sub or Get on the group and the topic |
 * | QueryOffset | Sub or Get on the topic |
 * | Telemetry Settings | Pub on each publishing topic; Sub on the subscription's group and topics |
 *
 * Every call is authenticated; a Telemetry stream once, when it opens (its headers are the stream's),
 * and each Settings it carries is authorized. Failures are `UNAUTHORIZED` (who) and `FORBIDDEN`
 * (what), answered in the response's status like every other outcome.
 */
import type { AccessControl, Principal } from '../broker/auth/access-control.js';
import type { AccessRequest } from '../broker/auth/authorizer.js';
import { peerAddress } from '../broker/auth/ip-range.js';
import { Action } from '../broker/auth/model.js';
import { ResourceType } from '../broker/auth/resource.js';
import { VelaError } from '../common/errors.js';
import { resourceName } from './context.js';
import type { ServerCall } from './transport/server-call.js';
import {
  WireClientType,
  type MessageQueue,
  type Resource,
  type Settings,
  type WireMessage,
} from './wire-types.js';

/** What the edge knows of a call. */
export interface CallCredentials {
  header(name: string): string;
  /** The transport's peer, `address:port`. */
  peer: string;
}

const CONSUMERS: ReadonlySet<number> = new Set([
  WireClientType.PUSH_CONSUMER,
  WireClientType.SIMPLE_CONSUMER,
  WireClientType.PULL_CONSUMER,
]);

interface Named {
  group?: Resource;
  topic?: Resource;
  message_queue?: MessageQueue;
  messages?: WireMessage[];
  client_type?: number;
  settings?: Settings;
}

/** The resources and actions an RPC's request needs. */
export function accessRequests(method: string, request: unknown, namespace: string): AccessRequest[] {
  const req = (request ?? {}) as Named;
  const name = (r: Resource | undefined, what: 'topic' | 'group'): string => {
    const n = resourceName({ namespace }, r);
    if (!r?.name) throw new VelaError('ACL_FORBIDDEN', `${method} names no ${what}`);
    return n;
  };
  const topic = (r: Resource | undefined, ...actions: Action[]): AccessRequest => ({
    type: ResourceType.TOPIC,
    name: name(r, 'topic'),
    actions,
  });
  const group = (r: Resource | undefined, ...actions: Action[]): AccessRequest => ({
    type: ResourceType.GROUP,
    name: name(r, 'group'),
    actions,
  });
  switch (method) {
    case 'SendMessage': {
      const topics = new Map<string, AccessRequest>();
      for (const m of req.messages ?? []) {
        const t = topic(m.topic, Action.PUB);
        topics.set(t.name, t);
      }
      if (topics.size === 0) throw new VelaError('ACL_FORBIDDEN', 'SendMessage carries no message');
      return [...topics.values()];
    }
    case 'EndTransaction':
    case 'RecallMessage':
      return [topic(req.topic, Action.PUB)];
    case 'QueryRoute':
      return [topic(req.topic, Action.PUB, Action.SUB)];
    case 'QueryAssignment':
    case 'AckMessage':
    case 'ForwardMessageToDeadLetterQueue':
      return [group(req.group, Action.SUB), topic(req.topic, Action.SUB)];
    case 'ReceiveMessage':
    case 'PullMessage':
      return [group(req.group, Action.SUB), topic(req.message_queue?.topic, Action.SUB)];
    case 'ChangeInvisibleDuration':
      return [group(req.group, Action.SUB)];
    case 'Heartbeat':
      return CONSUMERS.has(req.client_type ?? 0) ? [group(req.group, Action.SUB)] : [];
    case 'NotifyClientTermination':
      return req.group?.name ? [group(req.group, Action.SUB)] : [];
    case 'UpdateOffset':
      return [
        group(req.group, Action.SUB, Action.UPDATE),
        topic(req.message_queue?.topic, Action.SUB, Action.UPDATE),
      ];
    case 'GetOffset':
      return [
        group(req.group, Action.SUB, Action.GET),
        topic(req.message_queue?.topic, Action.SUB, Action.GET),
      ];
    case 'QueryOffset':
      return [topic(req.message_queue?.topic, Action.SUB, Action.GET)];
    case 'Telemetry': {
      const s = req.settings;
      if (!s) return [];
      const out: AccessRequest[] = [];
      for (const t of s.publishing?.topics ?? []) out.push(topic(t, Action.PUB));
      if (s.subscription) {
        out.push(group(s.subscription.group, Action.SUB));
        for (const e of s.subscription.subscriptions ?? []) out.push(topic(e.topic, Action.SUB));
      }
      return out;
    }
    default:
      // SyncLiteSubscription and anything newer: authenticated, no resource rule (as RocketMQ).
      return [];
  }
}

export class GrpcAccess {
  constructor(private readonly acl: AccessControl) {}

  get enabled(): boolean {
    return this.acl.enabled;
  }

  /** The principal of a call, or `UNAUTHORIZED`. */
  authenticate(call: CallCredentials): Principal {
    return this.acl.authenticate({
      authorization: call.header('authorization'),
      dateTime: call.header('x-mq-date-time'),
    });
  }

  /** `FORBIDDEN` unless the principal may make this request. */
  authorize(principal: Principal, method: string, request: unknown, namespace: string, peer: string): void {
    this.acl.authorize(principal, accessRequests(method, request, namespace), peerAddress(peer));
  }

  /** Authenticate and authorize one call, when access control is on. */
  admit(method: string, call: CallCredentials, request: unknown, namespace: string): void {
    if (!this.acl.enabled) return;
    this.authorize(this.authenticate(call), method, request, namespace, call.peer);
  }
}

/** What access control reads of a call: its headers and the client's address. */
export function credentialsOf(call: ServerCall): CallCredentials {
  return { header: (n) => call.header(n), peer: call.peer.remote };
}
