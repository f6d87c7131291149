/**
 * A client child of the comparison: `main.ts '<WorkloadSpec as JSON>'` runs one workload against one
 * server and prints `BEGIN` and `END` around the measured part, then `RESULT <json>` (or
 * `ERROR <json string>`), and exits. It always exits: some clients keep timers alive after closing.
 */
import { randomBytes } from 'node:crypto';
import type { WorkloadSpec } from '../types.js';
import type { Peer } from './peer.js';
import { closeWithin, errorText } from './peer.js';
import { consumeBacklog, endToEnd, produce, type Marks } from './workloads.js';

const spec = JSON.parse(process.argv[2] ?? 'null') as WorkloadSpec | null;
if (!spec) {
  console.error("usage: main.ts '<WorkloadSpec JSON>'");
  process.exit(2);
}
const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * The peer under test, its module loaded only now: a process holds one client library, as an
 * application would (another library's code and data in the heap would change how often this process
 * collects garbage, and with it W3's tail).
 */
async function open(s: WorkloadSpec): Promise<Peer> {
  switch (s.target) {
    case 'vela-sdk':
      return new (await import('./vela-sdk-peer.js')).VelaSdkPeer(s.port, s.adminPort!);
    case 'vela-official':
      return new (await import('./vela-official-peer.js')).VelaOfficialPeer(s.port, s.adminPort!);
    case 'vela-remoting':
      throw new Error('the Remoting row runs the Java client (bench/compare/remoting-rows.ts)');
    case 'rabbitmq':
      return new (await import('./rabbitmq-peer.js')).RabbitMqPeer(s.port);
    case 'nats':
      return new (await import('./nats-peer.js')).NatsPeer(s.port).open();
    case 'redis':
      return new (await import('./redis-peer.js')).RedisPeer(s.port);
  }
}

/** Random 1 KiB bodies (a few distinct ones, so nothing can deduplicate or compress them). */
const bodies = Array.from({ length: 64 }, () => randomBytes(spec.bodySize));
const marks: Marks = { begin: () => say('BEGIN'), end: () => say('END') };

let code = 0;
let peer: Peer | undefined;
try {
  peer = await open(spec);
  const result =
    spec.workload === 'w1a' || spec.workload === 'w1b'
      ? await produce(peer, spec, bodies, marks)
      : spec.workload === 'w2'
        ? await consumeBacklog(peer, spec, bodies, marks, 'push')
        : spec.workload === 'w2pull'
          ? await consumeBacklog(peer, spec, bodies, marks, 'pull')
          : await endToEnd(peer, spec, bodies, marks);
  say(`RESULT ${JSON.stringify(result)}`);
} catch (err) {
  console.error(`[${spec.target} ${spec.workload}]`, err);
  say(`ERROR ${JSON.stringify(errorText(err))}`);
  code = 1;
} finally {
  if (peer) await closeWithin('client', peer.close(), 10_000);
}
process.exit(code);
