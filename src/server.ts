/**
 * The composition root: a broker with its gRPC endpoint and admin HTTP API, started in-process.
 * `vela broker` runs exactly this; tests and embedders call `startBroker` directly.
 */
import { Broker, type BrokerOptions } from './broker/broker.js';
import { GrpcEndpoint } from './protocol/grpc-server.js';
import { AdminOperations } from './admin/operations.js';
import { startAdminHttp } from './admin/http-server.js';
import { silentLogger } from './common/logger.js';

export interface StartBrokerOptions extends BrokerOptions {
  /** Address to listen on. @defaultValue '127.0.0.1' */
  host?: string;
  /** gRPC port(s); 0 picks a free one. @defaultValue 8081 */
  grpcPort?: number | number[];
  /** Admin HTTP port; 0 picks a free one. @defaultValue 8082 */
  httpPort?: number;
  /** How long shutdown waits for calls in progress. @defaultValue 5000 */
  shutdownGraceMs?: number;
}

export interface RunningBroker {
  broker: Broker;
  /** The first gRPC port. */
  grpcPort: number;
  grpcPorts: number[];
  httpPort: number;
  host: string;
  /** Stop accepting, finish calls in progress, flush and close the store. Idempotent. */
  close(): Promise<void>;
}

export async function startBroker(opts: StartBrokerOptions): Promise<RunningBroker> {
  const logger = opts.logger ?? silentLogger();
  const host = opts.host ?? '127.0.0.1';
  const ports = Array.isArray(opts.grpcPort) ? opts.grpcPort : [opts.grpcPort ?? 8081];
  const broker = await Broker.open({ ...opts, logger });
  let grpc: GrpcEndpoint | undefined;
  let http: Awaited<ReturnType<typeof startAdminHttp>> | undefined;
  try {
    grpc = await GrpcEndpoint.start(broker, {
      host,
      ports,
      autoCreateTopics: opts.autoCreateTopics ?? false,
      logger: logger.child({ module: 'grpc' }),
    });
    const grpcPort = grpc.ports[0]!;
    http = await startAdminHttp(new AdminOperations(broker), {
      host,
      port: opts.httpPort ?? 8082,
      logger: logger.child({ module: 'admin' }),
      grpcAddress: () => `${host}:${grpcPort}`,
    });
  } catch (err) {
    await grpc?.close(0);
    await broker.close();
    throw err;
  }
  const g = grpc;
  const h = http;
  let closing: Promise<void> | null = null;
  return {
    broker,
    grpcPort: g.ports[0]!,
    grpcPorts: g.ports,
    httpPort: h.port,
    host,
    close: () => {
      if (!closing) {
        closing = (async () => {
          await g.close(opts.shutdownGraceMs ?? 5000);
          await h.app.close();
          await broker.close();
        })();
      }
      return closing;
    },
  };
}
