/**
 * `vela admin` prints what clients chose (message ids, born hosts, keys, bodies) with control
 * characters escaped: a client must not be able to rewrite an operator's terminal with ANSI escapes,
 * carriage returns or bidi overrides hidden in a message id or a host name.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { RawClient } from './raw-client.js';
import { runAdminCli as runCli } from './cli-run.js';
import { fromMillis } from '../../src/protocol/codec.js';
import { startTestBroker, uniqueName, type TestBroker } from '../support/harness.js';
import { escapeControl } from '../../src/common/escape.js';

const ESC = '\u001b';
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/;

let b: TestBroker;
let raw: RawClient;
before(async () => {
  b = await startTestBroker();
  raw = new RawClient(b.endpoints);
});
after(async () => {
  raw.close();
  await b.close();
});

/** The CLI in a child process (asynchronously: the broker answers from this process). */
const cli = (...args: string[]) => runCli([...args, '-n', b.adminUrl]);

test('message ids, born hosts and bodies are printed with control characters escaped', async () => {
  const topic = uniqueName('EscT');
  await b.running.broker.topics.upsert(topic, {});
  const key = uniqueName('k');
  const evilId = `ID${ESC}[2J${ESC}]0;pwned\u0007\rFAKE\u202e`;
  const evilHost = `host${ESC}[31mred\u009b`;
  const res = await raw.unary('SendMessage', {
    messages: [
      {
        topic: { name: topic },
        body: Buffer.from('line one\nline two\rOVERWRITE\u007f\u009b'),
        system_properties: {
          message_id: evilId,
          keys: [key],
          message_type: 1,
          body_encoding: 1,
          born_timestamp: fromMillis(Date.now()),
          born_host: evilHost,
        },
      },
    ],
  });
  assert.equal(res.status.code, 20000, JSON.stringify(res.status));

  const list = await cli('queryMsgByKey', '-k', key, '-t', topic);
  assert.equal(list.status, 0, list.stderr);
  assert.ok(!CONTROL.test(list.stdout), JSON.stringify(list.stdout));
  assert.ok(list.stdout.includes(escapeControl(evilId)), list.stdout);

  const one = await cli('queryMsgById', '-i', evilId, '-t', topic);
  assert.equal(one.status, 0, one.stderr);
  assert.ok(!CONTROL.test(one.stdout), JSON.stringify(one.stdout));
  assert.ok(one.stdout.includes('host\\x1b[31mred\\x9b'), one.stdout);
  // The body keeps its lines; a carriage return, DEL and a C1 CSI are shown as text.
  assert.ok(one.stdout.includes('line one\nline two\\x0dOVERWRITE\\x7f\\x9b'), one.stdout);

  // Error messages that quote a client's id are escaped as well.
  const missing = await cli('resendDlqMsg', '-g', 'NoSuchGroupX', '-i', `x${ESC}[2J`);
  assert.notEqual(missing.status, 0);
  assert.ok(!missing.stderr.includes(ESC), JSON.stringify(missing.stderr));
});

test('escapeControl leaves ordinary text alone', () => {
  assert.equal(escapeControl('01ABCDEF 127.0.0.1:5000 grüße 消息'), '01ABCDEF 127.0.0.1:5000 grüße 消息');
  assert.equal(escapeControl('a\tb\nc'), 'a\\x09b\\x0ac');
});
