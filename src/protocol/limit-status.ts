/** The body status of a request the transport refused before decoding it (too large, over budget, malformed). */
import { CodeTable } from '../common/codes.js';
import type { Status } from './wire-types.js';
import { LimitError } from './transport/grpc-wire.js';

/** The body status a refused request gets. */
export function limitStatus(err: LimitError): Status {
  if (!(err instanceof LimitError)) {
    return { code: CodeTable.INTERNAL_SERVER_ERROR.code, message: 'internal error' };
  }
  switch (err.kind) {
    case 'message-too-large':
      return { code: CodeTable.PAYLOAD_TOO_LARGE.code, message: `request too large: ${err.message}` };
    case 'inbound-budget':
      return { code: CodeTable.TOO_MANY_REQUESTS.code, message: `too many requests: ${err.message}` };
    case 'malformed':
      return { code: CodeTable.BAD_REQUEST.code, message: `malformed request: ${err.message}` };
  }
}
