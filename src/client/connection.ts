/**
 * A connection to one broker endpoint set: one grpc-js client (one HTTP/2 channel) shared by every
 * call to it, with the request metadata RocketMQ expects built fresh for each call (`x-mq-client-id`,
 * `x-mq-protocol`, `x-mq-date-time`, `x-mq-request-id`, `x-mq-language`, `x-mq-client-version`, and
 * `x-mq-namespace` / `authorization` when configured). Calls reject with `VelaClientError`s built by
 * `fromTransport`, or with the signal's reason when aborted; body statuses are the caller's to check.
 */
import * as grpc from '@grpc/grpc-js';
import { createHmac, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { messagingServiceDefinition } from '../protocol/codec.js';
import type { Endpoints, TelemetryCommand } from '../protocol/wire-types.js';
import { abortReason, fromTransport } from './errors.js';
import { endpointsKey, grpcTarget } from './endpoints.js';
import type { SessionCredentials } from './options.js';

/** The SDK's version, sent as `x-mq-client-version` and in Settings. */
export const SDK_VERSION: string = (() => {
  try {
    return (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
  } catch {
    return '0.0.0';
  }
})();

/** Large enough for 32 messages of 4 MiB in one receive (the official proxy accepts 130 MiB). */
const MAX_RECEIVE_MESSAGE_LENGTH = 130 * 1024 * 1024;

let definition: grpc.ServiceDefinition | undefined;
function methods(): grpc.ServiceDefinition {
  return (definition ??= messagingServiceDefinition());
}

export interface Identity {
  clientId: string;
  namespace: string;
  credentials: SessionCredentials | undefined;
}

export interface CallOptions {
  /** Deadline, from now. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** `yyyyMMdd'T'HHmmss'Z'`, UTC. */
function dateTime(now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}` +
    `T${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}Z`
  );
}

/** The headers of one request. */
export function requestMetadata(id: Identity): grpc.Metadata {
  const md = new grpc.Metadata();
  const stamp = dateTime(new Date());
  md.set('x-mq-client-id', id.clientId);
  md.set('x-mq-protocol', 'v2');
  md.set('x-mq-date-time', stamp);
  md.set('x-mq-request-id', randomUUID());
  // The official broker's LanguageCode enum has no Node.js value; the Settings' user agent says NODE_JS.
  md.set('x-mq-language', 'HTTP');
  md.set('x-mq-client-version', SDK_VERSION);
  if (id.namespace) md.set('x-mq-namespace', id.namespace);
  const c = id.credentials;
  if (c) {
    const signature = createHmac('sha1', c.accessSecret).update(stamp).digest('hex').toUpperCase();
    md.set(
      'authorization',
      `MQv2-HMAC-SHA1 Credential=${c.accessKey}, SignedHeaders=x-mq-date-time, Signature=${signature}`,
    );
    if (c.securityToken) md.set('x-mq-session-token', c.securityToken);
  }
  return md;
}

export class Connection {
  readonly key: string;
  private readonly client: grpc.Client;
  private closed = false;

  constructor(
    readonly endpoints: Endpoints,
    private readonly identity: Identity,
  ) {
    this.key = endpointsKey(endpoints);
    this.client = new grpc.Client(grpcTarget(endpoints), grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_RECEIVE_MESSAGE_LENGTH,
      'grpc.max_send_message_length': -1,
    });
  }

  /** A unary call; resolves with the decoded response, whatever its body status. */
  unary<Res>(method: string, request: object, opts: CallOptions): Promise<Res> {
    const def = methods()[method]!;
    return new Promise<Res>((resolve, reject) => {
      if (opts.signal?.aborted) return reject(abortReason(opts.signal));
      let onAbort: (() => void) | undefined;
      let call: grpc.ClientUnaryCall;
      try {
        call = this.client.makeUnaryRequest(
          def.path,
          def.requestSerialize,
          def.responseDeserialize,
          request,
          requestMetadata(this.identity),
          { deadline: Date.now() + opts.timeoutMs },
          (err, res) => {
            if (onAbort) opts.signal!.removeEventListener('abort', onAbort);
            if (opts.signal?.aborted) reject(abortReason(opts.signal));
            else if (err) reject(fromTransport(err, method));
            else resolve(res as Res);
          },
        );
      } catch (err) {
        return reject(fromTransport(err, method)); // e.g. the channel is already closed
      }
      if (opts.signal) {
        onAbort = () => call.cancel();
        opts.signal.addEventListener('abort', onAbort, { once: true });
      }
    });
  }

  /** A server-streaming call, read to its end; resolves with every frame. */
  serverStream<Frame>(method: string, request: object, opts: CallOptions): Promise<Frame[]> {
    const def = methods()[method]!;
    return new Promise<Frame[]>((resolve, reject) => {
      if (opts.signal?.aborted) return reject(abortReason(opts.signal));
      const frames: Frame[] = [];
      let call: grpc.ClientReadableStream<Frame>;
      try {
        call = this.client.makeServerStreamRequest(
          def.path,
          def.requestSerialize,
          def.responseDeserialize,
          request,
          requestMetadata(this.identity),
          { deadline: Date.now() + opts.timeoutMs },
        );
      } catch (err) {
        return reject(fromTransport(err, method));
      }
      let settled = false;
      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        opts.signal?.removeEventListener('abort', onAbort);
        if (opts.signal?.aborted) reject(abortReason(opts.signal));
        else if (err) reject(fromTransport(err, method));
        else resolve(frames);
      };
      const onAbort = () => {
        call.cancel();
        finish();
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      call.on('data', (f: Frame) => frames.push(f));
      call.on('error', (err) => finish(err));
      call.on('end', () => finish());
    });
  }

  /** Open a Telemetry stream (bidi). */
  telemetry(): grpc.ClientDuplexStream<TelemetryCommand, TelemetryCommand> {
    const def = methods()['Telemetry']!;
    return this.client.makeBidiStreamRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      requestMetadata(this.identity),
      {},
    ) as grpc.ClientDuplexStream<TelemetryCommand, TelemetryCommand>;
  }

  /** Wait until the channel is connected (dialling if needed), for at most `timeoutMs`. */
  waitForReady(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const onAbort = () => reject(abortReason(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.client.waitForReady(Date.now() + timeoutMs, (err) => {
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(fromTransport(Object.assign(err, { code: grpc.status.UNAVAILABLE }), 'connect'));
        else resolve();
      });
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Close the channel; calls still running fail with CANCELLED. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }
}
