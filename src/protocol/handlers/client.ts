/**
 * Client lifecycle: Telemetry (the Settings exchange), Heartbeat and NotifyClientTermination.
 *
 * Every Settings command is answered at once on the same stream with the client's settings merged
 * with ours (protocol.md §7.2): producers always get an exponential backoff policy and a
 * `max_body_size` (the Node client crashes or refuses every send without them); consumers get the
 * batch size, long-polling time, FIFO flag and the group's retry policy. The server never ends a
 * Telemetry stream on its own, except when shutting down.
 */
import type { Broker } from '../../broker/broker.js';
import { checkClientProperties, checkGroupName } from '../../broker/names.js';
import { CONSUMER_NAME_PROPERTY } from '../../broker/pull.js';
import type { GroupConfig } from '../../broker/metadata.js';
import { ClientType } from '../../broker/sessions.js';
import { VelaError } from '../../common/errors.js';
import { fromMillis, toMillis } from '../codec.js';
import { resourceName, type CallContext } from '../context.js';
import { fromInternal } from '../namespace.js';
import { OK_STATUS } from '../status.js';
import {
  WireClientType,
  type RetryPolicyWire,
  type Resource,
  type Settings,
  type TelemetryCommand,
} from '../wire-types.js';

const CLIENT_TYPES: Record<number, ClientType> = {
  [WireClientType.PRODUCER]: ClientType.PRODUCER,
  [WireClientType.PUSH_CONSUMER]: ClientType.PUSH_CONSUMER,
  [WireClientType.SIMPLE_CONSUMER]: ClientType.SIMPLE_CONSUMER,
  [WireClientType.PULL_CONSUMER]: ClientType.PULL_CONSUMER,
  [WireClientType.LITE_PUSH_CONSUMER]: ClientType.LITE_PUSH_CONSUMER,
  [WireClientType.LITE_SIMPLE_CONSUMER]: ClientType.LITE_SIMPLE_CONSUMER,
};

const LANGUAGES = [
  'UNSPECIFIED',
  'JAVA',
  'CPP',
  'DOT_NET',
  'GOLANG',
  'RUST',
  'PYTHON',
  'PHP',
  'NODE_JS',
  'RUBY',
  'OBJECTIVE_C',
  'DART',
  'KOTLIN',
];

/** Producer retries, as the seed says: exponential, 1 s initial, ×1.6, at most 120 s. */
const PRODUCER_BACKOFF: RetryPolicyWire = {
  max_attempts: 3,
  exponential_backoff: { initial: fromMillis(1000), max: fromMillis(120_000), multiplier: 1.6 },
};

const RECEIVE_BATCH_SIZE = 32;

/**
 * The group's retry policy, in the form this client understands (protocol.md §7.2, §12). The server
 * enforces the real policy whatever the client does with it; this only keeps clients working:
 * - FIFO groups retry at a fixed interval: exponential with multiplier 1 (the FIFO push consumer
 *   retries locally `max_attempts` times, then forwards to the DLQ);
 * - the Node client understands only exponential backoff (a customized one leaves it without a
 *   policy, so its FIFO consumer dead-letters at the first failure): it gets the exponential curve
 *   closest to the table;
 * - everyone else gets the policy as it is.
 */
export function consumerBackoff(g: GroupConfig, language: string | undefined): RetryPolicyWire {
  const max_attempts = g.retryMaxTimes + 1;
  const p = g.retryPolicy;
  if (g.consumeMessageOrderly) {
    const every = fromMillis(g.fifoRetryIntervalMs);
    return { max_attempts, exponential_backoff: { initial: every, max: every, multiplier: 1 } };
  }
  if (p.type === 'EXPONENTIAL') {
    return {
      max_attempts,
      exponential_backoff: {
        initial: fromMillis(p.initial),
        max: fromMillis(p.max),
        multiplier: p.multiplier,
      },
    };
  }
  if (language === 'NODE_JS') {
    const first = p.next[0] ?? 1000;
    const second = p.next[1] ?? first * 2;
    const multiplier = first > 0 ? Math.max(1, second / first) : 2;
    return {
      max_attempts,
      exponential_backoff: {
        initial: fromMillis(first),
        max: fromMillis(p.next.at(-1) ?? first),
        multiplier,
      },
    };
  }
  return { max_attempts, customized_backoff: { next: p.next.map(fromMillis) } };
}

