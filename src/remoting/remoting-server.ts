/**
 * The RocketMQ Remoting endpoint: one TCP port that plays both name server and broker, as the
 * RocketMQ 5 proxy's Remoting port does (routes it returns point at itself), for 4.x clients, the
 * stock `mqadmin` and the Dashboard. Requests are dispatched by code to the processors; an unknown
 * code is answered `REQUEST_CODE_NOT_SUPPORTED`, a one-way request never. The same service is also
 * offered on port − 2 (RocketMQ's "VIP channel", which the Dashboard dials by default) when that port
 * is free.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Broker } from '../broker/broker.js';
import { SlotSet } from '../common/slot-set.js';
import type { Logger } from '../common/logger.js';
import { RequestCode, ResponseCode, requestCodeName } from './codes.js';
import { RemotingConnection, SERVER_VERSION } from './connection.js';
import type { EndpointInfo, Processor, Reply, RequestContext } from './context.js';
import {
  decodeFrame,
  Flag,
  FrameError,
  isOneway,
  isResponse,
  MAX_FRAME_LENGTH,
  type RemotingCommand,
} from './frame.js';
import { Header } from './header.js';
import { parseHostAddress } from './message-codec.js';
import { failureOf } from './status.js';
import { checkAccess, isAclFailure } from './acl.js';
import { applyClientQuirks } from './client-quirks.js';
import { processors } from './processors/index.js';
import { isLongPolling, RemotingRpcStats } from './rpc-stats.js';
import { readTurns } from '../common/read-turns.js';

export interface RemotingEndpointOptions {
  /** @defaultValue '127.0.0.1' */
  host: string;
  /** 0 picks a free port. */
  port: number;
  autoCreateTopics: boolean;
  logger: Logger;
  /** Also listen on port − 2 (the VIP channel) when `port` is not 0. @defaultValue true */
  vipChannel?: boolean;
  /** @defaultValue 16 MiB */
  maxFrameLength?: number;
  /** @defaultValue 'DefaultCluster' */
  clusterName?: string;
  /** How long a request the broker forwards to a client waits for its answer. @defaultValue 10000 */
  callClientTimeoutMs?: number;
}

/** Requests one connection may have in progress (long polls included); beyond, SYSTEM_BUSY. */
export const MAX_INFLIGHT_PER_CONNECTION = 4096;

export class RemotingEndpoint {
  private readonly connections = new Map<string, RemotingConnection>();
  private readonly servers: Server[] = [];
  /** Requests in progress (a slot set, not a Set: one per request comes and goes; slot-set.ts). */
  private readonly inflight = new SlotSet<Promise<void>>();
  private opaque = 0;
  private closing: Promise<void> | null = null;
  private info!: EndpointInfo;
  private readonly rpcStats: RemotingRpcStats;
  private unsubscribe: () => void = () => {};
  /** Ports served: the main port first, then the VIP port if it could be bound. */
  readonly ports: number[] = [];

  private constructor(
    private readonly broker: Broker,
    private readonly opts: RemotingEndpointOptions,
    private readonly table: ReadonlyMap<number, Processor>,
  ) {
    this.rpcStats = new RemotingRpcStats(broker.stats);
  }

  static async start(broker: Broker, opts: RemotingEndpointOptions): Promise<RemotingEndpoint> {
    const e = new RemotingEndpoint(broker, opts, processors());
    const main = e.newServer();
    try {
      e.ports.push(await listen(main, opts.host, opts.port, 'Remoting'));
    } catch (err) {
      main.close();
      throw err;
    }
    const port = e.ports[0]!;
    const host = advertisedHost(opts.host);
    e.info = {
      address: `${host}:${port}`,
      host: parseHostAddress(`${host}:${port}`),
      clusterName: opts.clusterName ?? 'DefaultCluster',
      autoCreateTopics: opts.autoCreateTopics,
      notifyConsumerIdsChanged: (group) => e.notifyConsumerIdsChanged(group),
      nextOpaque: () => ++e.opaque,
      connection: (channel) => e.connections.get(channel),
      callClientTimeoutMs: opts.callClientTimeoutMs ?? 10_000,
    };
    if (opts.port !== 0 && opts.port >= 2 && opts.vipChannel !== false) {
      const vip = e.newServer();
      try {
        e.ports.push(await listen(vip, opts.host, opts.port - 2, 'Remoting VIP'));
      } catch (err) {
        vip.close();
        e.servers.pop();
        opts.logger.warn(
          { err: (err as Error).message, port: opts.port - 2 },
          'the Remoting VIP port (port − 2) is not available; RocketMQ Dashboard users must set rocketmq.config.isVIPChannel=false',
        );
      }
    }
    const notify = (group: string) => e.notifyConsumerIdsChanged(group);
    e.unsubscribe = broker.consumers.onChange(notify);
    opts.logger.info({ address: e.info.address, ports: e.ports }, 'Remoting endpoint listening');
    return e;
  }

  get address(): string {
    return this.info.address;
  }

