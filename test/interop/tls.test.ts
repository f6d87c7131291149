/**
 * Interop: the official Node client over TLS (`sslEnabled: true`) and in plaintext against the same
 * gRPC port, which detects the TLS handshake by its first byte; the broker's self-signed certificate
 * (generated into its data dir) is trusted through NODE_EXTRA_CA_CERTS, as a user would.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Producer } from 'rocketmq-client-nodejs';
import { startTestBroker, type TestBroker } from '../support/harness.js';
import {
  clientLogger,
  createGroup,
  createTopic,
  receiveN,
  simpleConsumer,
  type InteropBroker,
} from './support.js';

const CHILD = fileURLToPath(new URL('./tls-child.ts', import.meta.url));

describe('interop: TLS and plaintext on one port', () => {
  let tb: TestBroker;
  let b: InteropBroker;
  /** How each client id connected, as the authenticator hook saw it. */
  const secure = new Map<string, boolean>();
  before(async () => {
    tb = await startTestBroker({
      consume: { minInvisibleMs: 1000 },
      authenticate: (req) => {
        const id = req.header('x-mq-client-id');
        if (id) secure.set(id, req.peer.secure);
      },
    });
    b = { running: tb.running, endpoints: tb.endpoints, close: tb.close };
  });
  after(async () => {
    await tb.close();
  });

  test('sslEnabled: true sends and consumes over TLS, trusting the self-signed certificate', async () => {
    const tls = tb.running.tls!;
    assert.ok(tls.selfSigned);
    const topic = await createTopic(b, 'TlsTopic');
    const group = await createGroup(b, 'TlsGroup');
    // grpc-js trusts GRPC_DEFAULT_SSL_ROOTS_FILE_PATH instead of Node's store when it is set.
    const { GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: _roots, ...env } = process.env;
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', CHILD, b.endpoints, topic, group], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...env, NODE_EXTRA_CA_CERTS: tls.certFile },
      });
      let text = '';
      child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
      child.on('error', reject);
      child.on('exit', () => resolve(text));
    });
    const result = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as Record<string, string>;
    assert.equal(result.error, undefined, result.error);
    assert.equal(result.received, result.sent);
    assert.equal(result.body, 'over TLS');
    const sessions = [...secure.entries()].filter(([, s]) => s);
    assert.ok(sessions.length >= 2, 'the producer and the consumer connected over TLS');
  });

  test('a plaintext official client on the same port at the same time', async () => {
    const topic = await createTopic(b, 'PlainTopic');
    const group = await createGroup(b, 'PlainGroup');
    const producer = new Producer({ endpoints: b.endpoints, namespace: '', topic, logger: clientLogger() });
    await producer.startup();
    const consumer = await simpleConsumer(b, group, topic);
    try {
      const receipt = await producer.send({ topic, body: Buffer.from('plain') });
      const got = await receiveN(consumer, 1);
      assert.equal(got[0]?.messageId, receipt.messageId);
      assert.equal(secure.get(producer.clientId), false);
    } finally {
      await producer.shutdown();
      await consumer.shutdown();
    }
  });
});
