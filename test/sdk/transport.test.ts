/**
 * The SDK's gRPC transport (src/client/h2-channel.ts): deadlines and cancellation reach the server as
 * RST_STREAM, failed dials back off instead of hammering the broker, and a client keeps working after
 * the broker restarts on the same port.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { H2Channel, TransportError } from '../../src/client/h2-channel.js';
import { GrpcStatus } from '../../src/common/codes.js';
import { Producer } from '../../src/index.js';
import { tempDir } from '../helpers.js';
import { startTestBroker, unique, use, closeAll } from './support.js';
import { startH2TestServer } from '../support/h2-test-server.js';
import { HpackEncoder } from '../../src/common/http2/hpack.js';

const PATH = '/apache.rocketmq.v2.MessagingService/SendMessage';

/** An HTTP/2 server that accepts calls and never answers; reports each stream's end. */
async function silentServer(): Promise<{ port: number; closed: Promise<number>[]; close(): Promise<void> }> {
  const server = http2.createServer();
  const closed: Promise<number>[] = [];
  const open = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    open.add(session);
    session.once('close', () => open.delete(session));
  });
  server.on('stream', (stream) => {
    stream.on('error', () => {});
    closed.push(new Promise((resolve) => stream.once('close', () => resolve(stream.rstCode ?? -1))));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    closed,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of open) s.destroy();
      }),
  };
}

describe('SDK transport', () => {
  after(() => closeAll());

  test('a deadline fails the call with DEADLINE_EXCEEDED and resets the stream', async () => {
    const s = await silentServer();
    const ch = new H2Channel({
      addresses: [{ host: '127.0.0.1', port: s.port }],
      maxReceiveMessageBytes: 1 << 20,
    });
    try {
      const t0 = Date.now();
      await assert.rejects(ch.unary(PATH, {}, Buffer.alloc(3), 200), (e: unknown) => {
        assert.ok(e instanceof TransportError);
        assert.equal(e.code, GrpcStatus.DEADLINE_EXCEEDED);
        return true;
      });
      assert.ok(Date.now() - t0 < 2000);
      assert.equal(await s.closed[0], http2.constants.NGHTTP2_CANCEL, 'the server saw RST_STREAM(CANCEL)');
    } finally {
      ch.close();
      await s.close();
    }
  });

  test('an AbortSignal cancels the call with its reason and resets the stream', async () => {
    const s = await silentServer();
    const ch = new H2Channel({
      addresses: [{ host: '127.0.0.1', port: s.port }],
      maxReceiveMessageBytes: 1 << 20,
    });
    try {
      const ac = new AbortController();
      const call = ch.unary(PATH, {}, Buffer.alloc(3), 10_000, ac.signal);
      while (s.closed.length === 0) await new Promise((r) => setTimeout(r, 5));
      ac.abort(new Error('stop'));
      await assert.rejects(call, /stop/);
      assert.equal(await s.closed[0], http2.constants.NGHTTP2_CANCEL);
    } finally {
      ch.close();
      await s.close();
    }
  });

  test('an answer of a few MiB (a pull of 1,024 messages) goes out whole: none of it waits for the SDK to read', async () => {
    const hpack = new HpackEncoder();
    const ANSWER = 3 * 1024 * 1024;
    let waiting = -1;
    const server = await startH2TestServer(
      {
        maxConcurrentStreams: 8,
        streamWindow: 1 << 20,
        connectionWindow: 16 << 20,
        maxHeaderListSize: 64 << 10,
      },
      (s) => {
        s.onEnd = () => {
          s.respond(hpack.encode({ ':status': '200', 'content-type': 'application/grpc' }), false);
          const msg = Buffer.alloc(5 + ANSWER, 7);
          msg[0] = 0;
          msg.writeUInt32BE(ANSWER, 1);
          s.write(msg);
          waiting = s.queuedBytes; // bytes beyond the client's window
          s.trailers(hpack.encode({ 'grpc-status': '0' }));
        };
      },
    );
    const ch = new H2Channel({
      addresses: [{ host: '127.0.0.1', port: server.port }],
      maxReceiveMessageBytes: 4 << 20,
    });
    try {
      const answer = await ch.unary(PATH, {}, Buffer.alloc(3), 10_000);
      assert.equal(answer.length, ANSWER);
      assert.equal(waiting, 0, 'the whole answer fit in the window the SDK gives a call');
    } finally {
      ch.close();
      await server.close();
    }
  });

  test('failed dials back off: calls fail fast with UNAVAILABLE instead of dialling again', async () => {
    let dials = 0;
    const refuser = net.createServer((sock) => {
      dials++;
      sock.destroy();
    });
    await new Promise<void>((r) => refuser.listen(0, '127.0.0.1', r));
    const port = (refuser.address() as net.AddressInfo).port;
    const ch = new H2Channel({ addresses: [{ host: '127.0.0.1', port }], maxReceiveMessageBytes: 1 << 20 });
    try {
      for (let i = 0; i < 5; i++) {
        await assert.rejects(ch.unary(PATH, {}, Buffer.alloc(3), 2000), (e: unknown) => {
          assert.ok(e instanceof TransportError);
          assert.equal(e.code, GrpcStatus.UNAVAILABLE);
          return true;
        });
      }
      assert.equal(dials, 1, 'one dial; the next calls waited for the backoff to pass');
      // waitForReady keeps dialling (with backoff) until its time is up.
      await assert.rejects(ch.waitForReady(300), TransportError);
    } finally {
      ch.close();
      await new Promise<void>((r) => refuser.close(() => r()));
    }
  });

  test('a producer keeps sending after the broker restarts on the same port', async () => {
    const dir = tempDir('vela-restart-');
    try {
      let b = await startTestBroker({ dataDir: dir.path });
      const port = b.running.grpcPort;
      const topic = unique('RestartT');
      await b.running.broker.topics.upsert(topic, {});
      const producer = use(new Producer({ endpoints: b.endpoints, requestTimeoutMs: 2000 }));
      await producer.send({ topic, body: 'before' });
      await b.close();
      b = await startTestBroker({ dataDir: dir.path, grpcPort: port });
      try {
        const r = await producer.send({ topic, body: 'after' });
        assert.ok(r.messageId);
      } finally {
        await producer.close();
        await b.close();
      }
    } finally {
      dir.cleanup();
    }
  });
});
