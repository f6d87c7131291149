/**
 * The SDK over TLS: `tls: { ca }` with the broker's self-signed certificate, a plaintext SDK client on
 * the same port at the same time, `enforcing` mode refusing plaintext, an untrusted certificate
 * refused, the certificate kept across restarts, HTTPS on the admin API, and the per-call
 * authenticator hook seeing the peer and refusing with its own status.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import https from 'node:https';
import { Producer, SimpleConsumer, VelaClientError } from '../../src/index.js';
import { VelaError } from '../../src/common/errors.js';
import { Code } from '../../src/common/codes.js';
import { tempDir } from '../helpers.js';
import { startTestBroker, unique, type TestBroker } from './support.js';

describe('SDK TLS', () => {
  let b: TestBroker;
  const peers: { method: string; secure: boolean }[] = [];
  before(async () => {
    b = await startTestBroker({
      httpTls: true,
      authenticate: (req) => {
        peers.push({ method: req.method, secure: req.peer.secure });
        if (req.header('x-mq-namespace') === 'forbidden-ns') throw new VelaError('FORBIDDEN', 'not you');
      },
    });
  });
  after(() => b.close());

  test('the self-signed certificate covers 127.0.0.1 and localhost and is kept in the data dir', () => {
    const tls = b.running.tls!;
    assert.equal(tls.selfSigned, true);
    assert.equal(tls.certFile, `${b.dataDir}/tls/vela-cert.pem`);
    const x = new X509Certificate(readFileSync(tls.certFile));
    assert.match(x.subjectAltName ?? '', /DNS:localhost/);
    assert.match(x.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.equal(x.fingerprint256, tls.fingerprint);
  });

  test('tls: { ca } and plaintext clients share the port', async () => {
    const topic = unique('TlsT');
    const group = unique('TlsG');
    await b.running.broker.topics.upsert(topic, {});
    await b.running.broker.groups.upsert(group, {});
    const ca = readFileSync(b.running.tls!.certFile);
    const producer = new Producer({ endpoints: b.endpoints, tls: { ca } });
    const consumer = new SimpleConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      awaitDurationMs: 1000,
    });
    try {
      peers.length = 0;
      const receipt = await producer.send({ topic, body: 'secret' });
      assert.ok(
        peers.some((p) => p.method === 'SendMessage' && p.secure),
        'sent over TLS',
      );
      await consumer.start();
      const [m] = await consumer.receive(1, 10_000);
      assert.equal(m?.messageId, receipt.messageId);
      assert.equal(m?.body.toString(), 'secret');
      await consumer.ack(m!);
      assert.ok(
        peers.some((p) => p.method === 'ReceiveMessage' && !p.secure),
        'received in plaintext',
      );
    } finally {
      await producer.close();
      await consumer.close();
    }
  });

  test('a certificate the client does not trust is refused (UNAVAILABLE, retriable)', async () => {
    const producer = new Producer({ endpoints: b.endpoints, tls: true, requestTimeoutMs: 2000 });
    try {
      await assert.rejects(producer.send({ topic: 'Anything', body: 'x' }), (e: unknown) => {
        assert.ok(e instanceof VelaClientError);
        assert.equal(e.transport, true);
        assert.match(e.message, /certificate/i);
        return true;
      });
    } finally {
      await producer.close();
    }
  });

  test('the authenticator refuses a call with its own status', async () => {
    const topic = unique('AuthT');
    await b.running.broker.topics.upsert(`forbidden-ns%${topic}`, {}).catch(() => {});
    const producer = new Producer({ endpoints: b.endpoints, namespace: 'forbidden-ns', maxAttempts: 1 });
    try {
      await assert.rejects(producer.send({ topic, body: 'x' }), (e: unknown) => {
        assert.ok(e instanceof VelaClientError);
        assert.equal(e.code, Code.FORBIDDEN);
        return true;
      });
    } finally {
      await producer.close();
    }
  });

  test('the admin API serves HTTPS with the same certificate', async () => {
    const ca = readFileSync(b.running.tls!.certFile);
    const body = await new Promise<string>((resolve, reject) => {
      https
        .get(`https://127.0.0.1:${b.running.httpPort}/healthz`, { ca }, (res) => {
          let t = '';
          res.on('data', (d: Buffer) => (t += d.toString()));
          res.on('end', () => resolve(t));
        })
        .on('error', reject);
    });
    assert.deepEqual(JSON.parse(body), { ok: true });
  });
});

describe('SDK TLS: enforcing mode and restarts', () => {
  test('enforcing refuses plaintext; the same certificate is used after a restart', async () => {
    const dir = tempDir('vela-tls-');
    try {
      let b = await startTestBroker({ dataDir: dir.path, tlsMode: 'enforcing' });
      const first = b.running.tls!.fingerprint;
      const ca = readFileSync(b.running.tls!.certFile);
      const topic = unique('EnfT');
      await b.running.broker.topics.upsert(topic, {});
      const plain = new Producer({ endpoints: b.endpoints, requestTimeoutMs: 2000, maxAttempts: 1 });
      try {
        await assert.rejects(plain.send({ topic, body: 'x' }), (e: unknown) => {
          assert.ok(e instanceof VelaClientError && e.transport);
          return true;
        });
      } finally {
        await plain.close();
      }
      await b.close();
      b = await startTestBroker({ dataDir: dir.path, tlsMode: 'enforcing' });
      try {
        assert.equal(b.running.tls!.fingerprint, first, 'the certificate was reused');
        const secure = new Producer({ endpoints: b.endpoints, tls: { ca } });
        try {
          const r = await secure.send({ topic, body: 'y' });
          assert.match(r.messageId, /\w+/);
        } finally {
          await secure.close();
        }
      } finally {
        await b.close();
      }
    } finally {
      dir.cleanup();
    }
  });
});
