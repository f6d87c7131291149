/**
 * One client connection (a RocketMQ "channel"): frames in, responses out, and the broker's own
 * requests to the client — one-way (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE) or
 * answered (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY, matched to their answers by opaque).
 * Requests in progress (long-polling pulls, calls to the client) end when the connection closes.
 */
import { setMaxListeners } from 'node:events';
import type { Socket } from 'node:net';
import { encodeFrame, Flag, FrameDecoder, type RemotingCommand } from './frame.js';

/** The version Vela answers with (`MQVersion` V5_3_1). */
export const SERVER_VERSION = 475;

let nextId = 0;

export class RemotingConnection {
  readonly id = `remoting-${++nextId}`;
  readonly remoteAddress: string;
  readonly decoder: FrameDecoder;
  /** Requests in progress. */
  inflight = 0;
  /** Producer groups of this connection taking orphaned-transaction checks → how to stop. */
  readonly transactionChecks = new Map<string, () => void>();
  private readonly aborts = new AbortController();
  private closed = false;
  /** Writes are being gathered until the end of this turn (`write`). */
  private corked = false;
  /** The broker's requests awaiting the client's answer, by opaque. */
  private readonly calls = new Map<
    number,
    { resolve: (c: RemotingCommand) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();

  constructor(
    readonly socket: Socket,
    maxFrameLength: number,
  ) {
    this.remoteAddress = `${socket.remoteAddress ?? '0.0.0.0'}:${socket.remotePort ?? 0}`.replace(
      /^::ffff:/,
      '',
    );
    this.decoder = new FrameDecoder(maxFrameLength);
    // Every pull in progress on the connection listens to it (a client pulls many queues at once).
    setMaxListeners(0, this.aborts.signal);
  }

  /** Aborted when the connection closes. */
  get signal(): AbortSignal {
    return this.aborts.signal;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Send a frame. The frames of one turn of the event loop leave in one `writev`: a group commit
   * answers hundreds of sends at once, and a write system call per answer cost the broker ~25 µs
   * each, half its time under a Remoting producer's load (bench:compare W1a, docs/benchmarks.md).
   */
  write(cmd: RemotingCommand): void {
    if (this.closed || this.socket.destroyed) return;
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(encodeFrame(cmd));
  }

  /** A one-way request from the broker to the client. */
  notify(code: number, extFields: Record<string, string>, opaque: number, body?: Buffer): void {
    this.write({
      code,
      language: 'JAVA',
      version: SERVER_VERSION,
      opaque,
      flag: Flag.ONEWAY,
      extFields,
      ...(body ? { body } : {}),
    });
  }

  /**
   * A request from the broker to the client, answered: resolves with the client's response, rejects
   * with `TIMEOUT` after `timeoutMs` or `CLIENT_GONE` when the connection closes first.
   */
  call(
    code: number,
    extFields: Record<string, string>,
    opaque: number,
    timeoutMs: number,
    body?: Buffer,
  ): Promise<RemotingCommand> {
    if (this.closed || this.socket.destroyed) {
      return Promise.reject(
        new CallError('CLIENT_GONE', `the connection of ${this.remoteAddress} is closed`),
      );
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.calls.delete(opaque);
        reject(new CallError('TIMEOUT', `no answer from ${this.remoteAddress} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.calls.set(opaque, { resolve, reject, timer });
      this.write({
        code,
        language: 'JAVA',
        version: SERVER_VERSION,
        opaque,
        flag: 0,
        extFields,
        ...(body ? { body } : {}),
      });
    });
  }

  /** A response frame from the client: the answer to one of the broker's calls (strays are ignored). */
  answered(response: RemotingCommand): void {
    const call = this.calls.get(response.opaque);
    if (!call) return;
    this.calls.delete(response.opaque);
    clearTimeout(call.timer);
    call.resolve(response);
  }

  markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.aborts.abort();
    for (const call of this.calls.values()) {
      clearTimeout(call.timer);
      call.reject(new CallError('CLIENT_GONE', `the connection of ${this.remoteAddress} closed`));
    }
    this.calls.clear();
    for (const detach of this.transactionChecks.values()) detach();
    this.transactionChecks.clear();
  }

  close(): void {
    this.markClosed();
    this.socket.destroy();
  }
}

/** Why a call to a client failed. */
export class CallError extends Error {
  constructor(
    readonly reason: 'TIMEOUT' | 'CLIENT_GONE',
    message: string,
  ) {
    super(message);
    this.name = 'CallError';
  }
}
