/**
 * Access control at the Remoting edge (with `aclEnabled`): the credential a request carries, as
 * RocketMQ's `AclClientRPCHook` signs it, and what each request code needs of the user, as RocketMQ's
 * `DefaultAuthorizationContextBuilder` asks for Remoting requests; decided by broker/auth.
 *
 * The signature: `AccessKey` and `Signature` extFields; the Base64 HMAC-SHA1, keyed with the user's
 * secret key, of the values of every other extField in the order of their names (AccessKey
 * included), then the body.
 *
 * | Request | needs |
 * | --- | --- |
 * | SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE | Pub on the topic (to `%RETRY%<g>`: Sub on the group) |
 * | END_TRANSACTION | Pub on the topic it names |
 * | PULL_MESSAGE, LITE_PULL_MESSAGE | Sub on the group and the topic (retry topics: the group) |
 * | HEART_BEAT | Sub on each consumer group and each topic it subscribes |
 * | CONSUMER_SEND_MSG_BACK, UNREGISTER_CLIENT, LOCK/UNLOCK_BATCH_MQ, CHECK_CLIENT_CONFIG | Sub on the group (and the locked topics) |
 * | GET_CONSUMER_LIST_BY_GROUP | Sub or Get on the group |
 * | QUERY_CONSUMER_OFFSET / UPDATE_CONSUMER_OFFSET | Sub or Get / Sub or Update on the group and the topic |
 * | GET_ROUTEINFO_BY_TOPIC | Pub, Sub or Get on the topic (`%RETRY%<g>`: Sub or Get on the group) |
 * | GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, QUERY_MESSAGE, VIEW_MESSAGE_BY_ID with a topic | Sub or Get on the topic |
 * | every other code (mqadmin, the Dashboard) | a super user |
 *
 * Failures are answered NO_PERMISSION, with the reason in the remark.
 */
import type { Principal } from '../broker/auth/access-control.js';
import type { AccessRequest } from '../broker/auth/authorizer.js';
import { peerAddress } from '../broker/auth/ip-range.js';
import { Action } from '../broker/auth/model.js';
import { ResourceType } from '../broker/auth/resource.js';
import type { Broker } from '../broker/broker.js';
import { groupOfRetryTopic } from '../broker/send-back.js';
import { VelaError } from '../common/errors.js';
import { MQVersion, RequestCode as R } from './codes.js';
import { parseBody } from './fastjson.js';
import type { RemotingCommand } from './frame.js';

const ACCESS_KEY = 'AccessKey';
const SIGNATURE = 'Signature';
/** Left out of the signed content by clients up to V4_9_3 (`MixAll.UNIQUE_MSG_QUERY_FLAG`). */
const UNIQUE_MSG_QUERY_FLAG = '_UNIQUE_KEY_QUERY';
const V4_9_3 = MQVersion.V4_9_4 - 1;

/** What the client signed: the other extFields' values, ordered by name, then the body. */
export function signedContent(cmd: RemotingCommand): Buffer {
  const names = Object.keys(cmd.extFields)
    .filter((k) => k !== SIGNATURE && !(cmd.version <= V4_9_3 && k === UNIQUE_MSG_QUERY_FLAG))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let text = '';
  for (const k of names) text += cmd.extFields[k];
  const head = Buffer.from(text, 'utf8');
  return cmd.body && cmd.body.length > 0 ? Buffer.concat([head, cmd.body]) : head;
}

const topicNeeds = (name: string | undefined, ...actions: Action[]): AccessRequest[] => {
  if (!name) return [];
  const group = groupOfRetryTopic(name);
  return group !== undefined
    ? [{ type: ResourceType.GROUP, name: group, actions }]
    : [{ type: ResourceType.TOPIC, name, actions }];
};
const groupNeeds = (name: string | undefined, ...actions: Action[]): AccessRequest[] =>
  name ? [{ type: ResourceType.GROUP, name: groupOfRetryTopic(name) ?? name, actions }] : [];

interface HeartbeatBody {
  consumerDataSet?: { groupName?: string; subscriptionDataSet?: { topic?: string }[] }[];
}
interface LockBody {
  consumerGroup?: string;
  group?: string;
  mqSet?: { topic?: string }[];
}

