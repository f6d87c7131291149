/**
 * The message as the broker hands it to its edges (the gRPC endpoint, the admin API, later the
 * Remoting endpoint): what was stored, with the topic, queue, offsets and ids the broker assigned.
 * Edges depend on this type, never on the store's, so the storage format can change under them.
 */
import type { StoredMessage } from '../store/index.js';

export type BrokerMessage = Readonly<StoredMessage>;

/**
 * Where a message's stored fields lie in the record a read decoded it from, for an edge that copies
 * them out as they are.
 */
export { MessageRecordSpans } from '../store/index.js';
