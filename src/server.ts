/**
 * The composition root: a broker with its gRPC endpoint and admin HTTP API, started in-process.
 * `vela broker` runs exactly this; tests and embedders call `startBroker` directly. The options are
 * the settings of common/config.ts (resolved once, here) plus run-time dependencies.
 */
import { Broker, type BrokerDeps } from './broker/broker.js';
import { GrpcEndpoint, type Authenticator } from './protocol/grpc-server.js';
import { loadCertificate, type TlsCertificate } from './protocol/transport/certificate.js';
import { RemotingEndpoint } from './remoting/remoting-server.js';
import { AdminOperations } from './admin/operations.js';
import { startAdminHttp } from './admin/http-server.js';
import { createBrokerMetrics } from './metrics/broker-metrics.js';
import { resolveConfig, type ConfigInput, type VelaConfig } from './common/config.js';
import { silentLogger } from './common/logger.js';

/** Settings (see docs/configuration.md; `dataDir` is required here) and run-time dependencies. */
export type StartBrokerOptions = ConfigInput & { dataDir: string } & BrokerDeps & {
    /** Checks each gRPC call before it runs (metadata and peer); throw a VelaError to refuse it. */
    authenticate?: Authenticator;
  };

export interface RunningBroker {
  broker: Broker;
  /** The resolved configuration the broker runs with. */
  config: VelaConfig;
  /** The first gRPC port. */
  grpcPort: number;
  grpcPorts: number[];
  httpPort: number;
  /** The RocketMQ Remoting port (name server and broker in one). */
  remotingPort: number;
  /** `host:port` Remoting clients are given in routes. */
  remotingAddress: string;
  host: string;
  /** The certificate TLS is served with (absent when `tlsMode` is `disabled`). */
  tls?: TlsCertificate;
  /** gRPC connections open now, on every gRPC port (diagnostics, tests). */
  grpcConnectionCount(): number;
  /** Stop accepting, finish calls in progress, flush and close the store. Idempotent. */
  close(): Promise<void>;
}

export async function startBroker(opts: StartBrokerOptions): Promise<RunningBroker> {
  const { clock, logger = silentLogger(), diskUsage, authenticate, ...input } = opts;
  const config = resolveConfig(input);
  const tls =
    config.tlsMode === 'disabled'
      ? undefined
      : await loadCertificate({
          ...(config.tlsCert ? { certFile: config.tlsCert, keyFile: config.tlsKey } : {}),
          dataDir: config.dataDir,
          hosts: [config.host],
          logger: logger.child({ module: 'tls' }),
        });
  const broker = await Broker.open(config, {
    logger,
    ...(clock ? { clock } : {}),
    ...(diskUsage ? { diskUsage } : {}),
  });
  let grpc: GrpcEndpoint | undefined;
  let remoting: RemotingEndpoint | undefined;
  let http: Awaited<ReturnType<typeof startAdminHttp>> | undefined;
  try {
    const g = config.grpc;
    grpc = await GrpcEndpoint.start(broker, {
      host: config.host,
      ports: [...config.grpcPorts],
      autoCreateTopics: config.autoCreateTopics,
      logger: logger.child({ module: 'grpc' }),
      limits: {
        maxMessageBytes: g.maxRequestSize,
        maxRequestEntries: g.maxRequestEntries,
        maxConcurrentStreams: g.maxConcurrentStreams,
        maxConnectionInboundBytes: g.maxConnectionInboundBytes,
        maxInboundBytes: g.maxInboundBytes,
        maxConnectionOutboundBytes: g.maxConnectionOutboundBytes,
        maxTelemetryMessageBytes: g.maxTelemetryMessageSize,
        maxClientsPerConnection: g.maxClientsPerConnection,
      },
      keepalive: { intervalMs: g.keepaliveIntervalMs, timeoutMs: g.keepaliveTimeoutMs },
      ...(tls ? { tls: { cert: tls.cert, key: tls.key, plaintext: config.tlsMode === 'permissive' } } : {}),
      ...(authenticate ? { authenticate } : {}),
    });
    const grpcPort = grpc.ports[0]!;
    remoting = await RemotingEndpoint.start(broker, {
      host: config.host,
      port: config.remotingPort,
      autoCreateTopics: config.autoCreateTopics,
      logger: logger.child({ module: 'remoting' }),
    });
    http = await startAdminHttp(new AdminOperations(broker), {
      host: config.host,
      port: config.httpPort,
      logger: logger.child({ module: 'admin' }),
      grpcAddress: () => `${config.host}:${grpcPort}`,
      ...(config.httpTls && tls ? { https: { cert: tls.cert, key: tls.key } } : {}),
      token: config.adminToken,
      metrics: config.metrics ? createBrokerMetrics(broker, { clusterName: config.clusterName }) : null,
    });
  } catch (err) {
    await remoting?.close(0);
    await grpc?.close(0);
    await broker.close();
    throw err;
  }
  const g = grpc;
  const r = remoting;
  const h = http;
  let closing: Promise<void> | null = null;
  return {
    broker,
    config,
    grpcPort: g.ports[0]!,
    grpcPorts: g.ports,
    httpPort: h.port,
    remotingPort: r.ports[0]!,
    remotingAddress: r.address,
    host: config.host,
    ...(tls ? { tls } : {}),
    grpcConnectionCount: () => g.connectionCount,
    close: () => {
      if (!closing) {
        closing = (async () => {
          await Promise.all([g.close(config.shutdownGraceMs), r.close(config.shutdownGraceMs)]);
          await h.app.close();
          await broker.close();
        })();
      }
      return closing;
    },
  };
}

export { createLogger, silentLogger } from './common/logger.js';
export type { Logger, LoggerOptions } from './common/logger.js';
export { DEFAULTS, resolveConfig } from './common/config.js';
export type { VelaConfig, ConfigInput } from './common/config.js';
export type { BrokerDeps } from './broker/broker.js';
export type { Authenticator, AuthRequest } from './protocol/grpc-server.js';
export type { TlsCertificate } from './protocol/transport/certificate.js';
