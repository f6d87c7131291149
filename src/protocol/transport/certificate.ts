/**
 * The certificate TLS is served with: the configured PEM files, or, when none is configured, a
 * self-signed one kept in `<dataDir>/tls/` — generated on first start (ECDSA P-256, valid 10 years,
 * for localhost, 127.0.0.1, ::1, this host's name and the address the broker listens on) and reused on
 * every later start, so clients that pinned it keep working. The SHA-256 fingerprint is logged.
 *
 * Keys and signatures come from Node's WebCrypto; the certificate structure (X.509/ASN.1) is built
 * with PKI.js (pkijs + asn1js, maintained by Peculiar Ventures): pure JavaScript, no system `openssl`
 * binary needed, no global polyfills, and an EC key takes milliseconds where an RSA one takes
 * hundreds. The RocketMQ proxy does the same in its test mode (a self-signed certificate).
 */
import { X509Certificate, createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { hostname } from 'node:os';
import { isIP } from 'node:net';
import { dirname, join } from 'node:path';
import type { Logger } from '../../common/logger.js';

export interface TlsCertificate {
  cert: string;
  key: string;
  /** SHA-256 fingerprint, `AA:BB:…`. */
  fingerprint: string;
  /** Where the certificate was read from. */
  certFile: string;
  selfSigned: boolean;
}

export interface CertificateOptions {
  /** Configured PEM files (both or neither). */
  certFile?: string;
  keyFile?: string;
  dataDir: string;
  /** Extra names and addresses the self-signed certificate covers (e.g. the listen address). */
  hosts?: string[];
  logger: Logger;
}

export const SELF_SIGNED_DIR = 'tls';
const CERT_NAME = 'vela-cert.pem';
const KEY_NAME = 'vela-key.pem';

/** Read the configured certificate, or the self-signed one (generated on first start). */
export async function loadCertificate(o: CertificateOptions): Promise<TlsCertificate> {
  if (o.certFile && o.keyFile) {
    const [cert, key] = await Promise.all([readPem(o.certFile), readPem(o.keyFile)]);
    const fingerprint = check(cert, key, o.certFile);
    o.logger.info({ certFile: o.certFile, fingerprint }, 'TLS certificate loaded');
    return { cert, key, fingerprint, certFile: o.certFile, selfSigned: false };
  }
  const dir = join(o.dataDir, SELF_SIGNED_DIR);
  const certFile = join(dir, CERT_NAME);
  const keyFile = join(dir, KEY_NAME);
  let pair: { cert: string; key: string } | undefined;
  try {
    pair = { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  let created = false;
  if (!pair) {
    pair = await generateSelfSigned(o.hosts ?? []);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeAtomically(keyFile, pair.key, 0o600);
    await writeAtomically(certFile, pair.cert, 0o644);
    created = true;
  }
  const fingerprint = check(pair.cert, pair.key, certFile);
  o.logger.info(
    { certFile, fingerprint },
    created
      ? 'generated a self-signed TLS certificate (configure tlsCert/tlsKey to use your own)'
      : 'using the self-signed TLS certificate',
  );
  return { ...pair, fingerprint, certFile, selfSigned: true };
}

async function readPem(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read TLS file ${file}: ${(err as Error).message}`);
  }
}

/** The fingerprint, after checking that the key belongs to the certificate. */
function check(cert: string, key: string, certFile: string): string {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`${certFile} is not a PEM certificate: ${(err as Error).message}`);
  }
  try {
    if (!x509.checkPrivateKey(createPrivateKey(key)))
      throw new Error('the key does not match the certificate');
  } catch (err) {
    throw new Error(`TLS key for ${certFile}: ${(err as Error).message}`);
  }
  return x509.fingerprint256;
}

/** Write, fsync, rename, fsync the directory: after a power cut the file is whole or absent. */
async function writeAtomically(file: string, text: string, mode: number): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  const fh = await open(tmp, 'w', mode);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
  const dir = await open(dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** A self-signed ECDSA P-256 certificate for `hosts` plus the loopback names. */
export async function generateSelfSigned(
  hosts: string[],
  /** Source of the serial number's bytes (tests pass their own). */
  random: (n: number) => Buffer = randomBytes,
): Promise<{ cert: string; key: string }> {
  const pkijs = await import('pkijs');
  const asn1js = await import('asn1js');
  const engine = new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto as never });
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;

  const cert = new pkijs.Certificate();
  cert.version = 2;
  const serial = random(16);
  // Positive, and never a leading zero byte: DER wants the shortest encoding of the integer.
  serial[0] = (serial[0]! & 0x3f) | 0x40;
  cert.serialNumber = new asn1js.Integer({ valueHex: serial });
  const name = () => [
    new pkijs.AttributeTypeAndValue({
      type: '2.5.4.3', // commonName
      value: new asn1js.Utf8String({ value: 'Vela broker (self-signed)' }),
    }),
  ];
  cert.issuer.typesAndValues = name();
  cert.subject.typesAndValues = name();
  const now = Date.now();
  cert.notBefore.value = new Date(now - 3600_000);
  cert.notAfter.value = new Date(now + 3650 * 86_400_000);

  const dns = new Set<string>(['localhost']);
  const ips = new Set<string>(['127.0.0.1', '::1']);
  for (const h of [...hosts, hostname()]) {
    if (!h || h === '0.0.0.0' || h === '::') continue;
    if (isIP(h)) ips.add(h);
    else dns.add(h);
  }
  const altNames = new pkijs.GeneralNames({
    names: [
      ...[...dns].map((value) => new pkijs.GeneralName({ type: 2, value })),
      ...[...ips].map(
        (ip) =>
          new pkijs.GeneralName({
            type: 7,
            value: new asn1js.OctetString({ valueHex: ipBytes(ip) }),
          }),
      ),
    ],
  });
  cert.extensions = [
    new pkijs.Extension({
      extnID: '2.5.29.17', // subjectAltName
      critical: false,
      extnValue: altNames.toSchema().toBER(false),
      parsedValue: altNames,
    }),
    new pkijs.Extension({
      extnID: '2.5.29.19', // basicConstraints: not a CA
      critical: true,
      extnValue: new pkijs.BasicConstraints({ cA: false }).toSchema().toBER(false),
    }),
    new pkijs.Extension({
      extnID: '2.5.29.37', // extKeyUsage: serverAuth
      critical: false,
      extnValue: new pkijs.ExtKeyUsage({ keyPurposes: ['1.3.6.1.5.5.7.3.1'] }).toSchema().toBER(false),
    }),
  ];
  await cert.subjectPublicKeyInfo.importKey(keys.publicKey as never, engine);
  await cert.sign(keys.privateKey as never, 'SHA-256', engine);
  const der = Buffer.from(cert.toSchema(true).toBER(false));
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { cert: pem('CERTIFICATE', der), key: pem('PRIVATE KEY', pkcs8) };
}

function pem(label: string, der: Buffer): string {
  const body = der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
}

function ipBytes(ip: string): ArrayBuffer {
  if (isIP(ip) === 4) return Uint8Array.from(ip.split('.').map(Number)).buffer;
  // IPv6: expand '::' and write 8 groups of 16 bits.
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g || '0', 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out.buffer;
}
