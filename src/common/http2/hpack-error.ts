/**
 * HpackError: a header block that cannot be decoded (RFC 7541). HTTP/2 calls this a COMPRESSION_ERROR:
 * the decoder's dynamic table may now differ from the peer's, so the whole connection must be closed.
 */
export class HpackError extends Error {
  override readonly name = 'HpackError';
}
