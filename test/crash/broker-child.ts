/**
 * Child process for the broker crash tests: runs `startBroker` on a data directory (every port 0) with the
 * options given as JSON, prints `READY <grpcPort> <httpPort>` and serves until it is killed.
 *
 * usage: broker-child.ts <dataDir> <options JSON>
 */
import { startBroker } from '../../src/server.js';

const [dataDir, options] = process.argv.slice(2) as [string, string];
const running = await startBroker({
  dataDir,
  grpcPort: 0,
  httpPort: 0,
  remotingPort: 0,
  ...JSON.parse(options),
});
process.stdout.write(`READY ${running.grpcPort} ${running.httpPort}\n`);
