/**
 * The numbers of RocketMQ's Remoting protocol (`RequestCode.java`, `ResponseCode.java`,
 * `LanguageCode.java`): what a request asks for, what a response says, and which client sent it.
 * Only the codes Vela serves, sends or answers with are named; every other request code is answered
 * `REQUEST_CODE_NOT_SUPPORTED`.
 */

export const RequestCode = {
  SEND_MESSAGE: 10,
  PULL_MESSAGE: 11,
  QUERY_MESSAGE: 12,
  QUERY_CONSUMER_OFFSET: 14,
  UPDATE_CONSUMER_OFFSET: 15,
  UPDATE_AND_CREATE_TOPIC: 17,
  GET_ALL_TOPIC_CONFIG: 21,
  GET_BROKER_CONFIG: 26,
  GET_BROKER_RUNTIME_INFO: 28,
  SEARCH_OFFSET_BY_TIMESTAMP: 29,
  GET_MAX_OFFSET: 30,
  GET_MIN_OFFSET: 31,
  GET_EARLIEST_MSG_STORETIME: 32,
  VIEW_MESSAGE_BY_ID: 33,
  HEART_BEAT: 34,
  UNREGISTER_CLIENT: 35,
  CONSUMER_SEND_MSG_BACK: 36,
  END_TRANSACTION: 37,
  GET_CONSUMER_LIST_BY_GROUP: 38,
  CHECK_TRANSACTION_STATE: 39,
  NOTIFY_CONSUMER_IDS_CHANGED: 40,
  LOCK_BATCH_MQ: 41,
  UNLOCK_BATCH_MQ: 42,
  CHECK_CLIENT_CONFIG: 46,
  PUT_KV_CONFIG: 100,
  GET_KV_CONFIG: 101,
  GET_ROUTEINFO_BY_TOPIC: 105,
  GET_BROKER_CLUSTER_INFO: 106,
  UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: 200,
  GET_ALL_SUBSCRIPTIONGROUP_CONFIG: 201,
  GET_TOPIC_STATS_INFO: 202,
  GET_CONSUMER_CONNECTION_LIST: 203,
  GET_PRODUCER_CONNECTION_LIST: 204,
  GET_ALL_TOPIC_LIST_FROM_NAMESERVER: 206,
  DELETE_SUBSCRIPTIONGROUP: 207,
  GET_CONSUME_STATS: 208,
  DELETE_TOPIC_IN_BROKER: 215,
  DELETE_TOPIC_IN_NAMESRV: 216,
  INVOKE_BROKER_TO_RESET_OFFSET: 222,
  QUERY_TOPIC_CONSUME_BY_WHO: 300,
  GET_SYSTEM_TOPIC_LIST_FROM_NS: 304,
  GET_CONSUMER_RUNNING_INFO: 307,
  CONSUME_MESSAGE_DIRECTLY: 309,
  SEND_MESSAGE_V2: 310,
  VIEW_BROKER_STATS_DATA: 315,
  SEND_BATCH_MESSAGE: 320,
  GET_TOPIC_CONFIG: 351,
  LITE_PULL_MESSAGE: 361,
} as const;
export type RequestCode = (typeof RequestCode)[keyof typeof RequestCode];

export const ResponseCode = {
  SUCCESS: 0,
  SYSTEM_ERROR: 1,
  SYSTEM_BUSY: 2,
  REQUEST_CODE_NOT_SUPPORTED: 3,
  FLUSH_DISK_TIMEOUT: 10,
  MESSAGE_ILLEGAL: 13,
  SERVICE_NOT_AVAILABLE: 14,
  NO_PERMISSION: 16,
  TOPIC_NOT_EXIST: 17,
  TOPIC_EXIST_ALREADY: 18,
  PULL_NOT_FOUND: 19,
  PULL_RETRY_IMMEDIATELY: 20,
  PULL_OFFSET_MOVED: 21,
  QUERY_NOT_FOUND: 22,
  SUBSCRIPTION_PARSE_FAILED: 23,
  SUBSCRIPTION_NOT_EXIST: 24,
  SUBSCRIPTION_NOT_LATEST: 25,
  SUBSCRIPTION_GROUP_NOT_EXIST: 26,
  INVALID_PARAMETER: 29,
  CONSUMER_NOT_ONLINE: 206,
  CONSUME_MSG_TIMEOUT: 207,
  NO_MESSAGE: 208,
  FLOW_CONTROL: 215,
  GO_AWAY: 1500,
} as const;
export type ResponseCode = (typeof ResponseCode)[keyof typeof ResponseCode];

/** `LanguageCode` ordinals, as the ROCKETMQ binary header carries them. */
export const LANGUAGES = [
  'JAVA',
  'CPP',
  'DOTNET',
  'PYTHON',
  'DELPHI',
  'ERLANG',
  'RUBY',
  'OTHER',
  'HTTP',
  'GO',
  'PHP',
  'OMS',
  'RUST',
  'NODE_JS',
] as const;

/** `MQVersion.Version` ordinals worth knowing: routes answer standard JSON from V4_9_4 on. */
export const MQVersion = { V4_9_4: 401, V5_0_0: 413, V5_3_1: 475 } as const;

/** The name of a request code, for logs. */
export function requestCodeName(code: number): string {
  for (const [k, v] of Object.entries(RequestCode)) if (v === code) return k;
  return `CODE_${code}`;
}
