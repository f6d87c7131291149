/** QueryRoute and QueryAssignment: where a topic lives (here) and which queues a push consumer polls. */
import type { Broker } from '../../broker/broker.js';
import { Perm, type TopicConfig } from '../../broker/metadata.js';
import { checkGroupName, checkTopicName } from '../../broker/names.js';
import { VelaError } from '../../common/errors.js';
import { fromInternal } from '../namespace.js';
import { resourceName, type CallContext } from '../context.js';
import { OK_STATUS } from '../status.js';
import {
  WireAddressScheme,
  WireMessageType,
  WirePermission,
  type Endpoints,
  type MessageQueue,
  type Resource,
} from '../wire-types.js';

export interface RouteEndpoint {
  /** The address clients should dial back, when the request does not say. */
  advertised: Endpoints;
}

const ACCEPTS: Record<TopicConfig['messageType'], number[]> = {
  NORMAL: [WireMessageType.NORMAL],
  FIFO: [WireMessageType.FIFO],
  DELAY: [WireMessageType.DELAY],
  TRANSACTION: [WireMessageType.TRANSACTION],
  MIXED: [WireMessageType.NORMAL, WireMessageType.FIFO, WireMessageType.DELAY, WireMessageType.TRANSACTION],
};

/** The endpoints the client used to reach us are the ones it can dial back (protocol.md §11). */
function brokerEndpoints(requested: Endpoints | undefined, route: RouteEndpoint): Endpoints {
  const addrs = requested?.addresses?.filter((a) => a.host && a.port) ?? [];
  return addrs.length > 0
    ? { scheme: requested?.scheme || WireAddressScheme.IPv4, addresses: addrs }
    : route.advertised;
}

function queue(topic: TopicConfig, id: number, broker: Broker, endpoints: Endpoints): MessageQueue {
  const { namespace, name } = fromInternal(topic.name);
  const readable = id < topic.readQueueNums && (topic.perm & Perm.READ) !== 0;
  const writable = id < topic.writeQueueNums && (topic.perm & Perm.WRITE) !== 0;
  return {
    topic: { resource_namespace: namespace, name },
    id,
    permission:
      readable && writable
        ? WirePermission.READ_WRITE
        : readable
          ? WirePermission.READ
          : writable
            ? WirePermission.WRITE
            : WirePermission.NONE,
    broker: { name: broker.brokerName, id: 0, endpoints },
    accept_message_types: ACCEPTS[topic.messageType],
  };
}

async function requireTopic(broker: Broker, name: string, autoCreate: boolean): Promise<TopicConfig> {
  checkTopicName(fromInternal(name).name);
  const t = broker.topics.get(name) ?? (autoCreate ? await broker.topics.upsert(name, {}) : undefined);
  if (!t)
    throw new VelaError('TOPIC_NOT_FOUND', `${name} (create it with: vela admin updateTopic -t ${name})`);
  return t;
}

export async function queryRoute(
  broker: Broker,
  ctx: CallContext,
  req: { topic?: Resource; endpoints?: Endpoints },
  route: RouteEndpoint,
  autoCreate: boolean,
): Promise<{ status: typeof OK_STATUS; message_queues: MessageQueue[] }> {
  const topic = await requireTopic(broker, resourceName(ctx, req.topic), autoCreate);
  const endpoints = brokerEndpoints(req.endpoints, route);
  const n = Math.max(topic.readQueueNums, topic.writeQueueNums);
  return {
    status: OK_STATUS,
    message_queues: Array.from({ length: n }, (_, i) => queue(topic, i, broker, endpoints)),
  };
}

export async function queryAssignment(
  broker: Broker,
  ctx: CallContext,
  req: { topic?: Resource; group?: Resource; endpoints?: Endpoints },
  route: RouteEndpoint,
): Promise<{ status: typeof OK_STATUS; assignments: { message_queue: MessageQueue }[] }> {
  const groupName = resourceName(ctx, req.group);
  checkGroupName(groupName);
  await broker.consume.requireGroup(groupName);
  const topic = await requireTopic(broker, resourceName(ctx, req.topic), false);
  if ((topic.perm & Perm.READ) === 0) throw new VelaError('FORBIDDEN', `no readable queue in ${topic.name}`);
  broker.sessions.touch(ctx.clientId);
  const endpoints = brokerEndpoints(req.endpoints, route);
  if (broker.sessions.get(ctx.clientId)?.clientType === 'PULL_CONSUMER') {
    // Queue-granularity consumption: the queues this consumer owns in its group.
    const owned = await broker.pull.assignment(groupName, topic.name, ctx.clientId);
    return {
      status: OK_STATUS,
      assignments: owned.map((id) => ({ message_queue: queue(topic, id, broker, endpoints) })),
    };
  }
  // Message-granularity consumption: one assignment for the whole broker (queue -1): every consumer
  // of the group receives from every queue, and the server balances message by message.
  const q = queue(topic, 0, broker, endpoints);
  q.id = -1;
  q.permission = WirePermission.READ_WRITE;
  return { status: OK_STATUS, assignments: [{ message_queue: q }] };
}
