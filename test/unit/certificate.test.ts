import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { generateSelfSigned } from '../../src/protocol/transport/certificate.js';

test('a random serial starting with zero bits still makes a valid certificate (minimal DER integer)', async () => {
  for (const first of [0x00, 0x01, 0x7f, 0x80, 0xff]) {
    const serial = Buffer.alloc(16, 0x11);
    serial[0] = first;
    const { cert } = await generateSelfSigned([], () => Buffer.from(serial));
    assert.doesNotThrow(() => new X509Certificate(cert), `serial starting 0x${first.toString(16)}`);
  }
});

test('self-signed certificates are valid DER every time, for the loopback names and given hosts', async () => {
  // Random serial numbers once produced a non-minimal DER integer (1 in 256 certificates).
  for (let i = 0; i < 300; i++) {
    const { cert, key } = await generateSelfSigned(i === 0 ? ['broker.example', '10.1.2.3', 'fe80::1'] : []);
    const x = new X509Certificate(cert);
    assert.ok(x.checkPrivateKey(createPrivateKey(key)));
    assert.ok(x.verify(x.publicKey), 'self-signed');
    if (i === 0) {
      const san = x.subjectAltName ?? '';
      for (const name of [
        'DNS:localhost',
        'IP Address:127.0.0.1',
        'IP Address:0:0:0:0:0:0:0:1',
        'DNS:broker.example',
        'IP Address:10.1.2.3',
        'IP Address:FE80:0:0:0:0:0:0:1',
      ]) {
        assert.ok(san.includes(name), `${name} in ${san}`);
      }
      assert.ok(new Date(x.validTo).getTime() > Date.now() + 9 * 365 * 86_400_000);
    }
  }
});
