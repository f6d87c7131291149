/**
 * A connection to one broker endpoint set: one HTTP/2 connection (h2-channel.ts) shared by every call
 * to it, with the request metadata RocketMQ expects built fresh for each call (`x-mq-client-id`,
 * `x-mq-protocol`, `x-mq-date-time`, `x-mq-request-id`, `x-mq-language`, `x-mq-client-version`, and
 * `x-mq-namespace` / `authorization` when configured). Calls reject with `VelaClientError`s built by
 * `fromTransport`, or with the signal's reason when aborted; body statuses are the caller's to check.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { decode, encode, messagingMethods, type MethodCodec } from '../protocol/codec.js';
import { PrefixedMessage } from '../protocol/transport/grpc-wire.js';
import type { Endpoints, TelemetryCommand } from '../protocol/wire-types.js';
import { abortReason, fromTransport } from './errors.js';
import { endpointsKey } from './endpoints.js';
import { H2Channel, type BidiCall, type ClientTls } from './h2-channel.js';
import type { SessionCredentials } from './options.js';
import { formatDateTime, signRequest } from '../common/signature.js';
import { ACCEPT_DIGEST_HEADER } from '../protocol/body-digest.js';

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

function method(name: string): MethodCodec {
  const m = messagingMethods().get(name);
  if (!m) throw new Error(`MessagingService has no method ${name}`);
  return m;
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

/** `x-mq-date-time` changes once a second: formatted once a second, not per request. */
let dateTimeSecond = -1;
let dateTime = '';
function currentDateTime(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateTimeSecond) {
    dateTimeSecond = second;
    dateTime = formatDateTime(now);
  }
  return dateTime;
}

/** The headers of one request. */
export function requestMetadata(id: Identity): Record<string, string> {
  const c = id.credentials;
  // The date-time is what the signature covers: UTC, as the header means (the Java, Go and Python
  // clients send local time).
  const signed = c ? signRequest(c.accessKey, c.accessSecret) : undefined;
  const md: Record<string, string> = {
    'x-mq-client-id': id.clientId,
    'x-mq-protocol': 'v2',
    'x-mq-date-time': signed?.dateTime ?? currentDateTime(),
    'x-mq-request-id': randomUUID(),
    // The official broker's LanguageCode enum has no Node.js value; the Settings' user agent says NODE_JS.
    'x-mq-language': 'HTTP',
    'x-mq-client-version': SDK_VERSION,
  };
  if (id.namespace) md['x-mq-namespace'] = id.namespace;
  if (c && signed) {
    md['authorization'] = signed.authorization;
    if (c.securityToken) md['x-mq-session-token'] = c.securityToken;
  }
  return md;
}

/** A Telemetry stream: TelemetryCommands both ways, with a grpc-js duplex stream's events. */
export type TelemetryStream = BidiCall<TelemetryCommand, TelemetryCommand>;

export class Connection {
  readonly key: string;
  private readonly channel: H2Channel;

  constructor(
    readonly endpoints: Endpoints,
    private readonly identity: Identity,
    tls?: ClientTls,
  ) {
    this.key = endpointsKey(endpoints);
    this.channel = new H2Channel({
      addresses: (endpoints.addresses ?? []).map((a) => ({ host: a.host ?? '', port: a.port ?? 0 })),
      maxReceiveMessageBytes: MAX_RECEIVE_MESSAGE_LENGTH,
      ...(tls ? { tls } : {}),
    });
  }

  /**
   * A unary call; resolves with the decoded response, whatever its body status. `request` is the
   * request object, or its bytes when the caller encoded it (send-encoder.ts), after their gRPC
   * prefix or not (`PrefixedMessage`).
   */
  async unary<Res>(
    name: string,
    request: object | Uint8Array | PrefixedMessage,
    opts: CallOptions,
  ): Promise<Res> {
    const m = method(name);
    try {
      const bytes = await this.channel.unary(
        m.path,
        requestMetadata(this.identity),
        request instanceof Uint8Array || request instanceof PrefixedMessage
          ? request
          : encode(m.requestType, request),
        opts.timeoutMs,
        opts.signal,
      );
      return decode(m.responseType, bytes) as Res;
    } catch (err) {
      if (opts.signal?.aborted) throw abortReason(opts.signal);
      throw fromTransport(err, name);
    }
  }

  /** Run `fn` when this connection next writes (its calls then share the write; H2Channel.beforeFlush). */
  beforeFlush(fn: () => void): void {
    this.channel.beforeFlush(fn);
  }

  /** A unary call with the request already encoded; resolves with the answer's bytes. */
  async unaryBytes(name: string, request: Uint8Array | PrefixedMessage, opts: CallOptions): Promise<Buffer> {
    const m = method(name);
    try {
      return await this.channel.unary(
        m.path,
        requestMetadata(this.identity),
        request,
        opts.timeoutMs,
        opts.signal,
      );
    } catch (err) {
      if (opts.signal?.aborted) throw abortReason(opts.signal);
      throw fromTransport(err, name);
    }
  }

  /**
   * A delivering call (ReceiveMessage, PullMessage), read to its end; resolves with every answer
   * frame's bytes. Delivered messages come with CRC32 body digests, cheaper to check than the MD5 ones
   * the official clients get (body-digest.ts).
   */
  async deliveries(name: string, request: object, opts: CallOptions): Promise<Buffer[]> {
    const m = method(name);
    try {
      const md = requestMetadata(this.identity);
      md[ACCEPT_DIGEST_HEADER] = 'CRC32';
      return await this.channel.serverStream(
        m.path,
        md,
        encode(m.requestType, request),
        opts.timeoutMs,
        opts.signal,
      );
    } catch (err) {
      if (opts.signal?.aborted) throw abortReason(opts.signal);
      throw fromTransport(err, name);
    }
  }

  /** Open a Telemetry stream (bidi). */
  telemetry(): TelemetryStream {
    const m = method('Telemetry');
    return this.channel.bidi<TelemetryCommand, TelemetryCommand>(m.path, requestMetadata(this.identity), {
      encode: (cmd) => encode(m.requestType, cmd),
      decode: (bytes) => decode(m.responseType, bytes) as TelemetryCommand,
    });
  }

  /** Wait until the connection is up (dialling if needed), for at most `timeoutMs`. */
  async waitForReady(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    try {
      await this.channel.waitForReady(timeoutMs, signal);
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      throw fromTransport(err, 'connect');
    }
  }

  get isClosed(): boolean {
    return this.channel.isClosed;
  }

  /** Close the connection; calls still running fail with CANCELLED. Idempotent. */
  close(): void {
    this.channel.close();
  }
}
