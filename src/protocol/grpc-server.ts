/**
 * The gRPC v2 endpoint: binds MessagingService to the broker. Every RPC answers with gRPC OK and the
 * outcome in its `Status` (status.ts decides the code); nothing surfaces as a bare transport error.
 */
import * as grpc from '@grpc/grpc-js';
import type { Broker } from '../broker/broker.js';
import { VelaError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { fromMillis, malformedReason, messagingServiceDefinition } from './codec.js';
import { contextOf, type CallContext } from './context.js';
import { statusOf } from './status.js';
import { installGrpcTimeoutClamp } from './grpc-timeout.js';
import { queryAssignment, queryRoute, type RouteEndpoint } from './handlers/route.js';
import { sendMessage } from './handlers/send.js';
import {
  ackMessage,
  forwardMessageToDeadLetterQueue,
  changeInvisibleDuration,
  receiveMessage,
  type ReceiveRequestWire,
} from './handlers/consume.js';
import { heartbeat, notifyClientTermination, settingsReply } from './handlers/client.js';
import { getOffset, pullMessage, queryOffset, updateOffset } from './handlers/pull.js';
import { WireAddressScheme, type TelemetryCommand } from './wire-types.js';

export interface GrpcEndpointOptions {
  /** @defaultValue '127.0.0.1' */
  host: string;
  /** Ports to serve (0 picks a free one). */
  ports: number[];
  autoCreateTopics: boolean;
  logger: Logger;
}

/** The official proxy accepts 130 MiB frames; so do we (protocol.md §1). */
const MAX_RECEIVE_MESSAGE_LENGTH = 130 * 1024 * 1024;

type Unary = (ctx: CallContext, req: never) => unknown;

export class GrpcEndpoint {
  private readonly telemetry = new Set<grpc.ServerDuplexStream<TelemetryCommand, TelemetryCommand>>();
  private readonly receives = new Set<AbortController>();
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly server: grpc.Server,
    readonly ports: number[],
  ) {}

  static async start(broker: Broker, opts: GrpcEndpointOptions): Promise<GrpcEndpoint> {
    installGrpcTimeoutClamp(); // the Java client's 60×365-day Telemetry deadline (grpc-timeout.ts)
    const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_RECEIVE_MESSAGE_LENGTH });
    const ports: number[] = [];
    const endpoint = new GrpcEndpoint(server, ports);
    server.addService(messagingServiceDefinition(), endpoint.handlers(broker, opts));
    try {
      for (const port of opts.ports) ports.push(await bind(server, opts.host, port));
    } catch (err) {
      server.forceShutdown();
      throw err;
    }
    return endpoint;
  }

  /** Stop accepting calls, answer parked receives, end Telemetry streams, wait up to `graceMs`. */
  close(graceMs = 5000): Promise<void> {
    if (!this.closing) {
      this.closing = new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.server.forceShutdown();
          resolve();
        }, graceMs);
        this.server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
        for (const ac of this.receives) ac.abort();
        for (const call of this.telemetry) call.end();
      });
    }
    return this.closing;
  }

  private handlers(broker: Broker, opts: GrpcEndpointOptions): grpc.UntypedServiceImplementation {
    const log = opts.logger;
    const route: RouteEndpoint = {
      advertised: {
        scheme: WireAddressScheme.IPv4,
        addresses: [{ host: opts.host, port: this.ports[0] ?? 0 }],
      },
    };
    const storeHost = () => `${opts.host}:${this.ports[0] ?? 0}`;
    const unary =
      (name: string, fn: Unary, requireClientId = true): grpc.handleUnaryCall<unknown, unknown> =>
      (call, callback) => {
        Promise.resolve()
          .then(() => fn(contextOf(call, requireClientId), call.request as never))
          .then(
            (res) => callback(null, res),
            (err: unknown) => callback(null, { status: statusOf(err, log, name) }),
          );
      };
    const notImplemented =
      (name: string, what: string): Unary =>
      () => {
        throw new VelaError('NOT_IMPLEMENTED', `${name}: ${what}`);
      };

    return {
      QueryRoute: unary('QueryRoute', (ctx, req) =>
        queryRoute(broker, ctx, req, route, opts.autoCreateTopics),
      ),
      QueryAssignment: unary('QueryAssignment', (ctx, req) => queryAssignment(broker, ctx, req, route)),
      Heartbeat: unary('Heartbeat', (ctx, req) => heartbeat(broker, ctx, req)),
      NotifyClientTermination: unary('NotifyClientTermination', (ctx) =>
        notifyClientTermination(broker, ctx),
      ),
      SendMessage: unary('SendMessage', (ctx, req) => sendMessage(broker, ctx, req, log)),
      AckMessage: unary('AckMessage', (ctx, req) => ackMessage(broker, ctx, req, log)),
      ChangeInvisibleDuration: unary('ChangeInvisibleDuration', (ctx, req) =>
        changeInvisibleDuration(broker, ctx, req),
      ),
      ForwardMessageToDeadLetterQueue: unary('ForwardMessageToDeadLetterQueue', (ctx, req) =>
        forwardMessageToDeadLetterQueue(broker, ctx, req),
      ),
      EndTransaction: unary(
        'EndTransaction',
        notImplemented('EndTransaction', 'transactional messages are not supported yet'),
      ),
      RecallMessage: unary(
        'RecallMessage',
        notImplemented('RecallMessage', 'delay messages are not supported yet'),
      ),
      SyncLiteSubscription: unary(
        'SyncLiteSubscription',
        notImplemented('SyncLiteSubscription', 'lite topics are not supported'),
      ),
      UpdateOffset: unary('UpdateOffset', (ctx, req) => updateOffset(broker, ctx, req)),
      GetOffset: unary('GetOffset', (ctx, req) => getOffset(broker, ctx, req)),
      QueryOffset: unary('QueryOffset', (ctx, req) => queryOffset(broker, ctx, req)),
      PullMessage: (call: grpc.ServerWritableStream<Parameters<typeof pullMessage>[2], unknown>) => {
        const ac = new AbortController();
        this.receives.add(ac);
        call.on('cancelled', () => ac.abort());
        Promise.resolve()
          .then(() => pullMessage(broker, contextOf(call), call.request, ac.signal, storeHost()))
          .then(
            (frames) => {
              for (const f of frames) call.write(f);
            },
            (err: unknown) => call.write({ status: statusOf(err, log, 'PullMessage') }),
          )
          .finally(() => {
            this.receives.delete(ac);
            call.end();
          });
      },
      ReceiveMessage: (call: grpc.ServerWritableStream<ReceiveRequestWire, unknown>) => {
        const ac = new AbortController();
        this.receives.add(ac);
        call.on('cancelled', () => ac.abort());
        Promise.resolve()
          .then(() => receiveMessage(broker, contextOf(call), call.request, ac.signal, storeHost()))
          .then(
            (frames) => {
              for (const f of frames) call.write(f);
            },
            (err: unknown) => {
              call.write({ status: statusOf(err, log, 'ReceiveMessage') });
              call.write({ delivery_timestamp: fromMillis(broker.clock.now()) });
            },
          )
          .finally(() => {
            this.receives.delete(ac);
            call.end();
          });
      },
      Telemetry: (call: grpc.ServerDuplexStream<TelemetryCommand, TelemetryCommand>) => {
        let ctx: CallContext;
        try {
          ctx = contextOf(call);
        } catch (err) {
          call.write({ status: statusOf(err, log, 'Telemetry') });
          call.end();
          return;
        }
        this.telemetry.add(call);
        call.on('data', (cmd: TelemetryCommand) => {
          const malformed = malformedReason(cmd);
          if (malformed !== undefined) {
            call.write({
              status: statusOf(
                new VelaError('BAD_REQUEST', `malformed telemetry command: ${malformed}`),
                log,
                'Telemetry',
              ),
            });
            return;
          }
          if (!cmd.settings) return; // diagnostics replies (thread stack, verify result): nothing to do
          settingsReply(broker, ctx, cmd.settings).then(
            (reply) => call.write(reply),
            (err: unknown) => call.write({ status: statusOf(err, log, 'Telemetry') }),
          );
        });
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          this.telemetry.delete(call);
          broker.sessions.telemetryClosed(ctx.clientId);
        };
        call.on('end', () => {
          finish();
          call.end();
        });
        call.on('error', finish);
        call.on('cancelled', finish);
        call.on('close', finish);
      },
    };
  }
}

function bind(server: grpc.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
      if (err) {
        const inUse = /EADDRINUSE|address already in use/i.test(err.message);
        reject(
          new Error(
            inUse
              ? `gRPC port ${host}:${port} is already in use`
              : `cannot listen on ${host}:${port}: ${err.message}`,
          ),
        );
      } else resolve(bound);
    });
  });
}
