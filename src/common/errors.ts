/**
 * The one catalogue of Vela's named failures. Each kind names a failure once, with the
 * `apache.rocketmq.v2.Code` it is reported as and a default message; everything else about it
 * (retriable, HTTP status, gRPC status, CLI exit code) is a fact of that code in `codes.ts`. Layers
 * throw `VelaError`s built from it; the gRPC edge, the admin API and the CLI map them in one place each.
 */
import { CodeTable, codeFacts, type CodeName, type Code } from './codes.js';

interface CatalogueEntry {
  readonly code: CodeName;
  readonly message: string;
}

function entry(code: CodeName, message: string): CatalogueEntry {
  return { code, message };
}

export const ErrorCatalogue = {
  // Storage
  STORE_DISK_FULL: entry(
    'TOO_MANY_REQUESTS',
    'storage is above its disk-use refusal threshold; writes are refused until space is freed',
  ),
  STORE_CLOSED: entry('INTERNAL_SERVER_ERROR', 'the store is closed'),
  STORE_IO_ERROR: entry('INTERNAL_SERVER_ERROR', 'a storage I/O operation failed'),
  STORE_CORRUPT_RECORD: entry('MESSAGE_CORRUPTED', 'a stored record failed its checksum'),
  STORE_RECORD_TOO_LARGE: entry('PAYLOAD_TOO_LARGE', 'the record exceeds the maximum record size'),
  STORE_LOCKED: entry('PRECONDITION_FAILED', 'the data directory is locked by another process'),
  STORE_BAD_ARGUMENT: entry('BAD_REQUEST', 'invalid argument to the store'),
  // Configuration
  ILLEGAL_CONFIG: entry('BAD_REQUEST', 'illegal configuration'),
  // Names and metadata
  ILLEGAL_TOPIC: entry('ILLEGAL_TOPIC', 'illegal topic name'),
  ILLEGAL_CONSUMER_GROUP: entry('ILLEGAL_CONSUMER_GROUP', 'illegal consumer group name'),
  TOPIC_NOT_FOUND: entry('TOPIC_NOT_FOUND', 'topic not found'),
  CONSUMER_GROUP_NOT_FOUND: entry('CONSUMER_GROUP_NOT_FOUND', 'consumer group not found'),
  TOPIC_EXISTS: entry('BAD_REQUEST', 'topic already exists'),
  ILLEGAL_TOPIC_CONFIG: entry('BAD_REQUEST', 'illegal topic configuration'),
  ILLEGAL_GROUP_CONFIG: entry('BAD_REQUEST', 'illegal consumer group configuration'),
  FORBIDDEN: entry('FORBIDDEN', 'operation not permitted'),
  // Messages
  ILLEGAL_MESSAGE_TAG: entry('ILLEGAL_MESSAGE_TAG', 'illegal message tag'),
  ILLEGAL_MESSAGE_KEY: entry('ILLEGAL_MESSAGE_KEY', 'illegal message key'),
  ILLEGAL_MESSAGE_GROUP: entry('ILLEGAL_MESSAGE_GROUP', 'illegal message group'),
  ILLEGAL_MESSAGE_PROPERTY_KEY: entry('ILLEGAL_MESSAGE_PROPERTY_KEY', 'illegal message property key'),
  ILLEGAL_MESSAGE_ID: entry('ILLEGAL_MESSAGE_ID', 'illegal message id'),
  ILLEGAL_DELIVERY_TIME: entry('ILLEGAL_DELIVERY_TIME', 'illegal delivery time'),
  MESSAGE_BODY_EMPTY: entry('MESSAGE_BODY_EMPTY', 'message body is empty'),
  MESSAGE_BODY_TOO_LARGE: entry('MESSAGE_BODY_TOO_LARGE', 'message body is too large'),
  MESSAGE_PROPERTIES_TOO_LARGE: entry('MESSAGE_PROPERTIES_TOO_LARGE', 'message properties are too large'),
  MESSAGE_TYPE_CONFLICT: entry(
    'MESSAGE_PROPERTY_CONFLICT_WITH_TYPE',
    "the message's type does not match the topic's message.type",
  ),
  MESSAGE_CORRUPTED: entry('MESSAGE_CORRUPTED', 'malformed message batch'),
  // Delay (scheduled) messages and recall
  ILLEGAL_RECALL_HANDLE: entry('BAD_REQUEST', 'illegal recall handle'),
  SCHEDULED_MESSAGE_NOT_FOUND: entry('NOT_FOUND', 'no scheduled message for this recall handle'),
  RECALL_TOO_LATE: entry(
    'PRECONDITION_FAILED',
    'the message was already delivered (or is being delivered) and cannot be recalled',
  ),
  // Transactions
  TRANSACTION_RESOLVED: entry(
    'PRECONDITION_FAILED',
    'the transaction was already resolved the other way (committed, or rolled back)',
  ),
  // Consumption
  ILLEGAL_FILTER_EXPRESSION: entry('ILLEGAL_FILTER_EXPRESSION', 'illegal filter expression'),
  ILLEGAL_INVISIBLE_TIME: entry('ILLEGAL_INVISIBLE_TIME', 'illegal invisible duration'),
  ILLEGAL_POLLING_TIME: entry('ILLEGAL_POLLING_TIME', 'illegal long-polling time'),
  INVALID_RECEIPT_HANDLE: entry('INVALID_RECEIPT_HANDLE', 'invalid receipt handle'),
  MESSAGE_NOT_FOUND: entry('MESSAGE_NOT_FOUND', 'message not found'),
  ILLEGAL_OFFSET: entry('ILLEGAL_OFFSET', 'illegal offset'),
  OFFSET_NOT_FOUND: entry('OFFSET_NOT_FOUND', 'no committed offset'),
  // Clients and requests
  CLIENT_ID_REQUIRED: entry('CLIENT_ID_REQUIRED', 'the x-mq-client-id header is required'),
  UNRECOGNIZED_CLIENT_TYPE: entry('UNRECOGNIZED_CLIENT_TYPE', 'unrecognized client type'),
  BAD_REQUEST: entry('BAD_REQUEST', 'bad request'),
  INVALID_TRANSACTION_ID: entry('INVALID_TRANSACTION_ID', 'invalid transaction id'),
  NOT_IMPLEMENTED: entry('NOT_IMPLEMENTED', 'not implemented'),
  TOO_MANY_REQUESTS: entry('TOO_MANY_REQUESTS', 'too many requests'),
  // The admin HTTP API
  ADMIN_UNAUTHORIZED: entry('UNAUTHORIZED', 'the admin API needs its token (Authorization: Bearer <token>)'),
  ADMIN_FORBIDDEN_ORIGIN: entry(
    'FORBIDDEN',
    'the admin API refuses requests from another site or addressed to a foreign host name',
  ),
  ADMIN_NOT_JSON: entry('BAD_REQUEST', 'state changes must be sent as JSON (Content-Type: application/json)'),
  // Access control (ACL 2.0)
  ACL_UNAUTHORIZED: entry('UNAUTHORIZED', 'authentication failed'),
  ACL_FORBIDDEN: entry('FORBIDDEN', 'access denied'),
  ILLEGAL_ACL: entry('BAD_REQUEST', 'illegal user or ACL'),
  ACL_USER_EXISTS: entry('BAD_REQUEST', 'the user already exists'),
  ACL_USER_NOT_FOUND: entry('NOT_FOUND', 'no such user'),
  ACL_NOT_FOUND: entry('NOT_FOUND', 'no such ACL entry'),
  // Generic
  INTERNAL: entry('INTERNAL_SERVER_ERROR', 'internal error'),
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorKind = keyof typeof ErrorCatalogue;

export class VelaError extends Error {
  override readonly name = 'VelaError';
  readonly kind: ErrorKind;
  /** The `apache.rocketmq.v2.Code` number. */
  readonly code: Code;
  readonly codeName: CodeName;

  constructor(kind: ErrorKind, detail?: string, options?: { cause?: unknown }) {
    const e = ErrorCatalogue[kind];
    super(detail ? `${e.message}: ${detail}` : e.message, options);
    this.kind = kind;
    this.codeName = e.code;
    this.code = CodeTable[e.code].code;
  }

  /** Whether another attempt may succeed (a fact of the code). */
  get retriable(): boolean {
    return codeFacts(this.code).retriable;
  }
}

export function isVelaError(err: unknown, kind?: ErrorKind): err is VelaError {
  return err instanceof VelaError && (kind === undefined || err.kind === kind);
}
