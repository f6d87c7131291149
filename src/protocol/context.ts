/** What every RPC needs from its call: the client id and namespace headers, the peer, the deadline. */
import type { Metadata } from '@grpc/grpc-js';
import { VelaError } from '../common/errors.js';
import { toInternal } from './namespace.js';
import { malformedReason } from './codec.js';
import type { Resource } from './wire-types.js';

export interface CallContext {
  clientId: string;
  namespace: string;
  peer: string;
  /** ms since epoch, or Infinity. */
  deadline: number;
}

function header(md: Metadata, name: string): string {
  const v = md.get(name)[0];
  return typeof v === 'string' ? v : v ? v.toString() : '';
}

export function contextOf(
  call: { metadata: Metadata; getPeer(): string; getDeadline(): Date | number; request?: unknown },
  requireClientId = true,
): CallContext {
  const malformed = malformedReason(call.request);
  if (malformed !== undefined) throw new VelaError('BAD_REQUEST', `malformed protobuf request: ${malformed}`);
  const clientId = header(call.metadata, 'x-mq-client-id');
  if (requireClientId && !clientId) throw new VelaError('CLIENT_ID_REQUIRED');
  const d = call.getDeadline();
  const deadline = d instanceof Date ? d.getTime() : Number.isFinite(d) ? d : Infinity;
  return { clientId, namespace: header(call.metadata, 'x-mq-namespace'), peer: call.getPeer(), deadline };
}

/** The broker's name for a resource: `namespace%name` when the client has a namespace. */
export function resourceName(ctx: CallContext, r: Resource | undefined): string {
  return toInternal(ctx.namespace || r?.resource_namespace || '', r?.name ?? '');
}
