/**
 * Benchmark child: runs either the real broker (`broker <dataDir> [startBroker options as JSON]`) or a bare grpc-js server that
 * answers SendMessage with OK and nothing else (`echo`), and prints `READY <grpcPort> [httpPort remotingPort]`.
 * The broker answers a `CPU` line on stdin with `CPU <µs of process CPU time so far>`.
 */
import * as grpc from '@grpc/grpc-js';
import { startBroker } from '../src/server.js';
import { messagingServiceDefinition } from '../src/protocol/codec.js';

const [mode, dataDir] = process.argv.slice(2) as [string, string?];
if (mode === 'echo') {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 130 * 1024 * 1024 });
  server.addService(messagingServiceDefinition(), {
    SendMessage: (
      call: grpc.ServerUnaryCall<{ messages: { system_properties: { message_id: string } }[] }, unknown>,
      cb: grpc.sendUnaryData<unknown>,
    ) =>
      cb(null, {
        status: { code: 20000, message: 'OK' },
        entries: call.request.messages.map((m) => ({
          status: { code: 20000, message: 'OK' },
          message_id: m.system_properties.message_id,
          offset: 0,
        })),
      }),
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    process.stdout.write(`READY ${port}\n`);
  });
} else {
  const extra = JSON.parse(process.argv[4] ?? '{}') as Record<string, unknown>;
  const running = await startBroker({
    dataDir: dataDir!,
    grpcPort: 0,
    httpPort: 0,
    remotingPort: 0,
    autoCreateTopics: true,
    autoCreateGroups: true,
    ...extra,
  });
  process.stdout.write(`READY ${running.grpcPort} ${running.httpPort} ${running.remotingPort}\n`);
  process.on('SIGTERM', () => void running.close().then(() => process.exit(0)));
  // `CPU` on stdin: print the process CPU time used so far (µs), for per-phase CPU per message.
  process.stdin.on('data', (d) => {
    if (d.toString().includes('CPU')) {
      const u = process.cpuUsage();
      process.stdout.write(`CPU ${u.user + u.system}\n`);
    }
  });
  process.stdin.on('end', () => {});
}
