/**
 * The gRPC v2 endpoint: binds MessagingService to the broker over Vela's own HTTP/2 transport
 * (transport/h2-server.ts). Every RPC answers with gRPC OK and the outcome in its `Status` (status.ts
 * decides the code); limits refuse a request before it is decoded and answer in the same way, with a
 * body status, so official clients see the RocketMQ code they understand.
 *
 * Client sessions belong to the connection they were opened on: another connection cannot end them
 * (NotifyClientTermination, or a Telemetry stream closing) nor take them over while their Telemetry
 * stream is open. The Telemetry stream itself is telemetry-stream.ts; delivered messages are encoded by
 * message-frame.ts.
 */
import type { CancelSignal } from '../common/cancel-signal.js';
import type protobuf from 'protobufjs';
import type { Broker } from '../broker/broker.js';
import { VelaError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { decodeRequest, encode, fromMillis, messagingMethods, MALFORMED, type MethodCodec } from './codec.js';
import { contextOf, type CallContext } from './context.js';
import { statusOf } from './status.js';
import { guardRequest, type RequestLimits } from './request-guard.js';
import { queryAssignment, queryRoute, type RouteEndpoint } from './handlers/route.js';
import { sendMessage } from './handlers/send.js';
import {
  ackMessage,
  forwardMessageToDeadLetterQueue,
  changeInvisibleDuration,
  receiveMessage,
} from './handlers/consume.js';
import { heartbeat, notifyClientTermination } from './handlers/client.js';
import { getOffset, pullMessage, queryOffset, updateOffset } from './handlers/pull.js';
import { endTransaction } from './handlers/transaction.js';
import { recallMessage } from './handlers/recall.js';
import { WireAddressScheme, type Status } from './wire-types.js';
import { frameResponses } from './message-frame.js';
import { decodeAckRequest, encodeAckResponse } from './ack-codec.js';
import { decodeSendRequest } from './send-request-codec.js';
import { encodeSendResponse } from './send-codec.js';
import { rpcTimer } from './rpc-stats.js';
import { Code } from '../common/codes.js';
import { GrpcAccess, credentialsOf } from './auth.js';
import { limitStatus } from './limit-status.js';
import { TelemetryStreams } from './telemetry-stream.js';
import { GrpcStatus, LimitError } from './transport/grpc-wire.js';
import type { ServerCall, PeerInfo } from './transport/server-call.js';
import {
  GrpcServer,
  type KeepaliveOptions,
  type MethodHandler,
  type TlsMaterial,
  type TransportLimits,
} from './transport/h2-server.js';

/** What an authenticator sees of a call: its method, headers and peer (TLS socket included). */
export interface AuthRequest {
  /** e.g. `SendMessage` */
  readonly method: string;
  header(name: string): string;
  readonly peer: PeerInfo;
}

/**
 * Checks each call before its handler runs (ACL goes here): resolve to let it through, throw a
 * VelaError (UNAUTHORIZED, FORBIDDEN …) to refuse it with that status.
 */
export type Authenticator = (request: AuthRequest) => void | Promise<void>;

export interface GrpcEndpointLimits extends TransportLimits {
  /** Most messages in a SendMessage and entries in an AckMessage. */
  maxRequestEntries: number;
  /** Largest Telemetry command. */
  maxTelemetryMessageBytes: number;
  /** Client ids one connection may hold sessions for (Telemetry streams and heartbeats). */
  maxClientsPerConnection: number;
}

export interface GrpcEndpointOptions {
  /** @defaultValue '127.0.0.1' */
  host: string;
  /** Ports to serve (0 picks a free one). */
  ports: number[];
  autoCreateTopics: boolean;
  logger: Logger;
  limits: GrpcEndpointLimits;
  keepalive: KeepaliveOptions;
  /** When set, every port also accepts TLS. */
  tls?: TlsMaterial;
  authenticate?: Authenticator;
}

type Unary = (ctx: CallContext, req: never) => unknown;

/** Values decoded per batch entry, at most: 128 user properties (3 values each), keys and the system properties fit. */
const VALUES_PER_ENTRY = 512;

export class GrpcEndpoint {
  private readonly telemetry = new TelemetryStreams();
  /** Client ids seen per connection (bounded by maxClientsPerConnection). */
  private readonly clientsByConnection = new Map<string, Set<string>>();
  private closing: Promise<void> | null = null;

  private constructor(
    private readonly server: GrpcServer,
    readonly ports: number[],
  ) {}

  static async start(broker: Broker, opts: GrpcEndpointOptions): Promise<GrpcEndpoint> {
    const server = new GrpcServer({
      host: opts.host,
      limits: opts.limits,
      keepalive: opts.keepalive,
      ...(opts.tls ? { tls: opts.tls } : {}),
      logger: opts.logger,
    });
    const ports: number[] = [];
    const endpoint = new GrpcEndpoint(server, ports);
    endpoint.register(broker, opts);
    try {
      for (const port of opts.ports) ports.push(await server.listen(port));
    } catch (err) {
      await server.close(0);
      throw err;
    }
    return endpoint;
  }

  /** Stop accepting calls, answer parked receives, end Telemetry streams, wait up to `graceMs`. */
  close(graceMs = 5000): Promise<void> {
    this.closing ??= this.server.close(graceMs);
    return this.closing;
  }

  /** Connections open now. */
  get connectionCount(): number {
    return this.server.connectionCount;
  }

  private register(broker: Broker, opts: GrpcEndpointOptions): void {
    const log = opts.logger;
    const methods = messagingMethods();
    const requestLimits: RequestLimits = {
      maxEntries: opts.limits.maxRequestEntries,
      maxValues: opts.limits.maxRequestEntries * VALUES_PER_ENTRY,
    };
    const route: RouteEndpoint = {
      advertised: {
        scheme: WireAddressScheme.IPv4,
        addresses: [{ host: opts.host, port: this.ports[0] ?? 0 }],
      },
    };
    const storeHost = () => `${opts.host}:${this.ports[0] ?? 0}`;
    const authenticate = opts.authenticate;
    /** The authenticator's verdict: undefined (no authenticator, or a synchronous yes) or a promise. */
    const admit = (call: ServerCall): void | Promise<void> => {
      if (!authenticate) return;
      try {
        return authenticate({ method: call.method, header: (n) => call.header(n), peer: call.peer });
      } catch (err) {
        return Promise.reject(err);
      }
    };

    // Access control (ACL 2.0, protocol/auth.ts): the broker's own check, after the embedder's hook.
    const access = new GrpcAccess(broker.acl);
    /** The call's context, once access control (when on) has let its caller in. */
    const admitted = (name: string, call: ServerCall, req: object, requireClientId = true): CallContext => {
      const ctx = contextOf(call, req, requireClientId);
      access.admit(name, credentialsOf(call), req, ctx.namespace);
      return ctx;
    };

    /** Guard, then decode: a refused request throws a LimitError; a malformed one decodes to a marker. */
    const decodeGuarded = (
      m: MethodCodec,
      bytes: Buffer,
      entriesField?: number,
      decodeFast?: (bytes: Buffer) => object | undefined,
    ): object => {
      try {
        guardRequest(m.requestType, bytes, requestLimits, entriesField);
      } catch (err) {
        if (err instanceof LimitError && err.kind === 'malformed') return { [MALFORMED]: err.message };
        throw err;
      }
      return decodeFast?.(bytes) ?? decodeRequest(m.requestType, bytes);
    };

    const answer = (
      call: ServerCall,
      type: protobuf.Type,
      res: unknown,
      name: string,
      encodeFast?: (res: never) => Uint8Array | undefined,
    ) => {
      let bytes: Uint8Array;
      try {
        bytes = encodeFast?.(res as never) ?? encode(type, res);
      } catch (err) {
        log.error({ err, rpc: name }, 'cannot encode a response');
        call.fail(GrpcStatus.INTERNAL, 'internal error: cannot encode the response');
        return;
      }
      call.sendUnary(bytes);
    };

    /** Whether a call may create a session for its client id on its connection. */
    const checkClientQuota = (ctx: CallContext) => {
      if (!ctx.clientId || broker.sessions.get(ctx.clientId)) return;
      const ids = this.clientsByConnection.get(ctx.connectionId);
      if (ids && !ids.has(ctx.clientId) && ids.size >= opts.limits.maxClientsPerConnection) {
        throw new VelaError(
          'TOO_MANY_REQUESTS',
          `this connection already holds sessions for ${ids.size} client ids`,
        );
      }
    };
    const noteClient = (ctx: CallContext) => {
      if (!ctx.clientId) return;
      let ids = this.clientsByConnection.get(ctx.connectionId);
      if (!ids) this.clientsByConnection.set(ctx.connectionId, (ids = new Set()));
      ids.add(ctx.clientId);
    };
    this.server.onConnectionClosed((id) => this.clientsByConnection.delete(id));

    const unary = (
      name: string,
      fn: Unary,
      opt: {
        requireClientId?: boolean;
        entriesField?: number;
        /** Hand-written codecs for a hot method; undefined from either: protobufjs does it. */
        decode?: (bytes: Buffer) => object | undefined;
        encode?: (res: never) => Uint8Array | undefined;
      } = {},
    ) => {
      const m = methods.get(name)!;
      const timer = rpcTimer(broker.stats, name);
      const handler: MethodHandler = {
        kind: 'unary',
        onRequest: (call, bytes) => {
          const started = timer.start();
          let req: object;
          try {
            req = decodeGuarded(m, bytes, opt.entriesField, opt.decode);
          } catch (err) {
            handler.onRefused!(call, err as LimitError);
            return;
          }
          const run = (): unknown => fn(admitted(name, call, req, opt.requireClientId ?? true), req as never);
          const auth = admit(call);
          (auth ? Promise.resolve(auth).then(run) : Promise.resolve().then(run)).then(
            (res) => {
              answer(call, m.responseType, res, name, opt.encode);
              timer.end(started, (res as { status?: { code?: number } })?.status?.code ?? Code.OK);
            },
            (err: unknown) => {
              const status = statusOf(err, log, name);
              answer(call, m.responseType, { status }, name, opt.encode);
              timer.end(started, status.code);
            },
          );
        },
        onRefused: (call, err) => {
          const status = limitStatus(err);
          answer(call, m.responseType, { status }, name);
          timer.end(timer.start(), status.code);
        },
      };
      return handler;
    };
    const notImplemented =
      (name: string, what: string): Unary =>
      () => {
        throw new VelaError('NOT_IMPLEMENTED', `${name}: ${what}`);
      };

    const streaming = (
      name: 'ReceiveMessage' | 'PullMessage',
      run: (ctx: CallContext, req: never, signal: CancelSignal) => Promise<unknown[]>,
      onError: (status: Status) => unknown[],
    ): MethodHandler => {
      const m = methods.get(name)!;
      const timer = rpcTimer(broker.stats, name, true);
      /** The status a streamed answer carries (its first frame with one). */
      const codeOf = (frames: readonly unknown[]) =>
        (frames.find((f) => (f as { status?: unknown }).status) as { status?: { code?: number } } | undefined)
          ?.status?.code ?? Code.OK;
      const sendFrames = (call: ServerCall, frames: unknown[], started?: number) => {
        if (started !== undefined) timer.end(started, codeOf(frames));
        let framed: Buffer;
        try {
          // Delivered messages are written in place by the hand-written encoder; the rest by protobufjs.
          framed = frameResponses(frames, (f) => encode(m.responseType, f));
        } catch (err) {
          log.error({ err, rpc: name }, 'cannot encode a response');
          call.fail(GrpcStatus.INTERNAL, 'internal error: cannot encode the response');
          return;
        }
        call.sendAllFramed(framed);
      };
      return {
        kind: 'server-stream',
        onRequest: (call, bytes) => {
          const started = timer.start();
          let req: object;
          try {
            req = decodeGuarded(m, bytes);
          } catch (err) {
            sendFrames(call, onError(limitStatus(err as LimitError)), started);
            return;
          }
          Promise.resolve(admit(call))
            .then(() => run(admitted(name, call, req), req as never, call.cancelSignal))
            .then(
              (frames) => sendFrames(call, frames, started),
              (err: unknown) => sendFrames(call, onError(statusOf(err, log, name)), started),
            );
        },
        onRefused: (call, err) => sendFrames(call, onError(limitStatus(err)), timer.start()),
      };
    };

    const register = (name: string, handler: MethodHandler) => {
      const path = methods.get(name)?.path;
      if (!path) throw new Error(`MessagingService has no method ${name}`);
      this.server.register(path, handler);
    };

    register(
      'QueryRoute',
      unary('QueryRoute', (ctx, req) => queryRoute(broker, ctx, req, route, opts.autoCreateTopics)),
    );
    register(
      'QueryAssignment',
      unary('QueryAssignment', (ctx, req) => queryAssignment(broker, ctx, req, route)),
    );
    register(
      'Heartbeat',
      unary('Heartbeat', (ctx, req) => {
        checkClientQuota(ctx);
        noteClient(ctx);
        return heartbeat(broker, ctx, req);
      }),
    );
    register(
      'NotifyClientTermination',
      unary('NotifyClientTermination', (ctx) => notifyClientTermination(broker, ctx)),
    );
    register(
      'SendMessage',
      unary('SendMessage', (ctx, req) => sendMessage(broker, ctx, req, log), {
        entriesField: 1,
        decode: decodeSendRequest,
        encode: encodeSendResponse,
      }),
    );
    register(
      'AckMessage',
      unary('AckMessage', (ctx, req) => ackMessage(broker, ctx, req, log), {
        entriesField: 3,
        decode: decodeAckRequest,
        encode: encodeAckResponse,
      }),
    );
    register(
      'ChangeInvisibleDuration',
      unary('ChangeInvisibleDuration', (ctx, req) => changeInvisibleDuration(broker, ctx, req)),
    );
    register(
      'ForwardMessageToDeadLetterQueue',
      unary('ForwardMessageToDeadLetterQueue', (ctx, req) =>
        forwardMessageToDeadLetterQueue(broker, ctx, req),
      ),
    );
    register(
      'EndTransaction',
      unary('EndTransaction', (ctx, req) => endTransaction(broker, ctx, req)),
    );
    register(
      'RecallMessage',
      unary('RecallMessage', (ctx, req) => recallMessage(broker, ctx, req)),
    );
    register(
      'SyncLiteSubscription',
      unary('SyncLiteSubscription', notImplemented('SyncLiteSubscription', 'lite topics are not supported')),
    );
    register(
      'UpdateOffset',
      unary('UpdateOffset', (ctx, req) => updateOffset(broker, ctx, req)),
    );
    register(
      'GetOffset',
      unary('GetOffset', (ctx, req) => getOffset(broker, ctx, req)),
    );
    register(
      'QueryOffset',
      unary('QueryOffset', (ctx, req) => queryOffset(broker, ctx, req)),
    );
    register(
      'PullMessage',
      streaming(
        'PullMessage',
        (ctx, req, signal) => pullMessage(broker, ctx, req, signal, storeHost()),
        (status) => [{ status }],
      ),
    );
    register(
      'ReceiveMessage',
      streaming(
        'ReceiveMessage',
        (ctx, req, signal) => receiveMessage(broker, ctx, req, signal, storeHost()),
        (status) => [{ status }, { delivery_timestamp: fromMillis(broker.clock.now()) }],
      ),
    );
    register(
      'Telemetry',
      this.telemetry.handler(
        broker,
        { logger: log, limits: opts.limits, valuesPerEntry: VALUES_PER_ENTRY, storeHost },
        admit,
        access,
        checkClientQuota,
        noteClient,
      ),
    );
  }
}