/** What a request needs of the user; `'super'` when only a super user may make it. */
export function accessRequestsOf(cmd: RemotingCommand): AccessRequest[] | 'super' {
  const f = cmd.extFields;
  const { PUB, SUB, GET, UPDATE } = Action;
  switch (cmd.code) {
    case R.GET_ROUTEINFO_BY_TOPIC:
      return groupOfRetryTopic(f.topic ?? '') !== undefined
        ? groupNeeds(f.topic, SUB, GET)
        : topicNeeds(f.topic, PUB, SUB, GET);
    case R.SEND_MESSAGE:
    case R.SEND_MESSAGE_V2:
    case R.SEND_BATCH_MESSAGE: {
      const v2 = cmd.code !== R.SEND_MESSAGE;
      const topic = v2 ? f.b : f.topic;
      const producerGroup = v2 ? f.a : f.producerGroup;
      if (topic && groupOfRetryTopic(topic) !== undefined) return groupNeeds(producerGroup || topic, SUB);
      return topicNeeds(topic, PUB);
    }
    case R.END_TRANSACTION:
      return topicNeeds(f.topic, PUB);
    case R.CONSUMER_SEND_MSG_BACK:
      return groupNeeds(f.group, SUB);
    case R.PULL_MESSAGE:
    case R.LITE_PULL_MESSAGE:
      return [
        ...(groupOfRetryTopic(f.topic ?? '') === undefined ? topicNeeds(f.topic, SUB) : []),
        ...groupNeeds(f.consumerGroup, SUB),
      ];
    case R.QUERY_MESSAGE:
    case R.VIEW_MESSAGE_BY_ID:
    case R.GET_MAX_OFFSET:
    case R.GET_MIN_OFFSET:
    case R.SEARCH_OFFSET_BY_TIMESTAMP:
      return f.topic ? topicNeeds(f.topic, SUB, GET) : 'super';
    case R.HEART_BEAT: {
      const hb = parseBody<HeartbeatBody>(cmd.body, 'HeartbeatData');
      const out: AccessRequest[] = [];
      for (const c of hb.consumerDataSet ?? []) {
        out.push(...groupNeeds(c.groupName, SUB));
        for (const s of c.subscriptionDataSet ?? []) {
          if (s.topic && groupOfRetryTopic(s.topic) === undefined) out.push(...topicNeeds(s.topic, SUB));
        }
      }
      return out;
    }
    case R.UNREGISTER_CLIENT:
      return groupNeeds(f.consumerGroup, SUB);
    case R.GET_CONSUMER_LIST_BY_GROUP:
      return groupNeeds(f.consumerGroup, SUB, GET);
    case R.QUERY_CONSUMER_OFFSET:
      return [...topicNeeds(f.topic, SUB, GET), ...groupNeeds(f.consumerGroup, SUB, GET)];
    case R.UPDATE_CONSUMER_OFFSET:
      return [...topicNeeds(f.topic, SUB, UPDATE), ...groupNeeds(f.consumerGroup, SUB, UPDATE)];
    case R.LOCK_BATCH_MQ:
    case R.UNLOCK_BATCH_MQ:
    case R.CHECK_CLIENT_CONFIG: {
      const body = parseBody<LockBody>(cmd.body, 'request body');
      const out = groupNeeds(body.consumerGroup ?? body.group, SUB);
      for (const mq of body.mqSet ?? []) out.push(...topicNeeds(mq.topic, SUB));
      return out;
    }
    default:
      return 'super';
  }
}

/**
 * Authenticate and authorize a request; throws `ACL_UNAUTHORIZED` / `ACL_FORBIDDEN` (and a parse
 * error for a body it must read). Only called with access control on.
 */
export function checkAccess(broker: Broker, cmd: RemotingCommand, remoteAddress: string): Principal {
  const acl = broker.acl;
  const principal = acl.authenticateContent(
    cmd.extFields[ACCESS_KEY] ?? '',
    cmd.extFields[SIGNATURE] ?? '',
    signedContent(cmd),
  );
  const needs = accessRequestsOf(cmd);
  if (needs === 'super') acl.requireSuper(principal);
  else acl.authorize(principal, needs, peerAddress(remoteAddress));
  return principal;
}

export function isAclFailure(err: unknown): err is VelaError {
  return err instanceof VelaError && (err.kind === 'ACL_UNAUTHORIZED' || err.kind === 'ACL_FORBIDDEN');
}
