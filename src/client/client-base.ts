/**
 * What every gRPC client shares: its identity (a client id unique per instance), its connections
 * (one per endpoint set), its Telemetry sessions (one per broker endpoint, opened when a route first
 * names it), the route cache (refreshed every `routeRefreshIntervalMs`), heartbeats, and the
 * lifecycle: idempotent `start()` and `close()`. Closing drains the subclass's work (`onClose`), then
 * sends NotifyClientTermination to every broker in use, ends the Telemetry streams, closes the
 * channels and clears every timer, so the process can exit.
 */
import { hostname, platform, arch } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Code } from '../common/codes.js';
import type { Logger } from '../common/logger.js';
import { fromMillis } from '../protocol/codec.js';
import type {
  Endpoints,
  MessageQueue,
  Resource,
  Settings,
  Status,
  TelemetryCommand,
} from '../protocol/wire-types.js';
import { Connection, SDK_VERSION } from './connection.js';
import { endpointsKey } from './endpoints.js';
import { withQueueDefaults } from './message-queue.js';
import { VelaClientError, checkStatus, closedError } from './errors.js';
import type { ClientConfig } from './options.js';
import { TelemetrySession } from './telemetry.js';
import { Timers } from '../common/timers.js';

const LANGUAGE_NODE_JS = 8;
let instances = 0;

