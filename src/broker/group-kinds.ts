/**
 * Which kinds of consumer a group has: message-granularity (POP: gRPC push and simple consumers) and
 * queue-granularity (pull: Remoting consumers, gRPC pull consumers). RocketMQ forbids mixing them in
 * one group, and so does good sense: POP takes messages from every queue, including those a pull
 * consumer owns, and each side keeps its own progress, so both receive the same messages. Vela serves
 * such a group anyway and says so, in the log and in consumerProgress (docs/remoting.md).
 */
import type { Broker } from './broker.js';

export interface GroupConsumerKinds {
  /** gRPC push/simple consumers are connected, or the group has POP consumption state. */
  pop: boolean;
  /** Queue-granularity consumers are registered (Remoting) or connected (gRPC pull). */
  queue: boolean;
  /** Set when both are present. */
  warning?: string;
}

export function groupConsumerKinds(broker: Broker, group: string): GroupConsumerKinds {
  const sessions = broker.sessions.list({ group });
  const pop =
    sessions.some((s) => s.clientType === 'PUSH_CONSUMER' || s.clientType === 'SIMPLE_CONSUMER') ||
    broker.consume.topicsOf(group).length > 0;
  const queue =
    broker.consumers.clients(group).length > 0 || sessions.some((s) => s.clientType === 'PULL_CONSUMER');
  return {
    pop,
    queue,
    ...(pop && queue
      ? {
          warning:
            `consumer group ${group} has both push/simple (gRPC) consumers and queue-granularity (Remoting or pull) ` +
            'consumers: they keep separate progress and both receive the same messages; use one kind per group',
        }
      : {}),
  };
}
