/**
 * A gRPC call on the server side (src/protocol/transport/server-call.ts): an answer's bytes count
 * against its connection's outbound budget until its stream closes, and are released then, so a
 * client that reads its answers can make any number of calls on one connection; and the call's light
 * cancel signal (what long polls wait with) fires when the client cancels.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { testGrpcServer } from '../support/harness.js';
import type { GrpcServer } from '../../src/protocol/transport/h2-server.js';
import type { ServerCall } from '../../src/protocol/transport/server-call.js';
import { frameMessage, GrpcStatus } from '../../src/protocol/transport/grpc-wire.js';

const ANSWER_BYTES = 3 * 1024;
let server: GrpcServer;
const waiting: ServerCall[] = [];
const cancelled: ServerCall[] = [];
let port: number;

before(async () => {
  server = testGrpcServer({
    // Less than two answers: a second call is refused while the first answer is still counted.
    maxConnectionOutboundBytes: 4 * 1024,
  });
  server.register('/t.T/Big', {
    kind: 'unary',
    onRequest: (call) => call.sendUnary(Buffer.alloc(ANSWER_BYTES, 7)),
  });
  server.register('/t.T/BigStream', {
    kind: 'server-stream',
    onRequest: (call) => call.sendAll([Buffer.alloc(ANSWER_BYTES / 2, 1), Buffer.alloc(ANSWER_BYTES / 2, 2)]),
  });
  // Answers nothing: waits until the client cancels, like a parked long poll.
  server.register('/t.T/Wait', {
    kind: 'server-stream',
    onRequest: (call) => {
      waiting.push(call);
      call.cancelSignal.addEventListener('abort', () => cancelled.push(call), { once: true });
    },
  });
  port = await server.listen(0);
});

after(() => server.close(100));

function call(session: http2.ClientHttp2Session, path: string): Promise<{ bytes: number; status: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let bytes = 0;
    let status = '';
    stream.on('response', (h) => (status = String(h['grpc-status'] ?? status)));
    stream.on('data', (c: Buffer) => (bytes += c.length));
    stream.on('trailers', (t) => (status = String(t['grpc-status'])));
    stream.on('error', reject);
    stream.on('close', () => resolve({ bytes, status }));
    stream.end(frameMessage(Buffer.from('go')));
  });
}

test('answered calls give their bytes back: 50 answers of 3 KiB, one after another, under a 4 KiB budget', async () => {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    for (let i = 0; i < 50; i++) {
      const path = i % 2 === 0 ? '/t.T/Big' : '/t.T/BigStream';
      const a = await call(session, path);
      assert.equal(a.status, String(GrpcStatus.OK), `call ${i} (${path})`);
      assert.ok(a.bytes >= ANSWER_BYTES, `call ${i} got its whole answer (${a.bytes} bytes)`);
    }
  } finally {
    session.close();
  }
});

test("a call's cancel signal fires when the client cancels, and only for that call", async () => {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  try {
    const open = () => {
      const s = session.request({
        ':method': 'POST',
        ':path': '/t.T/Wait',
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': '60S',
      });
      s.on('error', () => {});
      s.end(frameMessage(Buffer.from('wait')));
      return s;
    };
    const first = open();
    const second = open();
    for (let i = 0; i < 200 && waiting.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(waiting.length, 2);
    assert.equal(waiting[0]!.cancelSignal.aborted, false, 'not aborted before the deadline or a cancel');
    first.close(http2.constants.NGHTTP2_CANCEL);
    for (let i = 0; i < 200 && cancelled.length < 1; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(cancelled.length, 1, 'the listener fired once');
    const gone = cancelled[0]!;
    assert.ok(gone.cancelSignal.aborted);
    const other = waiting.find((c) => c !== gone)!;
    assert.equal(other.cancelSignal.aborted, false, 'the other call is still waiting');
    second.close(http2.constants.NGHTTP2_CANCEL);
    for (let i = 0; i < 200 && cancelled.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(cancelled.length, 2);
  } finally {
    session.destroy();
  }
});
