/** The Remoting port setting, and the VIP channel on port − 2. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { resolveConfig, DEFAULTS } from '../../src/server.js';
import { RequestCode } from '../../src/remoting/codes.js';
import { startTestBroker, type TestBroker } from '../support/harness.js';
import { RawRemotingClient } from './raw-client.js';

test('remotingPort: default 9876, checked like the other ports', () => {
  assert.equal(DEFAULTS.remotingPort, 9876);
  assert.equal(resolveConfig({ remotingPort: 0 }).remotingPort, 0);
  assert.throws(() => resolveConfig({ remotingPort: 70000 }), /not a port number/);
  assert.throws(
    () => resolveConfig({ remotingPort: 8082, httpPort: 8082 }),
    /also given as a gRPC or HTTP port/,
  );
  assert.throws(
    () => resolveConfig({ remotingPort: 9000, grpcPort: [9000] }),
    /also given as a gRPC or HTTP port/,
  );
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

test('a fixed Remoting port is also served on port − 2 (the Dashboard VIP channel)', async () => {
  for (let attempt = 0; attempt < 10; attempt++) {
    const port = await freePort();
    if (port < 1026) continue;
    let b: TestBroker;
    try {
      b = await startTestBroker({ remotingPort: port });
    } catch {
      continue; // taken meanwhile: try another
    }
    try {
      assert.equal(b.running.remotingPort, port);
      let vip: RawRemotingClient;
      try {
        vip = await RawRemotingClient.connect(port - 2);
      } catch {
        continue; // port − 2 was taken by someone else: the broker runs without it; try another
      }
      try {
        const r = await vip.request(RequestCode.GET_BROKER_CLUSTER_INFO);
        assert.match(
          r.body!.toString(),
          new RegExp(`"127\\.0\\.0\\.1:${port}"`),
          'routes name the main port',
        );
      } finally {
        await vip.close();
      }
      return;
    } finally {
      await b.close();
    }
  }
  assert.fail('no free port pair found in 10 attempts');
});
