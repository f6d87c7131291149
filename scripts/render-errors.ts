/**
 * Renders docs/errors.md from the code table (src/common/codes.ts) and the error catalogue
 * (src/common/errors.ts). `npm run docs` writes it; test/unit/docs.test.ts keeps it equal.
 */
import { CodeTable, GrpcStatus } from '../src/common/codes.js';
import { ErrorCatalogue } from '../src/common/errors.js';

const grpcName = new Map<number, string>(Object.entries(GrpcStatus).map(([k, v]) => [v, k]));

export function renderErrorsDoc(): string {
  const lines = [
    '# Status codes and errors',
    '',
    '<!-- Generated from src/common/codes.ts and src/common/errors.ts by `npm run docs`; do not edit. -->',
    '',
    'Every outcome Vela reports carries an `apache.rocketmq.v2.Code`. The gRPC endpoint answers every call',
    'with gRPC status OK and puts the code in the response body, as the RocketMQ proxy does; the gRPC status',
    'column is what a failure carries when it cannot travel in a body (a refused frame, say). The admin HTTP',
    'API answers with the HTTP status below and a JSON body `{ code, error, message }`. The `vela` command',
    'exits with the exit code below when an operation fails with that code (2 is reserved for usage',
    'errors). The SDK raises `VelaClientError` with `code`, `codeName` and `retriable` from the same table.',
    '',
    '## Codes',
    '',
    '| Code | Name | Retriable | HTTP | gRPC status | `vela` exit | Meaning |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const [name, f] of Object.entries(CodeTable)) {
    lines.push(
      `| ${f.code} | \`${name}\` | ${f.retriable ? 'yes' : 'no'} | ${f.http} | ${grpcName.get(f.grpc)} | ${f.exit} | ${f.meaning} |`,
    );
  }
  lines.push(
    '',
    'A code not in this table is treated by its class: 4xxxx are not retriable, 5xxxx are.',
    '',
    '## Named failures',
    '',
    "The broker's named failures (`VelaError.kind`, the `error` field of the admin API's error body) and",
    'the code each is reported with.',
    '',
    '| Kind | Code | Default message |',
    '| --- | --- | --- |',
  );
  for (const [kind, e] of Object.entries(ErrorCatalogue)) {
    lines.push(`| \`${kind}\` | \`${e.code}\` (${CodeTable[e.code].code}) | ${e.message} |`);
  }
  return lines.join('\n') + '\n';
}
