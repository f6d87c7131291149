/**
 * A `MessageQueue` as the broker's answers carry it (QueryRoute, QueryAssignment), with the fields
 * proto3 leaves off the wire at their defaults filled in. Queue 0 comes without its id (as a queue
 * without permissions or accepted message types comes without those), so the decoded object lacked
 * it, and the producer's SendMessage writer (send-encoder.ts), which takes only an integer queue id,
 * left every request for queue 0 to protobufjs.
 */
import type { MessageQueue } from '../protocol/wire-types.js';

/**
 * A decoded queue with its numbers present (0 when absent). `topic` and `broker` stay as decoded:
 * callers skip a queue whose broker has no endpoints.
 */
export function withQueueDefaults(q: MessageQueue): MessageQueue {
  return {
    topic: q.topic,
    id: q.id ?? 0,
    permission: q.permission ?? 0,
    broker: q.broker,
    accept_message_types: q.accept_message_types ?? [],
  };
}