  /** Stop accepting, answer nothing more, close every connection; waits up to `graceMs` for requests in progress. */
  close(graceMs = 5000): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        this.unsubscribe();
        const closed = Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
        for (const c of this.connections.values()) c.markClosed(); // ends long polls at once
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled(this.inflight.values()),
          new Promise((r) => (timer = setTimeout(r, graceMs))),
        ]);
        clearTimeout(timer);
        for (const c of this.connections.values()) c.close();
        await closed;
      })();
    }
    return this.closing;
  }

  private newServer(): Server {
    const server = createServer((socket) => this.accept(socket));
    this.servers.push(server);
    return server;
  }

  private accept(socket: Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    const conn = new RemotingConnection(socket, this.opts.maxFrameLength ?? MAX_FRAME_LENGTH);
    this.connections.set(conn.id, conn);
    const log = this.opts.logger;
    const countRead = readTurns(socket);
    socket.on('data', (chunk: Buffer) => {
      countRead(chunk.length);
      let frames: Buffer[];
      try {
        frames = conn.decoder.push(chunk);
      } catch (err) {
        log.warn(
          { remote: conn.remoteAddress, err: (err as Error).message },
          'bad Remoting frame: closing the connection',
        );
        conn.close();
        return;
      }
      for (const f of frames) {
        let cmd: RemotingCommand;
        try {
          cmd = decodeFrame(f);
        } catch (err) {
          const why =
            err instanceof FrameError ? err.message : `undecodable header: ${(err as Error).message}`;
          log.warn({ remote: conn.remoteAddress, err: why }, 'bad Remoting frame: closing the connection');
          conn.close();
          return;
        }
        if (isResponse(cmd)) {
          conn.answered(cmd); // the answer to one of the broker's own requests
          continue;
        }
        applyClientQuirks(cmd);
        this.dispatch(conn, cmd);
      }
    });
    socket.on('error', () => {}); // 'close' follows
    socket.on('close', () => {
      conn.markClosed();
      this.connections.delete(conn.id);
      this.broker.consumers.channelClosed(conn.id);
    });
  }

  private dispatch(conn: RemotingConnection, cmd: RemotingCommand): void {
    const processor = this.table.get(cmd.code);
    if (!processor) {
      if (!isOneway(cmd)) {
        this.respond(conn, cmd, {
          code: ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
          remark: `request code ${cmd.code} not supported`,
        });
      }
      return;
    }
    if (this.broker.acl.enabled) {
      try {
        checkAccess(this.broker, cmd, conn.remoteAddress);
      } catch (err) {
        const f = failureOf(err, this.opts.logger, requestCodeName(cmd.code));
        const code = isAclFailure(err) ? ResponseCode.NO_PERMISSION : f.code;
        this.rpcStats.observe(cmd.code, code, false, 0);
        if (!isOneway(cmd)) this.respond(conn, cmd, { code, remark: f.remark });
        else this.opts.logger.debug({ code: cmd.code, remark: f.remark }, 'one-way Remoting request refused');
        return;
      }
    }
    if (conn.inflight >= MAX_INFLIGHT_PER_CONNECTION) {
      if (!isOneway(cmd)) {
        this.respond(conn, cmd, {
          code: ResponseCode.SYSTEM_BUSY,
          remark: `[OVERLOAD] more than ${MAX_INFLIGHT_PER_CONNECTION} requests in progress on this connection`,
        });
      }
      return;
    }
    conn.inflight++;
    const started = performance.now();
    const longPolling = isLongPolling(cmd);
    const ctx: RequestContext = {
      broker: this.broker,
      conn,
      endpoint: this.info,
      logger: this.opts.logger,
      cmd,
      header: new Header(cmd.extFields),
    };
    let slot = -1;
    const p = Promise.resolve()
      .then(() => processor(ctx))
      .then(
        (reply) => {
          this.rpcStats.observe(
            cmd.code,
            reply.code ?? ResponseCode.SUCCESS,
            longPolling,
            performance.now() - started,
          );
          if (!isOneway(cmd)) this.respond(conn, cmd, reply);
        },
        (err: unknown) => {
          const f = failureOf(err, this.opts.logger, requestCodeName(cmd.code));
          this.rpcStats.observe(cmd.code, f.code, longPolling, performance.now() - started);
          if (isOneway(cmd)) {
            this.opts.logger.debug({ code: cmd.code, remark: f.remark }, 'one-way Remoting request failed');
          } else this.respond(conn, cmd, f);
        },
      )
      .finally(() => {
        conn.inflight--;
        this.inflight.remove(slot);
      });
    slot = this.inflight.add(p);
  }

  private respond(conn: RemotingConnection, req: RemotingCommand, reply: Reply): void {
    const extFields: Record<string, string> = {};
    for (const [k, v] of Object.entries(reply.extFields ?? {})) if (v !== undefined) extFields[k] = String(v);
    conn.write({
      code: reply.code ?? ResponseCode.SUCCESS,
      language: 'JAVA',
      version: SERVER_VERSION,
      opaque: req.opaque,
      flag: Flag.RESPONSE,
      ...(reply.remark !== undefined ? { remark: reply.remark } : {}),
      extFields,
      ...(reply.body ? { body: reply.body } : {}),
    });
  }

  private notifyConsumerIdsChanged(group: string): void {
    for (const channel of this.broker.consumers.channelsOf(group)) {
      const conn = this.connections.get(channel);
      conn?.notify(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, { consumerGroup: group }, this.info.nextOpaque());
    }
  }
}

function listen(server: Server, host: string, port: number, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `${what} port ${host}:${port} is already in use`
            : `cannot listen on ${host}:${port}: ${err.message}`,
        ),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : port);
    });
  });
}

/** The address clients should dial: the listen host, or for a wildcard one this machine's first IPv4. */
function advertisedHost(host: string): string {
  if (host !== '0.0.0.0' && host !== '::' && host !== '') return host;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
