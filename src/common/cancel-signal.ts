/**
 * What a long-polling request needs of its caller's cancellation: whether it was cancelled, and a
 * listener for when it is. An AbortSignal is one; so is a gRPC call's light signal
 * (protocol/transport/server-call.ts), which costs no EventTarget and no deadline timer per call.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
