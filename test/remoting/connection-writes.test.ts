/** A Remoting connection's answers of one event-loop turn leave the socket in one write. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { RemotingConnection } from '../../src/remoting/connection.js';
import { decodeFrame, Flag } from '../../src/remoting/frame.js';

test('the frames written in one turn reach the socket in one write, and each arrives whole', async () => {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const client = connect(port, '127.0.0.1');
  const [accepted] = (await once(server, 'connection')) as [Socket];
  try {
    await once(client, 'connect');
    const writes: number[] = [];
    // Count the socket's trips to the kernel: one writev for corked writes, or one write each.
    const handle = accepted as unknown as {
      _writev: (chunks: { chunk: Buffer }[], cb: () => void) => void;
      _write: (chunk: Buffer, enc: string, cb: () => void) => void;
    };
    const writev = handle._writev.bind(accepted);
    const write = handle._write.bind(accepted);
    handle._writev = (chunks, cb) => {
      writes.push(chunks.length);
      writev(chunks, cb);
    };
    handle._write = (chunk, enc, cb) => {
      writes.push(1);
      write(chunk, enc, cb);
    };
    const conn = new RemotingConnection(accepted, 1 << 20);
    const received: Buffer[] = [];
    client.on('data', (d: Buffer) => received.push(d));
    for (let opaque = 1; opaque <= 50; opaque++) {
      conn.write({
        code: 0,
        language: 'JAVA',
        version: 475,
        opaque,
        flag: Flag.RESPONSE,
        extFields: { n: String(opaque) },
      });
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(writes, [50], 'fifty frames of one turn, one writev');
    // The client reads fifty whole frames, in order.
    let all = Buffer.concat(received);
    const opaques: number[] = [];
    while (all.length >= 4) {
      const len = all.readUInt32BE(0);
      if (all.length < 4 + len) break;
      opaques.push(decodeFrame(all.subarray(4, 4 + len)).opaque);
      all = all.subarray(4 + len);
    }
    assert.deepEqual(
      opaques,
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    // A frame written in a later turn goes on its own.
    conn.write({ code: 0, language: 'JAVA', version: 475, opaque: 51, flag: Flag.RESPONSE, extFields: {} });
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(writes, [50, 1]);
  } finally {
    client.destroy();
    accepted.destroy();
    server.close();
  }
});
