/**
 * The SDK's typed error, and the one place that turns failures into it: a body `Status` from the
 * broker (`fromStatus`), a gRPC transport error (`fromTransport`), or a client-side refusal
 * (`clientError`). Whether a failure may be retried, and whether it is flow control, is decided here
 * and nowhere else; the producer's retrier and the consumers' loops only read the flags.
 */
import { Code, codeForGrpcStatus, codeName, GrpcStatus, isRetriableCode } from '../common/codes.js';

const GRPC_STATUS_NAMES = new Map<number, string>(Object.entries(GrpcStatus).map(([k, v]) => [v, k]));

/**
 * Whether a RocketMQ status code may succeed on another attempt: flow control, the broker's internal
 * errors and its timeouts. Everything in the 400xx–431xx range (bad request, not found, forbidden,
 * too large …) fails the same way on every attempt and is thrown at once. A fact of the code table.
 */
export { isRetriableCode };

export interface VelaClientErrorOptions {
  /** The RPC that failed, e.g. `SendMessage`. */
  rpc?: string;
  /** The gRPC status code, for transport failures. */
  grpcCode?: number;
  /** Override the catalogue's notion of retriable. */
  retriable?: boolean;
  cause?: unknown;
}

/** Every failure the SDK reports (other than an `AbortSignal`'s own reason) is one of these. */
export class VelaClientError extends Error {
  override readonly name = 'VelaClientError';
  /** The `apache.rocketmq.v2.Code` number, e.g. 42900. */
  readonly code: number;
  /** Its name, e.g. `TOO_MANY_REQUESTS`. */
  readonly codeName: string;
  /** Another attempt may succeed (flow control, internal errors, timeouts, transport failures). */
  readonly retriable: boolean;
  /** The broker is shedding load (TOO_MANY_REQUESTS, 42900): back off before trying again. */
  readonly flowControl: boolean;
  /** The request failed in transport (no answer from the broker), not with a status. */
  readonly transport: boolean;
  /** The gRPC status code of a transport failure. */
  readonly grpcCode?: number;
  /** The RPC that failed. */
  readonly rpc?: string;

  constructor(code: number, message: string, options: VelaClientErrorOptions = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.code = code;
    this.codeName = codeName(code);
    this.flowControl = code === Code.TOO_MANY_REQUESTS;
    this.transport = options.grpcCode !== undefined;
    this.retriable = options.retriable ?? isRetriableCode(code);
    if (options.grpcCode !== undefined) this.grpcCode = options.grpcCode;
    if (options.rpc !== undefined) this.rpc = options.rpc;
  }
}

export function isVelaClientError(err: unknown): err is VelaClientError {
  return err instanceof VelaClientError;
}

/** A body status that is not a success, as a typed error. */
export function fromStatus(
  status: { code?: number; message?: string } | undefined,
  rpc: string,
): VelaClientError {
  const code = status?.code ?? Code.CODE_UNSPECIFIED;
  const text = status?.message ? `: ${status.message}` : '';
  return new VelaClientError(code, `${rpc} failed with ${codeName(code)} (${code})${text}`, { rpc });
}

/** Codes that mean success for a whole response. */
export function isOk(code: number | undefined): boolean {
  return code === Code.OK || code === Code.MULTIPLE_RESULTS;
}

/** Throw unless the response's status is a success. A missing status is a broken response. */
export function checkStatus(status: { code?: number; message?: string } | undefined, rpc: string): void {
  if (!status) {
    throw new VelaClientError(Code.INTERNAL_ERROR, `${rpc}: the response carries no status`, { rpc });
  }
  if (!isOk(status.code)) throw fromStatus(status, rpc);
}

/**
 * A gRPC error (the call never got a body status): timeouts and lost or refused connections are
 * retriable; size limits, missing methods and authentication failures are not.
 */
export function fromTransport(err: unknown, rpc: string): VelaClientError {
  if (err instanceof VelaClientError) return err;
  const se = err as { code?: unknown; details?: string };
  const grpcCode = typeof se?.code === 'number' ? se.code : GrpcStatus.UNKNOWN;
  // Statuses the code table does not claim (UNAVAILABLE, CANCELLED …) are lost or refused connections.
  const mapped = codeForGrpcStatus(grpcCode);
  const code = mapped ?? Code.INTERNAL_ERROR;
  const retriable = mapped === undefined || isRetriableCode(mapped);
  const detail = se?.details || (err as Error)?.message || String(err);
  return new VelaClientError(
    code,
    `${rpc} failed in transport (gRPC ${GRPC_STATUS_NAMES.get(grpcCode) ?? grpcCode}): ${detail}`,
    {
      rpc,
      grpcCode,
      retriable,
      cause: err,
    },
  );
}

/** A refusal by the SDK itself: a bad argument (`BAD_REQUEST`) or a client in the wrong state. */
export function clientError(code: number, message: string): VelaClientError {
  return new VelaClientError(code, message);
}

/** The error for calls on a client that is closing or closed. */
export function closedError(what: string): VelaClientError {
  return new VelaClientError(Code.PRECONDITION_FAILED, `${what} is closed`);
}

/** The reason an aborted signal carries, as something throwable. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
