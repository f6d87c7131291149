/**
 * The Settings reply on Telemetry: what each client learns from the broker (protocol.md §7.2).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Code } from '../../src/common/codes.js';
import { fromMillis } from '../../src/protocol/codec.js';
import { RawClient, startTestBroker } from './raw-client.js';
import type { RunningBroker } from '../../src/server.js';

const MAX_POLL_MS = 2000;
let running: RunningBroker;
let close: () => Promise<void>;
let group: string;

before(async () => {
  ({ running, close } = await startTestBroker({ consume: { minInvisibleMs: 100, maxPollMs: MAX_POLL_MS } }));
  group = `SettingsG_${process.pid}`;
  await running.broker.groups.upsert(group, {});
});

after(() => close());

async function settingsFor(subscription: Record<string, unknown>, clientType = 2) {
  const c = new RawClient(`127.0.0.1:${running.grpcPort}`);
  const { reply, end } = await c.telemetry({
    client_type: clientType,
    subscription: { group: { name: group }, ...subscription },
  });
  end();
  c.close();
  assert.equal(reply.status.code, Code.OK);
  return reply.settings.subscription;
}

const ms = (d: { seconds?: number | string; nanos?: number }) =>
  Number(d.seconds ?? 0) * 1000 + (d.nanos ?? 0) / 1e6;

test('consumers learn the longest poll the broker holds, not a longer one they asked for', async () => {
  // The Go push consumer asks for 30 s and waits that long (plus its request timeout) at shutdown.
  assert.equal(
    ms((await settingsFor({ long_polling_timeout: fromMillis(30_000) })).long_polling_timeout),
    MAX_POLL_MS,
  );
  // Nothing asked (the Node push consumer): the broker's maximum.
  assert.equal(ms((await settingsFor({})).long_polling_timeout), MAX_POLL_MS);
  // A shorter poll is kept (a simple consumer's awaitDuration).
  assert.equal(
    ms((await settingsFor({ long_polling_timeout: fromMillis(500) }, 3)).long_polling_timeout),
    500,
  );
});
