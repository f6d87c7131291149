/**
 * HTTP/2 conformance of Vela's own HTTP/2 (src/common/http2/): h2spec 2.2.1 (pinned in
 * test/conformance/h2spec/go.mod, built here with Go) runs all its suites — framing, stream states,
 * flow control, settings, HPACK, request rules; 145 cases — against a server on the same
 * connection class the broker's gRPC port uses, answering each request with a small body as an
 * HTTP server would (h2spec sends plain GETs, which the gRPC port itself answers with 415 at once).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { HpackEncoder } from '../../src/common/http2/hpack.js';
import { startH2TestServer, type H2TestServer } from '../support/h2-test-server.js';

const SOURCE = join(import.meta.dirname, 'h2spec');
const OUT = join(import.meta.dirname, '..', '..', '.cache', 'h2spec');
const HEADERS = new HpackEncoder().encode({ ':status': '200', 'content-type': 'text/plain' });

let server: H2TestServer;

before(async () => {
  server = await startH2TestServer(
    {
      maxConcurrentStreams: 100,
      streamWindow: 65_535,
      connectionWindow: 65_535,
      maxHeaderListSize: 64 * 1024,
    },
    (s) => {
      s.onData = () => {};
      s.onEnd = () => {
        s.respond(HEADERS, false);
        s.write(Buffer.from('hello'), true);
      };
    },
  );
});

after(() => server.close());

test('h2spec: every test case (generic, HTTP/2, HPACK) passes', { timeout: 300_000 }, async () => {
  mkdirSync(OUT, { recursive: true });
  const binary = join(OUT, 'h2spec');
  const build = spawnSync(
    'go',
    ['build', '-mod=readonly', '-buildvcs=false', '-o', binary, 'github.com/summerwind/h2spec/cmd/h2spec'],
    { cwd: SOURCE, encoding: 'utf8', timeout: 240_000 },
  );
  assert.equal(build.status, 0, `building h2spec failed:\n${build.stderr}`);
  const run = spawn(binary, ['-h', '127.0.0.1', '-p', String(server.port), '-o', '2'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  run.stdout.on('data', (d: Buffer) => (out += d.toString()));
  run.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await once(run, 'close');
  const summary = /(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed/.exec(out);
  assert.ok(summary, `no h2spec summary in:\n${out.slice(-3000)}`);
  const failures = out.includes('Failures:') ? out.slice(out.indexOf('Failures:')) : '';
  assert.equal(Number(summary[4]), 0, `h2spec failures:\n${failures.slice(0, 6000)}`);
  assert.ok(Number(summary[2]) >= 145, `only ${summary[2]} of ${summary[1]} cases ran and passed`);
});
