/**
 * A bare HTTP/2 server over net, for HPACK interop tests and benchmarks: it reads the client preface
 * and frames (with the framing of src/common/http2/frames.ts, not its connection class),
 * acknowledges SETTINGS and PING, joins each request's HEADERS + CONTINUATION payloads into one
 * header block, hands it to `onHeaders` (in wire order, per connection) and answers the stream with
 * the header block that returns (HEADERS with END_STREAM, split into CONTINUATIONs if over 16 KiB).
 * Request bodies (DATA) are dropped, and credited back with WINDOW_UPDATE so a client never stalls.
 * It knows nothing of HPACK itself: the caller brings the decoder and encoder under test.
 */
import net from 'node:net';
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  Flag,
  FrameReader,
  FrameType,
  SETTINGS_ACK,
  frame,
  pingFrame,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/common/http2/frames.js';

const MAX_FRAME = DEFAULT_MAX_FRAME_SIZE;

export interface RawH2Options {
  /** SETTINGS parameters sent first, [id, value] (e.g. [1, 256]: SETTINGS_HEADER_TABLE_SIZE). */
  settings?: [id: number, value: number][];
  /** A connection opened; its index (0, 1, ...) is passed to onHeaders. */
  onConnection?: (connection: number) => void;
  /** A request's complete header block; returns the response's header block. */
  onHeaders: (block: Buffer, streamId: number, connection: number) => Buffer;
}

export interface RawH2Server {
  port: number;
  /** What onHeaders threw, or a protocol surprise (the connection was destroyed). */
  errors: unknown[];
  close(): Promise<void>;
}

function headerFrames(streamId: number, block: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  for (let at = 0; at === 0 || at < block.length; at += MAX_FRAME) {
    const last = at + MAX_FRAME >= block.length;
    const type = at === 0 ? FrameType.HEADERS : FrameType.CONTINUATION;
    const flags = (at === 0 ? Flag.END_STREAM : 0) | (last ? Flag.END_HEADERS : 0);
    frames.push(frame(type, flags, streamId, block.subarray(at, at + MAX_FRAME)));
  }
  return frames;
}

export async function startRawH2Server(opts: RawH2Options): Promise<RawH2Server> {
  const errors: unknown[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const settings = settingsFrame(opts.settings ?? []);

  const server = net.createServer((socket) => {
    const connection = connections++;
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // the client may reset; the test sees it on the client side
    opts.onConnection?.(connection);
    socket.write(settings);
    let preface: Buffer = Buffer.alloc(0);
    let prefaceSeen = false;
    let fragments: Buffer[] = [];

    const onFrame = (type: number, flags: number, streamId: number, payload: Buffer): void => {
      if (type === FrameType.SETTINGS && (flags & Flag.ACK) === 0) socket.write(SETTINGS_ACK);
      else if (type === FrameType.PING && (flags & Flag.ACK) === 0) socket.write(pingFrame(payload, true));
      else if (type === FrameType.HEADERS || type === FrameType.CONTINUATION) {
        let fragment = payload;
        if (type === FrameType.HEADERS) {
          if (flags & Flag.PADDED) fragment = fragment.subarray(1, fragment.length - fragment[0]!);
          if (flags & Flag.PRIORITY) fragment = fragment.subarray(5);
          fragments = [];
        }
        fragments.push(fragment);
        if (flags & Flag.END_HEADERS) {
          const response = opts.onHeaders(Buffer.concat(fragments), streamId, connection);
          for (const f of headerFrames(streamId, response)) socket.write(f);
        }
      } else if (type === FrameType.DATA && payload.length > 0) {
        socket.write(windowUpdateFrame(0, payload.length)); // the connection's window; each stream's is ample
      }
    };
    const reader = new FrameReader(MAX_FRAME, onFrame);

    socket.on('data', (chunk: Buffer) => {
      try {
        if (!prefaceSeen) {
          preface = Buffer.concat([preface, chunk]);
          if (preface.length < CLIENT_PREFACE.length) return;
          if (!preface.subarray(0, CLIENT_PREFACE.length).equals(CLIENT_PREFACE)) {
            throw new Error('bad client preface');
          }
          prefaceSeen = true;
          chunk = preface.subarray(CLIENT_PREFACE.length);
        }
        reader.push(chunk);
      } catch (err) {
        errors.push(err);
        socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    errors,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
