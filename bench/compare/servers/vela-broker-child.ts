/**
 * The Vela broker for the comparison, in its own process: `vela-broker-child.ts <dataDir>` starts
 * it on 127.0.0.1 (free ports, sync flush: every send is answered after an fsync covers it) and
 * prints `READY <grpcPort> <httpPort> <remotingPort>`; SIGTERM closes it. `VELA_COMPARE_CONFIG`, a JSON
 * object of broker settings (e.g. `{"consume":{"maxPushBatch":32}}`), is merged in: an A/B of one setting.
 */
import { startBroker } from '../../../src/server.js';

const dataDir = process.argv[2];
if (!dataDir) {
  console.error('usage: vela-broker-child.ts <dataDir>');
  process.exit(2);
}
const extra = process.env.VELA_COMPARE_CONFIG
  ? (JSON.parse(process.env.VELA_COMPARE_CONFIG) as Record<string, unknown>)
  : {};
const running = await startBroker({
  ...extra,
  dataDir,
  host: '127.0.0.1',
  grpcPort: 0,
  httpPort: 0,
  remotingPort: 0,
  flush: 'sync',
  shutdownGraceMs: 2000,
});
process.stdout.write(`READY ${running.grpcPort} ${running.httpPort} ${running.remotingPort}\n`);
let closing = false;
const close = () => {
  if (closing) return;
  closing = true;
  void running.close().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
};
process.on('SIGTERM', close);
process.on('SIGINT', close);