/**
 * The long poll a consumer is told: what it asked for, at most the longest poll the broker holds
 * (the official proxy always sends its maximum). Clients size their deadlines and shutdown waits
 * from it: the Go push consumer's GracefulStop can wait request timeout + this value.
 */
function longPollingMs(s: Settings, maxPollMs: number): number {
  const askedMs = toMillis(s.subscription?.long_polling_timeout);
  return askedMs !== undefined && askedMs > 0 ? Math.min(askedMs, maxPollMs) : maxPollMs;
}

/** Answer one Settings command: record the session and build the merged reply. */
export async function settingsReply(
  broker: Broker,
  ctx: CallContext,
  s: Settings,
): Promise<TelemetryCommand> {
  const clientType = CLIENT_TYPES[s.client_type ?? 0];
  if (!clientType) throw new VelaError('UNRECOGNIZED_CLIENT_TYPE', String(s.client_type));
  if (s.client_properties) checkClientProperties(s.client_properties, CONSUMER_NAME_PROPERTY);
  const ua = s.user_agent ?? {};
  const common = {
    clientType,
    ...(ua.language !== undefined ? { language: LANGUAGES[ua.language] ?? String(ua.language) } : {}),
    ...(ua.version ? { version: ua.version } : {}),
    ...(ua.hostname ? { hostname: ua.hostname } : {}),
    remoteAddress: ctx.peer,
    connectionId: ctx.connectionId,
    telemetryOpen: true,
    ...(s.client_properties && Object.keys(s.client_properties).length
      ? { properties: { ...s.client_properties } }
      : {}),
  };
  if (clientType === ClientType.PRODUCER) {
    const topics = (s.publishing?.topics ?? []).map((t: Resource) => resourceName(ctx, t));
    broker.sessions.upsert(ctx.clientId, { ...common, topics });
    return {
      status: OK_STATUS,
      settings: {
        ...s,
        backoff_policy: PRODUCER_BACKOFF,
        publishing: {
          ...s.publishing,
          max_body_size: broker.config.produce.maxBodySize,
          validate_message_type: true,
        },
        metric: { on: false },
      },
    };
  }
  const groupName = resourceName(ctx, s.subscription?.group);
  checkGroupName(fromInternal(groupName).name);
  const group = await broker.consume.requireGroup(groupName);
  const topics = (s.subscription?.subscriptions ?? []).map((e) => resourceName(ctx, e.topic));
  broker.sessions.upsert(ctx.clientId, { ...common, group: groupName, topics });
  return {
    status: OK_STATUS,
    settings: {
      ...s,
      backoff_policy: consumerBackoff(group, common.language),
      subscription: {
        ...s.subscription,
        fifo: group.consumeMessageOrderly,
        // A push consumer's receive loop (one per broker for a standard group) asks for this many,
        // at most its free cache: per round trip it bounds the official clients' rate.
        receive_batch_size:
          clientType === ClientType.PUSH_CONSUMER
            ? Math.max(RECEIVE_BATCH_SIZE, broker.config.consume.maxPushBatch)
            : RECEIVE_BATCH_SIZE,
        long_polling_timeout: fromMillis(longPollingMs(s, broker.config.consume.maxPollMs)),
      },
      metric: { on: false },
    },
  };
}

export function heartbeat(
  broker: Broker,
  ctx: CallContext,
  req: { group?: Resource; client_type?: number },
): { status: typeof OK_STATUS } {
  const clientType = CLIENT_TYPES[req.client_type ?? 0];
  const known = broker.sessions.get(ctx.clientId);
  broker.sessions.upsert(ctx.clientId, {
    // A heartbeat never moves a session to another connection (its Telemetry stream decides).
    ...(known?.connectionId === undefined ? { connectionId: ctx.connectionId } : {}),
    ...(clientType ? { clientType } : {}),
    ...(req.group?.name ? { group: resourceName(ctx, req.group) } : {}),
  });
  return { status: OK_STATUS };
}

export async function notifyClientTermination(
  broker: Broker,
  ctx: CallContext,
): Promise<{ status: typeof OK_STATUS }> {
  const session = broker.sessions.get(ctx.clientId);
  // Only the connection a session belongs to can end it: another client sending this client's id
  // gets an OK that changes nothing.
  if (session && !broker.sessions.end(ctx.clientId, ctx.connectionId)) return { status: OK_STATUS };
  // Also when the client never opened a session: whatever it holds goes back to its group now.
  await broker.consume.releaseClient(ctx.clientId);
  return { status: OK_STATUS };
}
