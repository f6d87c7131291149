/**
 * A call's trailers, sent in the same turn of the event loop as the answer before them.
 *
 * node:http2's `sendTrailers` submits trailers from a `setImmediate`, so every unary answer left in
 * two writes a whole event-loop turn apart (HEADERS + DATA, then the trailing HEADERS; strace shows
 * an `epoll_pwait` and the loop's other phases in between), and the client mostly woke up twice to
 * read it. nghttp2 lets an application submit trailers from inside the data-source callback that
 * ends the DATA (see `nghttp2_submit_trailer`), which is where Node emits 'wantTrailers': submitted
 * there, through the stream's native handle, they are written right after the answer, in the same
 * turn (still a second `write`: Node flushes them from its next native immediate).
 *
 * The handle is a Node internal (the stream's `kHandle` symbol; `trailers([list, count])` with the
 * header list `mapToHeaders` builds), so the path is taken only on the Node major it was checked
 * against (20); elsewhere, or if anything is unexpected, trailers go through `sendTrailers`.
 */
import type { ServerHttp2Stream } from 'node:http2';

interface NativeStream {
  trailers(list: [string, number]): number;
}

/** The Node major whose internals this was written and tested against. */
const CHECKED_NODE_MAJOR = 20;

/** undefined: not looked for yet; null: not usable (fall back). */
let handleSymbol: symbol | null | undefined =
  Number(process.versions.node.split('.')[0]) === CHECKED_NODE_MAJOR ? undefined : null;

function nativeOf(stream: ServerHttp2Stream): NativeStream | undefined {
  if (handleSymbol === undefined) {
    handleSymbol = Object.getOwnPropertySymbols(stream).find((s) => s.description === 'kHandle') ?? null;
  }
  if (handleSymbol === null) return undefined;
  const handle = (stream as unknown as Record<symbol, unknown>)[handleSymbol] as NativeStream | undefined;
  return handle && typeof handle.trailers === 'function' ? handle : undefined;
}

/** The header list node:http2 hands its native layer: `name\0value\0flags` per field (no flags). */
function headerList(fields: Record<string, string>): [string, number] {
  let list = '';
  let n = 0;
  for (const name in fields) {
    list += `${name}\0${fields[name]}\0\0`;
    n++;
  }
  return [list, n];
}

/**
 * Send `fields` as the stream's trailers. Call only from the stream's 'wantTrailers' event. Names
 * must be lower-case tokens and values valid field values (gRPC's `grpc-status` and the
 * percent-encoded `grpc-message` are).
 */
export function sendTrailersNow(stream: ServerHttp2Stream, fields: Record<string, string>): void {
  if (stream.destroyed || stream.closed) return; // reset meanwhile: nothing to send
  const native = nativeOf(stream);
  if (native) {
    let ret: number;
    try {
      ret = native.trailers(headerList(fields));
    } catch (err) {
      // Not the shape this was written for: the public API from now on.
      if (err instanceof TypeError) handleSymbol = null;
      stream.sendTrailers(fields);
      return;
    }
    // As node:http2 does when nghttp2 refuses the trailers.
    if (ret < 0) stream.destroy(new Error(`nghttp2 refused the trailers (${ret})`));
    return;
  }
  stream.sendTrailers(fields);
}

/** Whether trailers go through the native handle (false before the first call, or after a fallback). */
export function nativeTrailers(): boolean {
  return typeof handleSymbol === 'symbol';
}

/** @internal for tests: forget what was detected, or force the public API. */
export function resetTrailersPath(force?: 'public'): void {
  handleSymbol =
    force === 'public' || Number(process.versions.node.split('.')[0]) !== CHECKED_NODE_MAJOR
      ? null
      : undefined;
}
