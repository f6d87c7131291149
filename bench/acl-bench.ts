/**
 * Access-control benchmark (not a test): `npm run bench:acl`. The cost the gRPC edge adds to each
 * call when access control is on: parsing the headers, checking the HMAC-SHA1 signature and the
 * clock, and deciding a SendMessage (Pub on its topic) and a ReceiveMessage (Sub on group and topic)
 * against a normal user's ACL of 13 entries, with the broker's own code, in-process.
 */
import { AccessControl } from '../src/broker/auth/access-control.js';
import { AuthRegistry } from '../src/broker/auth/auth-registry.js';
import type { StateJournal } from '../src/broker/state-journal.js';
import { GrpcAccess } from '../src/protocol/auth.js';
import { signRequest } from '../src/common/signature.js';
import { silentLogger } from '../src/common/logger.js';

const registry = new AuthRegistry();
registry.journal = { append: async () => {} } as unknown as StateJournal;
await registry.createUser('bench', 'bench-secret');
await registry.upsertAcl({
  subject: 'User:bench',
  resources: [...Array.from({ length: 10 }, (_, i) => `Topic:other-${i}`), 'Group:other'],
  actions: ['Pub', 'Sub'],
  decision: 'Allow',
});
await registry.upsertAcl({
  subject: 'User:bench',
  resources: ['Topic:Bench*', 'Group:Bench*'],
  actions: ['Pub', 'Sub'],
  sourceIps: ['127.0.0.0/8'],
  decision: 'Allow',
});
const access = new GrpcAccess(
  new AccessControl(
    registry,
    { enabled: true, clock: { skewMs: 15 * 60_000, timeZoneOffsets: true } },
    () => Date.now(),
    silentLogger(),
  ),
);
const signed = signRequest('bench', 'bench-secret');
const headers: Record<string, string> = {
  authorization: signed.authorization,
  'x-mq-date-time': signed.dateTime,
  'x-mq-client-id': 'bench@1',
};
const call = { header: (n: string) => headers[n] ?? '', peer: '127.0.0.1:50000' };
const send = { messages: [{ topic: { name: 'BenchTopic' } }] };
const receive = { group: { name: 'BenchGroup' }, message_queue: { topic: { name: 'BenchTopic' }, id: 0 } };

function measure(name: string, fn: () => void, n = 200_000): void {
  for (let i = 0; i < 10_000; i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  const us = ((performance.now() - t0) * 1000) / n;
  console.log(
    `${name.padEnd(48)} ${us.toFixed(2)} µs per call (${Math.round(1e6 / us).toLocaleString('en-US')} calls/s)`,
  );
}

console.log(`Vela access-control benchmark — node ${process.version}\n`);
measure('authenticate (parse, HMAC-SHA1, clock)', () => access.authenticate(call));
const principal = access.authenticate(call);
measure('authorize SendMessage (Pub, 13 entries)', () =>
  access.authorize(principal, 'SendMessage', send, '', call.peer),
);
measure('admit SendMessage (both)', () => access.admit('SendMessage', call, send, ''));
measure('admit ReceiveMessage (both, group and topic)', () =>
  access.admit('ReceiveMessage', call, receive, ''),
);
