/**
 * The `apache.rocketmq.v2.Code` status codes and everything Vela knows about each one, in one table:
 * its number (never to change: official clients switch on it), whether another attempt may succeed,
 * the HTTP status the admin API answers with, the gRPC transport status it corresponds to when a
 * failure cannot travel in a response body, the `vela` command's exit code, and what it means.
 *
 * The gRPC edge, the admin HTTP API, the SDK's typed errors, the CLI and `docs/errors.md` all derive
 * from this table (`npm run docs` regenerates the page; a test keeps them equal).
 */

/** gRPC transport status codes (the numbers of grpc.status), for failures outside a response body. */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatus = (typeof GrpcStatus)[keyof typeof GrpcStatus];

/** Exit codes of the `vela` command. */
export const ExitCode = {
  OK: 0,
  /** The operation was refused and will be refused again (not found, illegal argument …). */
  FAILURE: 1,
  /** The command line, an environment variable or the config file is wrong. */
  USAGE: 2,
  /** The broker is busy, unreachable or failed internally: trying again later may succeed. */
  RETRY_LATER: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface CodeFacts {
  /** The wire number. */
  readonly code: number;
  /** Another attempt of the same request may succeed. */
  readonly retriable: boolean;
  /** The admin HTTP API's status for it. */
  readonly http: number;
  /** The gRPC status a transport-level failure of this kind carries. */
  readonly grpc: GrpcStatus;
  /** The `vela` command's exit code when an operation fails with it. */
  readonly exit: ExitCode;
  /** What it means, for people. */
  readonly meaning: string;
}

function facts(code: number, retriable: boolean, http: number, grpc: GrpcStatus, meaning: string): CodeFacts {
  const exit = code < 40000 ? ExitCode.OK : retriable ? ExitCode.RETRY_LATER : ExitCode.FAILURE;
  return Object.freeze({ code, retriable, http, grpc, exit, meaning });
}

const G = GrpcStatus;

/** Every code, by name. */
export const CodeTable = {
  CODE_UNSPECIFIED: facts(0, false, 500, G.UNKNOWN, 'no code was given (a broken response)'),
  OK: facts(20000, false, 200, G.OK, 'success'),
  MULTIPLE_RESULTS: facts(30000, false, 200, G.OK, 'a batch whose entries have different outcomes'),
  BAD_REQUEST: facts(40000, false, 400, G.INVALID_ARGUMENT, 'the request is malformed or invalid'),
  ILLEGAL_ACCESS_POINT: facts(40001, false, 400, G.INVALID_ARGUMENT, 'illegal access point'),
  ILLEGAL_TOPIC: facts(40002, false, 400, G.INVALID_ARGUMENT, 'illegal or reserved topic name'),
  ILLEGAL_CONSUMER_GROUP: facts(
    40003,
    false,
    400,
    G.INVALID_ARGUMENT,
    'illegal or reserved consumer group name',
  ),
  ILLEGAL_MESSAGE_TAG: facts(40004, false, 400, G.INVALID_ARGUMENT, 'illegal message tag'),
  ILLEGAL_MESSAGE_KEY: facts(40005, false, 400, G.INVALID_ARGUMENT, 'illegal message key'),
  ILLEGAL_MESSAGE_GROUP: facts(40006, false, 400, G.INVALID_ARGUMENT, 'illegal message group'),
  ILLEGAL_MESSAGE_PROPERTY_KEY: facts(
    40007,
    false,
    400,
    G.INVALID_ARGUMENT,
    'illegal or reserved message property',
  ),
  INVALID_TRANSACTION_ID: facts(40008, false, 400, G.INVALID_ARGUMENT, 'unknown or invalid transaction id'),
  ILLEGAL_MESSAGE_ID: facts(40009, false, 400, G.INVALID_ARGUMENT, 'illegal message id'),
  ILLEGAL_FILTER_EXPRESSION: facts(40010, false, 400, G.INVALID_ARGUMENT, 'illegal filter expression'),
  ILLEGAL_INVISIBLE_TIME: facts(40011, false, 400, G.INVALID_ARGUMENT, 'invisible duration out of range'),
  ILLEGAL_DELIVERY_TIME: facts(40012, false, 400, G.INVALID_ARGUMENT, 'illegal delivery time'),
  INVALID_RECEIPT_HANDLE: facts(
    40013,
    false,
    400,
    G.INVALID_ARGUMENT,
    'the receipt handle was acked, superseded, expired or never issued',
  ),
  MESSAGE_PROPERTY_CONFLICT_WITH_TYPE: facts(
    40014,
    false,
    400,
    G.INVALID_ARGUMENT,
    "the message's type does not match its topic's message.type",
  ),
  UNRECOGNIZED_CLIENT_TYPE: facts(40015, false, 400, G.INVALID_ARGUMENT, 'unrecognized client type'),
  MESSAGE_CORRUPTED: facts(40016, false, 400, G.INVALID_ARGUMENT, 'malformed or corrupted message'),
  CLIENT_ID_REQUIRED: facts(40017, false, 400, G.INVALID_ARGUMENT, 'the x-mq-client-id header is missing'),
  ILLEGAL_POLLING_TIME: facts(40018, false, 400, G.INVALID_ARGUMENT, 'long-polling time out of range'),
  ILLEGAL_OFFSET: facts(40019, false, 400, G.OUT_OF_RANGE, 'illegal offset'),
  ILLEGAL_LITE_TOPIC: facts(40020, false, 400, G.INVALID_ARGUMENT, 'illegal lite topic'),
  UNAUTHORIZED: facts(40100, false, 401, G.UNAUTHENTICATED, 'missing or invalid credentials'),
  PAYMENT_REQUIRED: facts(40200, false, 402, G.PERMISSION_DENIED, 'payment required'),
  FORBIDDEN: facts(40300, false, 403, G.PERMISSION_DENIED, 'not permitted'),
  NOT_FOUND: facts(40400, false, 404, G.NOT_FOUND, 'not found'),
  MESSAGE_NOT_FOUND: facts(40401, false, 404, G.NOT_FOUND, 'message not found'),
  TOPIC_NOT_FOUND: facts(40402, false, 404, G.NOT_FOUND, 'topic not found'),
  CONSUMER_GROUP_NOT_FOUND: facts(40403, false, 404, G.NOT_FOUND, 'consumer group not found'),
  OFFSET_NOT_FOUND: facts(40404, false, 404, G.NOT_FOUND, 'no committed offset'),
  REQUEST_TIMEOUT: facts(40800, true, 408, G.DEADLINE_EXCEEDED, 'the request timed out'),
  PAYLOAD_TOO_LARGE: facts(41300, false, 413, G.RESOURCE_EXHAUSTED, 'the request is too large'),
  MESSAGE_BODY_TOO_LARGE: facts(41301, false, 413, G.RESOURCE_EXHAUSTED, 'the message body is too large'),
  MESSAGE_BODY_EMPTY: facts(41302, false, 400, G.INVALID_ARGUMENT, 'the message body is empty'),
  PRECONDITION_FAILED: facts(42800, false, 412, G.FAILED_PRECONDITION, 'a precondition failed'),
  TOO_MANY_REQUESTS: facts(
    42900,
    true,
    429,
    G.RESOURCE_EXHAUSTED,
    'flow control: the broker sheds load; back off and retry',
  ),
  LITE_TOPIC_QUOTA_EXCEEDED: facts(42901, true, 429, G.RESOURCE_EXHAUSTED, 'lite topic quota exceeded'),
  LITE_SUBSCRIPTION_QUOTA_EXCEEDED: facts(
    42902,
    true,
    429,
    G.RESOURCE_EXHAUSTED,
    'lite subscription quota exceeded',
  ),
  REQUEST_HEADER_FIELDS_TOO_LARGE: facts(
    43100,
    false,
    431,
    G.RESOURCE_EXHAUSTED,
    'request headers are too large',
  ),
  MESSAGE_PROPERTIES_TOO_LARGE: facts(
    43101,
    false,
    413,
    G.RESOURCE_EXHAUSTED,
    'message properties are too many or too large',
  ),
  INTERNAL_ERROR: facts(50000, true, 500, G.INTERNAL, 'internal error'),
  INTERNAL_SERVER_ERROR: facts(50001, true, 500, G.INTERNAL, 'internal server error'),
  HA_NOT_AVAILABLE: facts(50002, true, 503, G.UNAVAILABLE, 'high availability is not available'),
  NOT_IMPLEMENTED: facts(50100, false, 501, G.UNIMPLEMENTED, 'not implemented by this broker'),
  PROXY_TIMEOUT: facts(50400, true, 504, G.DEADLINE_EXCEEDED, 'the broker timed out'),
  MASTER_PERSISTENCE_TIMEOUT: facts(50401, true, 504, G.DEADLINE_EXCEEDED, 'persistence timed out'),
  SLAVE_PERSISTENCE_TIMEOUT: facts(50402, true, 504, G.DEADLINE_EXCEEDED, 'replication timed out'),
  UNSUPPORTED: facts(50500, false, 501, G.UNIMPLEMENTED, 'unsupported'),
  VERSION_UNSUPPORTED: facts(50501, false, 501, G.UNIMPLEMENTED, 'protocol version unsupported'),
  VERIFY_FIFO_MESSAGE_UNSUPPORTED: facts(
    50502,
    false,
    501,
    G.UNIMPLEMENTED,
    'verifying FIFO messages is unsupported',
  ),
  FAILED_TO_CONSUME_MESSAGE: facts(60000, false, 500, G.UNKNOWN, 'the consumer failed to consume'),
} as const satisfies Record<string, CodeFacts>;

export type CodeName = keyof typeof CodeTable;

type CodeNumbers = { readonly [K in CodeName]: (typeof CodeTable)[K]['code'] };

/** Code numbers by name: `Code.TOO_MANY_REQUESTS === 42900`. */
export const Code: CodeNumbers = Object.freeze(
  Object.fromEntries(Object.entries(CodeTable).map(([name, f]) => [name, f.code])),
) as CodeNumbers;

export type Code = CodeNumbers[CodeName];

const byNumber = new Map<number, { name: CodeName; facts: CodeFacts }>(
  Object.entries(CodeTable).map(([name, f]) => [f.code, { name: name as CodeName, facts: f }]),
);

/** The name of a status code (`42900` → `TOO_MANY_REQUESTS`), or `UNKNOWN(<n>)`. */
export function codeName(code: number): string {
  return byNumber.get(code)?.name ?? `UNKNOWN(${code})`;
}

/**
 * What is known of a code. An unknown code is treated by its class: 4xxxx fail the same way again,
 * 5xxxx (the broker's own failures) may succeed later.
 */
export function codeFacts(code: number): CodeFacts {
  const known = byNumber.get(code)?.facts;
  if (known) return known;
  return code >= 50000
    ? facts(code, true, 500, GrpcStatus.INTERNAL, 'unknown server error')
    : facts(code, false, 400, GrpcStatus.UNKNOWN, 'unknown code');
}

/** Whether a RocketMQ status code may succeed on another attempt. */
export function isRetriableCode(code: number): boolean {
  return codeFacts(code).retriable;
}

/**
 * The RocketMQ code a gRPC transport status stands for, when a call failed without a body status.
 * Derived from the table: the first code (in table order) that declares that gRPC status. Statuses
 * no code declares (UNAVAILABLE, CANCELLED …) are lost or refused connections: `undefined`.
 */
export function codeForGrpcStatus(grpc: number): number | undefined {
  return grpcToCode.get(grpc);
}

const PREFERRED_FOR_GRPC: readonly CodeName[] = [
  'REQUEST_TIMEOUT',
  'PAYLOAD_TOO_LARGE',
  'NOT_IMPLEMENTED',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'BAD_REQUEST',
  'ILLEGAL_OFFSET',
  'NOT_FOUND',
  'PRECONDITION_FAILED',
];
const grpcToCode = new Map<number, number>(
  PREFERRED_FOR_GRPC.map((name) => [CodeTable[name].grpc, CodeTable[name].code]),
);
