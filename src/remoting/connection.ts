/**
 * One client connection (a RocketMQ "channel"): frames in, responses out, and the broker's own
 * one-way requests to the client (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE). Requests in progress (long-polling
 * pulls) are aborted when the connection closes.
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

  write(cmd: RemotingCommand): void {
    if (this.closed || this.socket.destroyed) return;
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

  markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.aborts.abort();
    for (const detach of this.transactionChecks.values()) detach();
    this.transactionChecks.clear();
  }

  close(): void {
    this.markClosed();
    this.socket.destroy();
  }
}
