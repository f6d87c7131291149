/**
 * The one place that decides what a failure looks like on the wire: a `Status` in the response body
 * with the catalogue's code (the official server answers every RPC with gRPC OK and puts the outcome
 * there). Errors that are not `VelaError`s are programming errors: logged, and answered as
 * INTERNAL_SERVER_ERROR.
 */
import { Code, codeName } from '../common/codes.js';
import { isVelaError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import type { Status } from './wire-types.js';

export const OK_STATUS: Status = Object.freeze({ code: Code.OK, message: 'OK' });

export function statusOf(err: unknown, logger: Logger, context: string): Status {
  if (isVelaError(err)) return { code: err.code, message: err.message };
  logger.error({ err, rpc: context }, 'internal error while serving a request');
  return {
    code: Code.INTERNAL_SERVER_ERROR,
    message: `internal error: ${(err as Error)?.message ?? String(err)}`,
  };
}

/** The top-level status of a batch: the common code when all entries agree, else MULTIPLE_RESULTS. */
export function batchStatus(entries: Status[]): Status {
  if (entries.length === 0) return OK_STATUS;
  const first = entries[0]!;
  if (entries.every((e) => e.code === first.code)) return first;
  return {
    code: Code.MULTIPLE_RESULTS,
    message: `entries differ (${[...new Set(entries.map((e) => codeName(e.code)))].join(', ')})`,
  };
}
