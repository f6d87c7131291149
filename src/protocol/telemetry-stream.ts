/**
 * The Telemetry stream (bidirectional): the client's Settings and the broker's answers to them, and
 * the broker's own commands to the client (orphaned-transaction checks). A client's session belongs
 * to the connection its stream was opened on; it ends when its last stream on that connection does.
 */
import type { Broker } from '../broker/broker.js';
import { VelaError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { decodeRequest, encode, messagingMethods, MALFORMED, type MethodCodec } from './codec.js';
import { contextOf, type CallContext } from './context.js';
import { statusOf } from './status.js';
import { guardRequest } from './request-guard.js';
import { settingsReply } from './handlers/client.js';
import { telemetryCommandOf } from './handlers/transaction.js';
import type { Status, TelemetryCommand } from './wire-types.js';
import { credentialsOf, type GrpcAccess } from './auth.js';
import { LimitError } from './transport/grpc-wire.js';
import type { ServerCall } from './transport/server-call.js';
import type { MethodHandler } from './transport/h2-server.js';
import { limitStatus } from './limit-status.js';

export interface TelemetryOptions {
  logger: Logger;
  limits: { maxTelemetryMessageBytes: number; maxRequestEntries: number };
  /** Values decoded per request entry, at most. */
  valuesPerEntry: number;
  /** `host:port` the broker's commands name as the store host. */
  storeHost: () => string;
}

export class TelemetryStreams {
  /** Open Telemetry streams by client id. */
  private readonly streams = new Map<string, Set<ServerCall>>();

  handler(
    broker: Broker,
    opts: TelemetryOptions,
    admit: (call: ServerCall) => void | Promise<void>,
    access: GrpcAccess,
    checkClientQuota: (ctx: CallContext) => void,
    noteClient: (ctx: CallContext) => void,
  ): MethodHandler {
    const log = opts.logger;
    const m = messagingMethods().get('Telemetry')!;
    const type = m.responseType;
    const write = (call: ServerCall, cmd: TelemetryCommand) => {
      let bytes: Uint8Array;
      try {
        bytes = encode(type, cmd);
      } catch (err) {
        log.error({ err }, 'cannot encode a telemetry command');
        return;
      }
      // A client that does not read its commands gets no more of them read either: flow control
      // then stops it from sending, so neither side's buffers grow.
      if (!call.write(bytes)) {
        call.pauseReading();
        void call.drain().then(() => call.resumeReading());
      }
    };
    const refuse = (call: ServerCall, status: Status) => {
      write(call, { status });
      call.end();
    };
    return {
      kind: 'bidi',
      maxMessageBytes: opts.limits.maxTelemetryMessageBytes,
      onRefused: (call, err) => refuse(call, limitStatus(err)),
      onOpen: (call) => {
        let ctx: CallContext;
        // The stream's headers are read once: authenticated here, each Settings authorized below.
        let principal: ReturnType<GrpcAccess['authenticate']> | undefined;
        try {
          ctx = contextOf(call, undefined);
          checkClientQuota(ctx);
          if (access.enabled) principal = access.authenticate(credentialsOf(call));
        } catch (err) {
          refuse(call, statusOf(err, log, 'Telemetry'));
          return;
        }
        const auth = admit(call);
        let admitted: Promise<void> | undefined;
        if (auth) {
          admitted = Promise.resolve(auth).catch((err: unknown) => {
            refuse(call, statusOf(err, log, 'Telemetry'));
            throw err;
          });
          admitted.catch(() => {});
        }
        noteClient(ctx);
        const clientId = ctx.clientId;
        let streams = this.streams.get(clientId);
        if (!streams) this.streams.set(clientId, (streams = new Set()));
        streams.add(call);
        // The broker's own commands to this client (orphaned-transaction checks).
        const detach = broker.channels.attach(clientId, (command) => {
          if (!call.isOpen) return false;
          write(call, telemetryCommandOf(command, `${opts.storeHost()}`));
          return true;
        });
        const onCommand = (cmd: TelemetryCommand) => {
          const malformed = (cmd as Record<symbol, unknown>)[MALFORMED];
          if (malformed !== undefined) {
            write(call, {
              status: statusOf(
                new VelaError('BAD_REQUEST', `malformed telemetry command: ${String(malformed)}`),
                log,
                'Telemetry',
              ),
            });
            return;
          }
          if (!cmd.settings) return; // diagnostics replies (thread stack, verify result): nothing to do
          if (principal) {
            try {
              access.authorize(principal, 'Telemetry', cmd, ctx.namespace, call.peer.remote);
            } catch (err) {
              write(call, { status: statusOf(err, log, 'Telemetry') });
              return;
            }
          }
          const owner = broker.sessions.get(clientId);
          if (
            owner?.telemetryOpen &&
            owner.connectionId !== undefined &&
            owner.connectionId !== ctx.connectionId &&
            this.openOn(clientId, owner.connectionId)
          ) {
            write(call, {
              status: statusOf(
                new VelaError('FORBIDDEN', `client id ${clientId} has a session on another connection`),
                log,
                'Telemetry',
              ),
            });
            return;
          }
          settingsReply(broker, ctx, cmd.settings).then(
            (reply) => write(call, reply),
            (err: unknown) => write(call, { status: statusOf(err, log, 'Telemetry') }),
          );
        };
        call.onMessage((bytes) => {
          let cmd: TelemetryCommand;
          try {
            cmd = decodeGuardedTelemetry(m, bytes, opts.limits.maxRequestEntries * opts.valuesPerEntry);
          } catch (err) {
            refuse(call, limitStatus(err as LimitError));
            return;
          }
          if (admitted)
            admitted.then(
              () => onCommand(cmd),
              () => {},
            );
          else onCommand(cmd);
        });
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          detach();
          streams.delete(call);
          if (streams.size === 0) this.streams.delete(clientId);
          // The session ends when its last stream on this connection does (streams other connections
          // opened with the same id neither keep it alive nor end it).
          if (![...streams].some((c) => c.peer.connectionId === ctx.connectionId)) {
            broker.sessions.telemetryClosed(clientId, ctx.connectionId);
          }
        };
        call.onHalfClose(() => {
          finish();
          call.end();
        });
        call.onClose(finish);
        // Shutdown (or a deadline the client set) ends the stream from our side.
        call.signal.addEventListener('abort', () => {
          finish();
          call.end();
        });
      },
    };
  }

  private openOn(clientId: string, connectionId: string): boolean {
    for (const call of this.streams.get(clientId) ?? []) {
      if (call.peer.connectionId === connectionId && call.isOpen) return true;
    }
    return false;
  }
}

function decodeGuardedTelemetry(m: MethodCodec, bytes: Buffer, maxValues: number): TelemetryCommand {
  try {
    guardRequest(m.requestType, bytes, { maxValues, maxEntries: Infinity });
  } catch (err) {
    if (err instanceof LimitError && err.kind === 'malformed') {
      return { [MALFORMED]: err.message } as unknown as TelemetryCommand;
    }
    throw err;
  }
  return decodeRequest(m.requestType, bytes) as TelemetryCommand;
}
