/**
 * The one place that decides what a failure looks like on the Remoting wire: a response code and a
 * remark. Vela's error kinds map onto RocketMQ's response codes; errors that are not `VelaError`s are
 * programming errors, logged and answered `SYSTEM_ERROR`.
 */
import { isVelaError, type ErrorKind } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { ResponseCode } from './codes.js';

const BY_KIND: Partial<Record<ErrorKind, number>> = {
  TOPIC_NOT_FOUND: ResponseCode.TOPIC_NOT_EXIST,
  CONSUMER_GROUP_NOT_FOUND: ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
  ILLEGAL_TOPIC: ResponseCode.MESSAGE_ILLEGAL,
  ILLEGAL_MESSAGE_TAG: ResponseCode.MESSAGE_ILLEGAL,
  ILLEGAL_MESSAGE_KEY: ResponseCode.MESSAGE_ILLEGAL,
  ILLEGAL_MESSAGE_GROUP: ResponseCode.MESSAGE_ILLEGAL,
  ILLEGAL_MESSAGE_PROPERTY_KEY: ResponseCode.MESSAGE_ILLEGAL,
  ILLEGAL_MESSAGE_ID: ResponseCode.MESSAGE_ILLEGAL,
  ILLEGAL_DELIVERY_TIME: ResponseCode.MESSAGE_ILLEGAL,
  MESSAGE_BODY_EMPTY: ResponseCode.MESSAGE_ILLEGAL,
  MESSAGE_BODY_TOO_LARGE: ResponseCode.MESSAGE_ILLEGAL,
  MESSAGE_PROPERTIES_TOO_LARGE: ResponseCode.MESSAGE_ILLEGAL,
  MESSAGE_TYPE_CONFLICT: ResponseCode.MESSAGE_ILLEGAL,
  MESSAGE_CORRUPTED: ResponseCode.MESSAGE_ILLEGAL,
  FORBIDDEN: ResponseCode.NO_PERMISSION,
  ACL_UNAUTHORIZED: ResponseCode.NO_PERMISSION,
  ACL_FORBIDDEN: ResponseCode.NO_PERMISSION,
  ILLEGAL_FILTER_EXPRESSION: ResponseCode.SUBSCRIPTION_PARSE_FAILED,
  ILLEGAL_CONSUMER_GROUP: ResponseCode.INVALID_PARAMETER,
  ILLEGAL_TOPIC_CONFIG: ResponseCode.INVALID_PARAMETER,
  ILLEGAL_GROUP_CONFIG: ResponseCode.INVALID_PARAMETER,
  ILLEGAL_OFFSET: ResponseCode.INVALID_PARAMETER,
  BAD_REQUEST: ResponseCode.INVALID_PARAMETER,
  OFFSET_NOT_FOUND: ResponseCode.QUERY_NOT_FOUND,
  MESSAGE_NOT_FOUND: ResponseCode.QUERY_NOT_FOUND,
  STORE_DISK_FULL: ResponseCode.SERVICE_NOT_AVAILABLE,
  STORE_CLOSED: ResponseCode.SERVICE_NOT_AVAILABLE,
  TOO_MANY_REQUESTS: ResponseCode.SYSTEM_BUSY,
};

export interface Failure {
  code: number;
  remark: string;
}

export function failureOf(err: unknown, logger: Logger, request: string): Failure {
  if (isVelaError(err)) {
    const code =
      BY_KIND[err.kind] ??
      (err.codeName === 'TOO_MANY_REQUESTS' ? ResponseCode.SYSTEM_BUSY : ResponseCode.SYSTEM_ERROR);
    return { code, remark: err.message };
  }
  logger.error({ err, request }, 'internal error while serving a Remoting request');
  return {
    code: ResponseCode.SYSTEM_ERROR,
    remark: `internal error: ${(err as Error)?.message ?? String(err)}`,
  };
}
