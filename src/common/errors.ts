/**
 * The one error catalogue. Each entry names a failure once: the `apache.rocketmq.v2.Code` the gRPC edge
 * answers with, whether a client may retry, and a default message. Layers throw `VelaError`s built
 * from it; the protocol edge and the SDK map codes through it in one place.
 */
import { Code } from './codes.js';

interface CatalogueEntry {
  readonly code: Code;
  readonly retriable: boolean;
  readonly message: string;
}

function entry(code: Code, retriable: boolean, message: string): CatalogueEntry {
  return { code, retriable, message };
}

export const ErrorCatalogue = {
  // Storage
  STORE_DISK_FULL: entry(
    Code.TOO_MANY_REQUESTS,
    true,
    'storage is above its disk-use refusal threshold; writes are refused until space is freed',
  ),
  STORE_CLOSED: entry(Code.INTERNAL_SERVER_ERROR, true, 'the store is closed'),
  STORE_IO_ERROR: entry(Code.INTERNAL_SERVER_ERROR, true, 'a storage I/O operation failed'),
  STORE_CORRUPT_RECORD: entry(Code.MESSAGE_CORRUPTED, false, 'a stored record failed its checksum'),
  STORE_RECORD_TOO_LARGE: entry(Code.PAYLOAD_TOO_LARGE, false, 'the record exceeds the maximum record size'),
  STORE_LOCKED: entry(Code.INTERNAL_SERVER_ERROR, false, 'the data directory is locked by another process'),
  STORE_BAD_ARGUMENT: entry(Code.BAD_REQUEST, false, 'invalid argument to the store'),
  // Names and metadata
  ILLEGAL_TOPIC: entry(Code.ILLEGAL_TOPIC, false, 'illegal topic name'),
  ILLEGAL_CONSUMER_GROUP: entry(Code.ILLEGAL_CONSUMER_GROUP, false, 'illegal consumer group name'),
  TOPIC_NOT_FOUND: entry(Code.TOPIC_NOT_FOUND, false, 'topic not found'),
  CONSUMER_GROUP_NOT_FOUND: entry(Code.CONSUMER_GROUP_NOT_FOUND, false, 'consumer group not found'),
  TOPIC_EXISTS: entry(Code.BAD_REQUEST, false, 'topic already exists'),
  ILLEGAL_TOPIC_CONFIG: entry(Code.BAD_REQUEST, false, 'illegal topic configuration'),
  ILLEGAL_GROUP_CONFIG: entry(Code.BAD_REQUEST, false, 'illegal consumer group configuration'),
  FORBIDDEN: entry(Code.FORBIDDEN, false, 'operation not permitted'),
  // Messages
  ILLEGAL_MESSAGE_TAG: entry(Code.ILLEGAL_MESSAGE_TAG, false, 'illegal message tag'),
  ILLEGAL_MESSAGE_KEY: entry(Code.ILLEGAL_MESSAGE_KEY, false, 'illegal message key'),
  ILLEGAL_MESSAGE_GROUP: entry(Code.ILLEGAL_MESSAGE_GROUP, false, 'illegal message group'),
  ILLEGAL_MESSAGE_PROPERTY_KEY: entry(
    Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
    false,
    'illegal message property key',
  ),
  ILLEGAL_MESSAGE_ID: entry(Code.ILLEGAL_MESSAGE_ID, false, 'illegal message id'),
  ILLEGAL_DELIVERY_TIME: entry(Code.ILLEGAL_DELIVERY_TIME, false, 'illegal delivery time'),
  MESSAGE_BODY_EMPTY: entry(Code.MESSAGE_BODY_EMPTY, false, 'message body is empty'),
  MESSAGE_BODY_TOO_LARGE: entry(Code.MESSAGE_BODY_TOO_LARGE, false, 'message body is too large'),
  MESSAGE_PROPERTIES_TOO_LARGE: entry(
    Code.MESSAGE_PROPERTIES_TOO_LARGE,
    false,
    'message properties are too large',
  ),
  MESSAGE_TYPE_CONFLICT: entry(
    Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
    false,
    "the message's type does not match the topic's message.type",
  ),
  MESSAGE_CORRUPTED: entry(Code.MESSAGE_CORRUPTED, false, 'malformed message batch'),
  // Consumption
  ILLEGAL_FILTER_EXPRESSION: entry(Code.ILLEGAL_FILTER_EXPRESSION, false, 'illegal filter expression'),
  ILLEGAL_INVISIBLE_TIME: entry(Code.ILLEGAL_INVISIBLE_TIME, false, 'illegal invisible duration'),
  ILLEGAL_POLLING_TIME: entry(Code.ILLEGAL_POLLING_TIME, false, 'illegal long-polling time'),
  INVALID_RECEIPT_HANDLE: entry(Code.INVALID_RECEIPT_HANDLE, false, 'invalid receipt handle'),
  MESSAGE_NOT_FOUND: entry(Code.MESSAGE_NOT_FOUND, false, 'message not found'),
  ILLEGAL_OFFSET: entry(Code.ILLEGAL_OFFSET, false, 'illegal offset'),
  OFFSET_NOT_FOUND: entry(Code.OFFSET_NOT_FOUND, false, 'no committed offset'),
  // Clients and requests
  CLIENT_ID_REQUIRED: entry(Code.CLIENT_ID_REQUIRED, false, 'the x-mq-client-id header is required'),
  UNRECOGNIZED_CLIENT_TYPE: entry(Code.UNRECOGNIZED_CLIENT_TYPE, false, 'unrecognized client type'),
  BAD_REQUEST: entry(Code.BAD_REQUEST, false, 'bad request'),
  INVALID_TRANSACTION_ID: entry(Code.INVALID_TRANSACTION_ID, false, 'invalid transaction id'),
  NOT_IMPLEMENTED: entry(Code.NOT_IMPLEMENTED, false, 'not implemented'),
  TOO_MANY_REQUESTS: entry(Code.TOO_MANY_REQUESTS, true, 'too many requests'),
  // Generic
  INTERNAL: entry(Code.INTERNAL_SERVER_ERROR, true, 'internal error'),
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorKind = keyof typeof ErrorCatalogue;

export class VelaError extends Error {
  override readonly name = 'VelaError';
  readonly kind: ErrorKind;
  readonly code: Code;
  readonly retriable: boolean;

  constructor(kind: ErrorKind, detail?: string, options?: { cause?: unknown }) {
    const e = ErrorCatalogue[kind];
    super(detail ? `${e.message}: ${detail}` : e.message, options);
    this.kind = kind;
    this.code = e.code;
    this.retriable = e.retriable;
  }
}

export function isVelaError(err: unknown, kind?: ErrorKind): err is VelaError {
  return err instanceof VelaError && (kind === undefined || err.kind === kind);
}
