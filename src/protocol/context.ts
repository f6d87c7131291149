/** What every RPC needs from its call: the client id and namespace headers, the peer, the deadline. */
import { VelaError } from '../common/errors.js';
import { toInternal } from './namespace.js';
import { checkClientId, checkNamespace } from '../broker/names.js';
import { malformedReason } from './codec.js';
import type { Resource } from './wire-types.js';
import { ACCEPT_DIGEST_HEADER, acceptsCrc32 } from './body-digest.js';

export interface CallContext {
  clientId: string;
  namespace: string;
  /** `address:port` of the client. */
  peer: string;
  /** The connection the call came on: client sessions belong to it. */
  connectionId: string;
  /** ms since epoch, or Infinity. */
  deadline: number;
  /** The caller checks CRC32 body digests (`x-vela-accept-digest`, body-digest.ts): Vela's SDK. */
  crc32Digest?: boolean;
}

/** The parts of a transport call a context is made of. */
export interface CallSource {
  header(name: string): string;
  readonly peer: { readonly remote: string; readonly connectionId: string };
  readonly deadline: number;
}

export function contextOf(call: CallSource, request: unknown, requireClientId = true): CallContext {
  const malformed = malformedReason(request);
  if (malformed !== undefined) throw new VelaError('BAD_REQUEST', `malformed protobuf request: ${malformed}`);
  const clientId = call.header('x-mq-client-id');
  if (requireClientId && !clientId) throw new VelaError('CLIENT_ID_REQUIRED');
  checkClientId(clientId);
  const namespace = call.header('x-mq-namespace');
  if (namespace) checkNamespace(namespace);
  return {
    clientId,
    namespace,
    peer: call.peer.remote,
    connectionId: call.peer.connectionId,
    deadline: call.deadline,
    crc32Digest: acceptsCrc32(call.header(ACCEPT_DIGEST_HEADER)),
  };
}

/** The broker's name for a resource: `namespace%name` when the client has a namespace. */
export function resourceName(ctx: Pick<CallContext, 'namespace'>, r: Resource | undefined): string {
  const ns = ctx.namespace || r?.resource_namespace || '';
  if (ns && !ctx.namespace) checkNamespace(ns); // the header's was checked with the call
  return toInternal(ns, r?.name ?? '');
}
