/**
 * The admin API lets no one in who does not belong: a web page on another site cannot change the
 * broker through a visitor's browser (a `text/plain` POST is a "simple" request that needs no CORS
 * preflight), a DNS-rebinding page (its own host name, resolved to 127.0.0.1) is refused, and with a
 * token every API call and /metrics needs it. `vela admin` and the SDK's Admin send the token.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { Admin, SimpleConsumer } from '../../src/index.js';
import { isVelaError } from '../../src/common/errors.js';
import { resolveConfig } from '../../src/common/config.js';
import { runAdminCli as runCli } from './cli-run.js';
import { startTestBroker, uniqueName, waitFor, use, closeAll, type TestBroker } from '../support/harness.js';

/** An HTTP request with full control of Host, Origin and Content-Type (fetch forbids setting Host). */
function raw(
  url: string,
  method: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; json: Record<string, unknown> | null; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let json = null;
        try {
          json = JSON.parse(text) as Record<string, unknown>;
        } catch {
          json = null;
        }
        resolve({ status: res.statusCode ?? 0, json, text });
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

let b: TestBroker;
before(async () => {
  b = await startTestBroker();
});
after(async () => {
  await closeAll();
  await b.close();
});

/** A group with one message in its dead-letter queue (retryMaxTimes 0, invisible time runs out). */
async function groupWithDeadLetter(): Promise<{ group: string; topic: string }> {
  const admin = new Admin({ url: b.adminUrl });
  const topic = uniqueName('AccT');
  const group = uniqueName('AccG');
  await admin.createTopic(topic);
  await admin.createGroup(group, { retryMaxTimes: 0 });
  const { Producer } = await import('../../src/index.js');
  const producer = use(new Producer({ endpoints: b.endpoints }));
  await producer.send({ topic, body: 'dead' });
  const consumer = use(
    new SimpleConsumer({
      endpoints: b.endpoints,
      group,
      subscriptions: { [topic]: '*' },
      awaitDurationMs: 1000,
    }),
  );
  assert.equal((await consumer.receive(1, 100)).length, 1); // never acked
  await waitFor(async () => (await admin.deadLetters(group)).messages.length === 1, {
    what: 'the message in the DLQ',
  });
  await consumer.close();
  await producer.close();
  return { group, topic };
}

test('a cross-site text/plain POST cannot resend dead letters; a JSON one can', async () => {
  const { group, topic } = await groupWithDeadLetter();
  const url = `${b.adminUrl}/api/groups/${group}/dlq/resend`;
  // What a form or fetch(…, {mode: 'no-cors'}) on any page can send without a preflight.
  const plain = await raw(url, 'POST', { 'content-type': 'text/plain' }, '{}');
  assert.equal(plain.status, 400);
  assert.equal(plain.json?.error, 'ADMIN_NOT_JSON');
  const form = await raw(url, 'POST', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1');
  assert.equal(form.status, 400);
  const none = await raw(url, 'POST', {}, '');
  assert.equal(none.status, 400);
  assert.equal(b.running.broker.consume.retryBacklog(group, topic), 0, 'nothing was resent');

  // The same request from another site, even as JSON, is refused by its Origin.
  const crossJson = await raw(
    url,
    'POST',
    { 'content-type': 'application/json', origin: 'https://evil.example' },
    '{}',
  );
  assert.equal(crossJson.status, 403);
  const fetchSite = await raw(
    url,
    'POST',
    { 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' },
    '{}',
  );
  assert.equal(fetchSite.status, 403);
  assert.equal(b.running.broker.consume.retryBacklog(group, topic), 0, 'still nothing resent');

  // Same origin (the console) and non-browser clients are served.
  const ok = await raw(
    url,
    'POST',
    { 'content-type': 'application/json; charset=utf-8', origin: b.adminUrl },
    '{}',
  );
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.json?.resent, 1);
});

test('DNS rebinding: a request addressed to a foreign host name is refused, reads and deletes alike', async () => {
  const admin = new Admin({ url: b.adminUrl });
  const topic = uniqueName('AccDel');
  await admin.createTopic(topic);
  const rebound = { host: `attacker.example:${b.running.httpPort}` };
  const del = await raw(`${b.adminUrl}/api/topics/${topic}`, 'DELETE', rebound);
  assert.equal(del.status, 403, del.text);
  assert.equal(del.json?.error, 'ADMIN_FORBIDDEN_ORIGIN');
  const read = await raw(`${b.adminUrl}/api/topics`, 'GET', rebound);
  assert.equal(read.status, 403);
  assert.ok(b.running.broker.topics.get(topic), 'the topic is still there');

  // Loopback names are ours, with or without the port.
  for (const host of [`127.0.0.1:${b.running.httpPort}`, `localhost:${b.running.httpPort}`, 'localhost']) {
    assert.equal((await raw(`${b.adminUrl}/api/topics`, 'GET', { host })).status, 200, host);
  }
  // A cross-origin page's DELETE (browsers preflight it, but it must not pass either way).
  const cross = await raw(`${b.adminUrl}/api/topics/${topic}`, 'DELETE', { origin: 'http://evil.example' });
  assert.equal(cross.status, 403);
  const plainDelete = await raw(
    `${b.adminUrl}/api/topics/${topic}`,
    'DELETE',
    { 'content-type': 'text/plain' },
    'x',
  );
  assert.equal(plainDelete.status, 400);
  assert.ok(b.running.broker.topics.get(topic));
  // The SDK's DELETE (no body) works.
  await admin.deleteTopic(topic);
  assert.equal(b.running.broker.topics.get(topic), undefined);
});

test('with a token: /api needs it, any Host is served, the SDK and the CLI send it', async () => {
  const token = 'tok-0123456789abcdef';
  const tb = await startTestBroker({ adminToken: token });
  try {
    const api = `${tb.adminUrl}/api/topics`;
    const none = await raw(api, 'GET');
    assert.equal(none.status, 401);
    assert.equal(none.json?.error, 'ADMIN_UNAUTHORIZED');
    assert.equal((await raw(api, 'GET', { authorization: 'Bearer wrong-token-000000' })).status, 401);
    // With a token the Host is not what protects the API: a proxy's name is fine.
    const proxied = await raw(api, 'GET', { authorization: `Bearer ${token}`, host: 'vela.internal:443' });
    assert.equal(proxied.status, 200);
    // The console's files and the health check carry no secret.
    assert.equal((await raw(`${tb.adminUrl}/healthz`, 'GET')).status, 200);

    await assert.rejects(new Admin({ url: tb.adminUrl }).listTopics(), (e: unknown) => {
      return (e as { code?: number }).code === 40100;
    });
    const topic = uniqueName('TokT');
    await new Admin({ url: tb.adminUrl, token }).createTopic(topic);

    const cli = (args: string[], env: Record<string, string> = {}) =>
      runCli([...args, '-n', tb.adminUrl], { VELA_ADMIN_TOKEN: '', ...env });
    const denied = await cli(['topicList']);
    assert.equal(denied.status, 1, denied.stderr);
    assert.match(denied.stderr, /token/);
    const byFlag = await cli(['topicList', '--token', token]);
    assert.equal(byFlag.status, 0, byFlag.stderr);
    assert.match(byFlag.stdout, new RegExp(topic));
    const byEnv = await cli(['topicList'], { VELA_ADMIN_TOKEN: token });
    assert.equal(byEnv.status, 0, byEnv.stderr);
  } finally {
    await tb.close();
  }
});

test('a token is required beyond loopback, and must be long enough', () => {
  const refused = (input: object, re: RegExp) =>
    assert.throws(
      () => resolveConfig(input),
      (e: unknown) => isVelaError(e, 'ILLEGAL_CONFIG') && re.test((e as Error).message),
    );
  refused({ host: '0.0.0.0' }, /needs a token/);
  refused({ host: '192.168.1.10' }, /needs a token/);
  refused({ host: '0.0.0.0', adminToken: 'short' }, /at least 16/);
  refused({ adminToken: 'has a space in it!!' }, /printable ASCII/);
  assert.equal(resolveConfig({ host: '0.0.0.0', adminToken: 'x'.repeat(16) }).adminToken, 'x'.repeat(16));
  for (const host of ['127.0.0.1', 'localhost', '::1', '127.1.2.3'])
    assert.equal(resolveConfig({ host }).host, host);
});
