/**
 * A bare HTTP/2 server over net, for HPACK interop tests and benchmarks: it reads the client preface and
 * frames, acknowledges SETTINGS and PING, joins each request's HEADERS + CONTINUATION payloads into one
 * header block, hands it to `onHeaders` (in wire order, per connection) and answers the stream with the
 * header block that returns (HEADERS with END_STREAM, split into CONTINUATIONs if over 16 KiB).
 * Request bodies (DATA) are dropped, and credited back with WINDOW_UPDATE so a client never stalls.
 * It knows nothing of HPACK itself: the caller brings the decoder and encoder under test.
 */
import net from 'node:net';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const DATA = 0x0;
const HEADERS = 0x1;
const SETTINGS = 0x4;
const PING = 0x6;
const WINDOW_UPDATE = 0x8;
const CONTINUATION = 0x9;
const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;
const MAX_FRAME = 16384; // the default SETTINGS_MAX_FRAME_SIZE

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

export function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

function headerFrames(streamId: number, block: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  for (let at = 0; at === 0 || at < block.length; at += MAX_FRAME) {
    const last = at + MAX_FRAME >= block.length;
    const type = at === 0 ? HEADERS : CONTINUATION;
    const flags = (at === 0 ? END_STREAM : 0) | (last ? END_HEADERS : 0);
    frames.push(frame(type, flags, streamId, block.subarray(at, at + MAX_FRAME)));
  }
  return frames;
}

export async function startRawH2Server(opts: RawH2Options): Promise<RawH2Server> {
  const errors: unknown[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const settings = Buffer.alloc(6 * (opts.settings?.length ?? 0));
  opts.settings?.forEach(([id, value], i) => {
    settings.writeUInt16BE(id, i * 6);
    settings.writeUInt32BE(value, i * 6 + 2);
  });

  const server = net.createServer((socket) => {
    const connection = connections++;
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // the client may reset; the test sees it on the client side
    opts.onConnection?.(connection);
    socket.write(frame(SETTINGS, 0, 0, settings));
    let pending: Buffer = Buffer.alloc(0);
    let prefaceSeen = false;
    let fragments: Buffer[] = [];

    const onFrame = (type: number, flags: number, streamId: number, payload: Buffer): void => {
      if (type === SETTINGS && (flags & ACK) === 0) socket.write(frame(SETTINGS, ACK, 0, Buffer.alloc(0)));
      else if (type === PING && (flags & ACK) === 0) socket.write(frame(PING, ACK, 0, payload));
      else if (type === HEADERS || type === CONTINUATION) {
        let fragment = payload;
        if (type === HEADERS) {
          if (flags & PADDED) fragment = fragment.subarray(1, fragment.length - fragment[0]!);
          if (flags & PRIORITY) fragment = fragment.subarray(5);
          fragments = [];
        }
        fragments.push(fragment);
        if (flags & END_HEADERS) {
          const response = opts.onHeaders(Buffer.concat(fragments), streamId, connection);
          for (const f of headerFrames(streamId, response)) socket.write(f);
        }
      } else if (type === DATA && payload.length > 0) {
        const credit = Buffer.alloc(4);
        credit.writeUInt32BE(payload.length);
        socket.write(frame(WINDOW_UPDATE, 0, 0, credit)); // the connection's window; each stream's is ample
      }
    };

    socket.on('data', (chunk: Buffer) => {
      try {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        if (!prefaceSeen) {
          if (pending.length < PREFACE.length) return;
          if (!pending.subarray(0, PREFACE.length).equals(PREFACE)) throw new Error('bad client preface');
          pending = pending.subarray(PREFACE.length);
          prefaceSeen = true;
        }
        while (pending.length >= 9) {
          const length = pending.readUIntBE(0, 3);
          if (pending.length < 9 + length) break;
          const payload = pending.subarray(9, 9 + length);
          onFrame(pending[3]!, pending[4]!, pending.readUInt32BE(5) & 0x7fffffff, payload);
          pending = pending.subarray(9 + length);
        }
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
