/**
 * The status trailers of the gRPC transport (src/protocol/transport/trailers.ts): submitted from the
 * 'wantTrailers' event through node:http2's native stream handle (same write as the answer) or, when
 * that internal is not usable, through the public `sendTrailers`. Either way the client must get the
 * answer and then `grpc-status` / `grpc-message`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { testGrpcServer } from '../support/harness.js';
import type { GrpcServer } from '../../src/protocol/transport/h2-server.js';
import { frameMessage, GrpcStatus } from '../../src/protocol/transport/grpc-wire.js';
import { nativeTrailers, resetTrailersPath, sendTrailersNow } from '../../src/protocol/transport/trailers.js';

let server: GrpcServer;
let port: number;

before(async () => {
  server = testGrpcServer();
  // Echo: answers the request's bytes.
  server.register('/t.T/Echo', { kind: 'unary', onRequest: (call, m) => call.sendUnary(m) });
  // Two messages, then a failure status with a message that needs percent-encoding.
  server.register('/t.T/Fail', {
    kind: 'server-stream',
    onRequest: (call, m) => {
      call.write(m);
      call.write(m);
      call.end(GrpcStatus.ABORTED, 'gone: 100% ünicode');
    },
  });
  port = await server.listen(0);
});

after(async () => {
  resetTrailersPath();
  await server.close(100);
});

interface Answer {
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
  trailers: http2.IncomingHttpHeaders;
}

async function callOnce(path: string, payload: Buffer): Promise<Answer> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise<Answer>((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const chunks: Buffer[] = [];
      let trailers: http2.IncomingHttpHeaders = {};
      let headers: http2.IncomingHttpHeaders = {};
      stream.on('response', (h) => (headers = h));
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('trailers', (t) => (trailers = t));
      stream.on('error', reject);
      stream.on('close', () => resolve({ headers, body: Buffer.concat(chunks), trailers }));
      stream.end(frameMessage(payload));
    });
  } finally {
    session.close();
  }
}

for (const path of ['native handle', 'public sendTrailers'] as const) {
  test(`a unary answer ends with grpc-status 0 (${path})`, async () => {
    resetTrailersPath(path === 'public sendTrailers' ? 'public' : undefined);
    for (let i = 0; i < 3; i++) {
      const a = await callOnce('/t.T/Echo', Buffer.from(`hello ${i}`));
      assert.deepEqual(a.body, frameMessage(Buffer.from(`hello ${i}`)));
      assert.equal(a.headers[':status'], 200);
      assert.equal(a.headers['content-type'], 'application/grpc');
      assert.equal(a.headers.date, undefined, 'no date header: gRPC does not use it');
      assert.equal(a.trailers['grpc-status'], '0');
      assert.equal(a.trailers['grpc-message'], undefined);
    }
    // On Node 20 the internal is used; a later Node takes the public path until it is checked there.
    const node20 = process.versions.node.startsWith('20.');
    assert.equal(nativeTrailers(), path === 'native handle' && node20);
  });

  test(`a failure after messages carries its status and encoded message (${path})`, async () => {
    resetTrailersPath(path === 'public sendTrailers' ? 'public' : undefined);
    const a = await callOnce('/t.T/Fail', Buffer.from('x'));
    assert.deepEqual(a.body, Buffer.concat([frameMessage(Buffer.from('x')), frameMessage(Buffer.from('x'))]));
    assert.equal(a.trailers['grpc-status'], String(GrpcStatus.ABORTED));
    assert.equal(decodeURIComponent(String(a.trailers['grpc-message'])), 'gone: 100% ünicode');
  });
}

test('a native handle of another shape: the public sendTrailers, from then on', () => {
  resetTrailersPath();
  const sent: Record<string, string>[] = [];
  let nativeCalls = 0;
  const fake = {
    destroyed: false,
    closed: false,
    [Symbol('kHandle')]: {
      trailers: () => {
        nativeCalls++;
        throw new TypeError('not the list this Node expects');
      },
    },
    sendTrailers: (t: Record<string, string>) => sent.push(t),
  } as unknown as http2.ServerHttp2Stream;
  sendTrailersNow(fake, { 'grpc-status': '0' });
  sendTrailersNow(fake, { 'grpc-status': '1' });
  assert.equal(nativeCalls, process.versions.node.startsWith('20.') ? 1 : 0);
  assert.deepEqual(sent, [{ 'grpc-status': '0' }, { 'grpc-status': '1' }]);
  assert.equal(nativeTrailers(), false);
  resetTrailersPath();
});