function newClientId(): string {
  return `${hostname()}@${process.pid}@${instances++}@${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
}

type Lifecycle = 'new' | 'starting' | 'running' | 'closing' | 'closed';

export abstract class ClientBase {
  /** Unique per client instance; the broker ties this client's sessions and deliveries to it. */
  readonly clientId = newClientId();
  protected readonly timers: Timers;
  protected readonly logger: Logger;
  private readonly connections = new Map<string, Connection>();
  private readonly sessions = new Map<string, TelemetrySession>();
  private readonly routes = new Map<string, MessageQueue[]>();
  private readonly routeFetches = new Map<string, Promise<MessageQueue[]>>();
  private state: Lifecycle = 'new';
  private starting: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private tornDown = false;

  protected constructor(
    protected readonly clientConfig: ClientConfig,
    private readonly kind: string,
  ) {
    this.timers = new Timers(() => closedError(kind));
    this.logger = clientConfig.logger.child({ client: kind, clientId: this.clientId });
  }

  /** The wire client type (PRODUCER = 1, PUSH_CONSUMER = 2, SIMPLE_CONSUMER = 3). */
  protected abstract readonly clientType: number;
  /** The type-specific part of Settings (`publishing` or `subscription`). */
  protected abstract settingsBody(): Settings;
  /** Apply the broker's reply to Settings. */
  protected abstract applySettings(s: Settings): void;
  /** Topics whose routes (and so Telemetry sessions) must be ready before `start()` resolves. */
  protected abstract startupTopics(): readonly string[];
  /** The consumer group, sent in Heartbeat and NotifyClientTermination. */
  protected groupResource(): Resource | undefined {
    return undefined;
  }
  /** Runs at the end of `start()`. */
  protected async onStart(): Promise<void> {}
  /** Runs first in `close()`: finish or hand back in-flight work while the sessions still live. */
  protected async onClose(): Promise<void> {}
  /** The broker asks, over `conn`'s Telemetry session, about a transaction left open. */
  protected onOrphanedTransaction?(
    conn: Connection,
    command: NonNullable<TelemetryCommand['recover_orphaned_transaction_command']>,
  ): void;

  /**
   * Query the routes of the configured topics, open a Telemetry session with each broker and wait for
   * its Settings reply, then start the client's own work. Idempotent; a failed start closes the client.
   */
  start(): Promise<void> {
    if (this.closing) return Promise.reject(closedError(this.kind));
    this.starting ??= (async () => {
      this.state = 'starting';
      try {
        for (const topic of this.startupTopics()) await this.route(topic);
        this.timers.interval(() => this.heartbeat(), this.clientConfig.heartbeatIntervalMs, { unref: true });
        this.timers.interval(() => void this.refreshRoutes(), this.clientConfig.routeRefreshIntervalMs, {
          unref: true,
        });
        await this.onStart();
        if (this.state !== 'starting') throw closedError(this.kind);
        this.state = 'running';
        this.logger.debug('started');
      } catch (err) {
        this.state = 'closed';
        this.closing ??= Promise.resolve();
        await this.teardown();
        throw err;
      }
    })();
    return this.starting;
  }

  /** Drain, say goodbye to every broker, end the streams and channels, clear every timer. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const wasStarting = this.state === 'starting';
      this.state = 'closing';
      if (wasStarting) {
        // Abort a start in progress (its Settings waits reject), then let it clean up.
        await this.teardown();
        await this.starting?.catch(() => {});
      } else if (this.starting) {
        try {
          await this.onClose();
        } catch (err) {
          this.logger.error({ err }, 'draining before close failed');
        }
        await this.teardown();
      }
      this.state = 'closed';
      this.logger.debug('closed');
    })();
    return this.closing;
  }

  /** True between a successful `start()` and `close()`. */
  get isRunning(): boolean {
    return this.state === 'running';
  }

  /** Whether `close()` has been called. */
  protected get isClosing(): boolean {
    return this.closing !== undefined;
  }

  /** Throw if the client is closing or closed. */
  protected assertOpen(): void {
    if (this.closing) throw closedError(this.kind);
  }

  protected resource(name: string): Resource {
    return { resource_namespace: this.clientConfig.namespace, name };
  }

  protected connectionFor(endpoints: Endpoints): Connection {
    // Never open a channel after teardown: nothing would close it.
    if (this.tornDown) throw closedError(this.kind);
    const key = endpointsKey(endpoints);
    let c = this.connections.get(key);
    if (!c || c.isClosed) {
      c = new Connection(
        endpoints,
        {
          clientId: this.clientId,
          namespace: this.clientConfig.namespace,
          credentials: this.clientConfig.credentials,
        },
        this.clientConfig.tls,
      );
      this.connections.set(key, c);
    }
    return c;
  }

  protected connectionByKey(key: string): Connection | undefined {
    return this.connections.get(key);
  }

  /** A unary call whose body status must be OK (or MULTIPLE_RESULTS). */
  protected async call<Res extends { status?: Status }>(
    conn: Connection,
    method: string,
    request: object,
    opts: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<Res> {
    const res = await conn.unary<Res>(method, request, {
      timeoutMs: opts.timeoutMs ?? this.clientConfig.requestTimeoutMs,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    checkStatus(res.status, method);
    return res;
  }

  /** The Telemetry session with `conn`'s broker, opened (and its Settings reply awaited) if new. */
  protected async ensureSession(conn: Connection): Promise<void> {
    if (this.tornDown) throw closedError(this.kind);
    let s = this.sessions.get(conn.key);
    if (!s) {
      s = new TelemetrySession(conn, {
        settings: () => this.settings(),
        onSettings: (reply) => this.applySettings(reply),
        ...(this.onOrphanedTransaction
          ? { onOrphanedTransaction: (cmd) => this.onOrphanedTransaction!(conn, cmd) }
          : {}),
        timers: this.timers,
        logger: this.logger,
        settingsTimeoutMs: this.clientConfig.settingsTimeoutMs,
        reconnectDelayMs: this.clientConfig.telemetryReconnectDelayMs,
      });
      this.sessions.set(conn.key, s);
    }
    try {
      await s.start();
    } catch (err) {
      if (this.sessions.get(conn.key) === s) this.sessions.delete(conn.key);
      void s.close();
      throw err;
    }
  }

  /** Send Settings again on every session (after the client's topics changed). */
  protected resendSettings(): void {
    for (const s of this.sessions.values()) s.resend();
  }

  /** The topic's queues, from the cache or a QueryRoute (sessions with its brokers opened first). */
  protected route(topic: string): Promise<MessageQueue[]> {
    const cached = this.routes.get(topic);
    if (cached) return Promise.resolve(cached);
    let p = this.routeFetches.get(topic);
    if (!p) {
      p = this.fetchRoute(topic).finally(() => this.routeFetches.delete(topic));
      this.routeFetches.set(topic, p);
    }
    return p;
  }

  /** Topics with a cached route. */
  protected knownTopics(): string[] {
    return [...this.routes.keys()];
  }

  private settings(): Settings {
    return {
      client_type: this.clientType,
      access_point: this.clientConfig.accessPoint,
      request_timeout: fromMillis(this.clientConfig.requestTimeoutMs),
      user_agent: {
        language: LANGUAGE_NODE_JS,
        version: SDK_VERSION,
        platform: `${platform()} ${arch()} node ${process.version}`,
        hostname: hostname(),
      },
      ...this.settingsBody(),
    };
  }

  private async fetchRoute(topic: string): Promise<MessageQueue[]> {
    const access = this.connectionFor(this.clientConfig.accessPoint);
    const res = await this.call<{ status?: Status; message_queues?: MessageQueue[] }>(access, 'QueryRoute', {
      topic: this.resource(topic),
      endpoints: this.clientConfig.accessPoint,
    });
    const queues = (res.message_queues ?? []).map(withQueueDefaults);
    if (queues.length === 0) {
      throw new VelaClientError(Code.TOPIC_NOT_FOUND, `the route of ${topic} has no queue`, {
        rpc: 'QueryRoute',
      });
    }
    const brokers = new Map<string, Endpoints>();
    for (const q of queues)
      if (q.broker?.endpoints) brokers.set(endpointsKey(q.broker.endpoints), q.broker.endpoints);
    await Promise.all([...brokers.values()].map((e) => this.ensureSession(this.connectionFor(e))));
    this.routes.set(topic, queues);
    return queues;
  }

  private async refreshRoutes(): Promise<void> {
    for (const topic of this.routes.keys()) {
      if (this.tornDown) return;
      try {
        const fresh = await this.fetchRoute(topic);
        this.routes.set(topic, fresh);
      } catch (err) {
        this.logger.debug({ err, topic }, 'route refresh failed; keeping the cached route');
      }
    }
  }

  private heartbeat(): void {
    const group = this.groupResource();
    for (const s of this.sessions.values()) {
      if (!s.isEstablished) continue;
      this.call(s.connection, 'Heartbeat', {
        ...(group ? { group } : {}),
        client_type: this.clientType,
      }).catch((err: unknown) => this.logger.debug({ err, endpoint: s.connection.key }, 'heartbeat failed'));
    }
  }

  /** Terminate every session, close every stream and channel, clear every timer. Idempotent. */
  private async teardown(): Promise<void> {
    if (this.tornDown) return;
    this.tornDown = true;
    this.timers.clear();
    const group = this.groupResource();
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(
      sessions
        .filter((s) => s.isEstablished)
        .map((s) =>
          this.call(s.connection, 'NotifyClientTermination', group ? { group } : {}).catch((err: unknown) =>
            this.logger.debug({ err, endpoint: s.connection.key }, 'NotifyClientTermination failed'),
          ),
        ),
    );
    await Promise.all(sessions.map((s) => s.close()));
    for (const c of this.connections.values()) c.close();
    this.connections.clear();
  }
}
