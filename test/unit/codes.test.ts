/** The code table: the facts every edge derives from it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Code,
  CodeTable,
  ExitCode,
  GrpcStatus,
  codeFacts,
  codeForGrpcStatus,
  codeName,
  isRetriableCode,
} from '../../src/common/codes.js';
import { ErrorCatalogue, VelaError } from '../../src/common/errors.js';

test('code numbers are the apache.rocketmq.v2 numbers and are unique', () => {
  assert.equal(Code.OK, 20000);
  assert.equal(Code.TOO_MANY_REQUESTS, 42900);
  assert.equal(Code.INVALID_RECEIPT_HANDLE, 40013);
  assert.equal(Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, 40014);
  const numbers = Object.values(CodeTable).map((f) => f.code);
  assert.equal(new Set(numbers).size, numbers.length);
  assert.equal(codeName(42900), 'TOO_MANY_REQUESTS');
  assert.equal(codeName(12345), 'UNKNOWN(12345)');
});

test('retriable: flow control, timeouts and server errors; never a client mistake', () => {
  for (const c of [
    Code.TOO_MANY_REQUESTS,
    Code.INTERNAL_SERVER_ERROR,
    Code.PROXY_TIMEOUT,
    Code.REQUEST_TIMEOUT,
  ])
    assert.ok(isRetriableCode(c), codeName(c));
  for (const c of [Code.BAD_REQUEST, Code.TOPIC_NOT_FOUND, Code.FORBIDDEN, Code.MESSAGE_BODY_TOO_LARGE])
    assert.ok(!isRetriableCode(c), codeName(c));
  // Unknown codes by class.
  assert.ok(isRetriableCode(50999));
  assert.ok(!isRetriableCode(40999));
});

test('HTTP statuses and exit codes follow the code', () => {
  assert.equal(codeFacts(Code.TOO_MANY_REQUESTS).http, 429);
  assert.equal(codeFacts(Code.TOPIC_NOT_FOUND).http, 404);
  assert.equal(codeFacts(Code.MESSAGE_BODY_TOO_LARGE).http, 413);
  assert.equal(codeFacts(Code.NOT_IMPLEMENTED).http, 501);
  assert.equal(codeFacts(Code.TOPIC_NOT_FOUND).exit, ExitCode.FAILURE);
  assert.equal(codeFacts(Code.TOO_MANY_REQUESTS).exit, ExitCode.RETRY_LATER);
});

test('a gRPC transport status maps back to one RocketMQ code', () => {
  assert.equal(codeForGrpcStatus(GrpcStatus.DEADLINE_EXCEEDED), Code.REQUEST_TIMEOUT);
  assert.equal(codeForGrpcStatus(GrpcStatus.RESOURCE_EXHAUSTED), Code.PAYLOAD_TOO_LARGE);
  assert.equal(codeForGrpcStatus(GrpcStatus.UNAUTHENTICATED), Code.UNAUTHORIZED);
  assert.equal(codeForGrpcStatus(GrpcStatus.UNAVAILABLE), undefined);
});

test('every named failure has a code in the table, and a VelaError carries its facts', () => {
  for (const [kind, e] of Object.entries(ErrorCatalogue)) assert.ok(e.code in CodeTable, kind);
  const err = new VelaError('STORE_DISK_FULL', 'at 91 %');
  assert.equal(err.code, Code.TOO_MANY_REQUESTS);
  assert.equal(err.codeName, 'TOO_MANY_REQUESTS');
  assert.equal(err.retriable, true);
  assert.match(err.message, /at 91 %$/);
  assert.equal(new VelaError('TOPIC_NOT_FOUND').retriable, false);
});
