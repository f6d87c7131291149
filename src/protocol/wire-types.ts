/**
 * TypeScript shapes of the `apache.rocketmq.v2` messages Vela reads and writes (snake_case, as the
 * codec produces them). Only the fields used are listed; the .proto files are the full truth.
 */
import type { PbTimestamp } from './codec.js';

export const WireCode = { OK: 20000 } as const;

export const WireMessageType = {
  UNSPECIFIED: 0,
  NORMAL: 1,
  FIFO: 2,
  DELAY: 3,
  TRANSACTION: 4,
  LITE: 5,
  PRIORITY: 6,
} as const;
export const WireClientType = {
  UNSPECIFIED: 0,
  PRODUCER: 1,
  PUSH_CONSUMER: 2,
  SIMPLE_CONSUMER: 3,
  PULL_CONSUMER: 4,
  LITE_PUSH_CONSUMER: 5,
  LITE_SIMPLE_CONSUMER: 6,
} as const;
export const WirePermission = { NONE: 1, READ: 2, WRITE: 3, READ_WRITE: 4 } as const;
export const WireFilterType = { UNSPECIFIED: 0, TAG: 1, SQL: 2 } as const;
export const WireEncoding = { UNSPECIFIED: 0, IDENTITY: 1, GZIP: 2 } as const;
export const WireTransactionResolution = { UNSPECIFIED: 0, COMMIT: 1, ROLLBACK: 2 } as const;
export const WireTransactionSource = { UNSPECIFIED: 0, CLIENT: 1, SERVER_CHECK: 2 } as const;
export const WireDigestType = { CRC32: 1, MD5: 2, SHA1: 3 } as const;
export const WireAddressScheme = { IPv4: 1, IPv6: 2, DOMAIN_NAME: 3 } as const;

export interface Status {
  code: number;
  message: string;
}
export interface Resource {
  resource_namespace?: string;
  name?: string;
}
export interface Address {
  host?: string;
  port?: number;
}
export interface Endpoints {
  scheme?: number;
  addresses?: Address[];
}
export interface Duration {
  seconds?: number;
  nanos?: number;
}
export interface SystemProperties {
  tag?: string;
  keys?: string[];
  message_id?: string;
  body_digest?: { type: number; checksum: string };
  body_encoding?: number;
  message_type?: number;
  born_timestamp?: PbTimestamp;
  born_host?: string;
  store_timestamp?: PbTimestamp;
  store_host?: string;
  delivery_timestamp?: PbTimestamp;
  receipt_handle?: string;
  queue_id?: number;
  queue_offset?: number;
  invisible_duration?: Duration;
  delivery_attempt?: number;
  message_group?: string;
  trace_context?: string;
  orphaned_transaction_recovery_duration?: Duration;
  dead_letter_queue?: { topic: string; message_id: string };
  lite_topic?: string;
  priority?: number;
}
export interface WireMessage {
  topic?: Resource;
  user_properties?: Record<string, string>;
  system_properties?: SystemProperties;
  body?: Buffer;
}
export interface MessageQueue {
  topic: Resource;
  id: number;
  permission: number;
  broker: { name: string; id: number; endpoints: Endpoints };
  accept_message_types: number[];
}
export interface FilterExpression {
  type?: number;
  expression?: string;
}
export interface RetryPolicyWire {
  max_attempts: number;
  exponential_backoff?: { initial: Duration; max: Duration; multiplier: number };
  customized_backoff?: { next: Duration[] };
}
export interface Settings {
  client_type?: number;
  access_point?: Endpoints;
  backoff_policy?: RetryPolicyWire;
  request_timeout?: Duration;
  publishing?: { topics?: Resource[]; max_body_size?: number; validate_message_type?: boolean };
  subscription?: {
    group?: Resource;
    subscriptions?: { topic?: Resource; expression?: FilterExpression }[];
    fifo?: boolean;
    receive_batch_size?: number;
    long_polling_timeout?: Duration;
  };
  user_agent?: { language?: number; version?: string; platform?: string; hostname?: string };
  metric?: { on: boolean };
  client_properties?: Record<string, string>;
  pub_sub?: string;
}
export interface TelemetryCommand {
  status?: Status;
  settings?: Settings;
  recover_orphaned_transaction_command?: { message: WireMessage; transaction_id: string };
  thread_stack_trace?: unknown;
  verify_message_result?: unknown;
  command?: string;
}
