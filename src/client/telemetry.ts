/**
 * One Telemetry session with one broker endpoint: the bidi stream that carries the client's Settings
 * and the broker's answers and commands.
 *
 * `start()` opens the stream, writes Settings and resolves on the first Settings reply, or rejects
 * with a typed error: the reply's status (e.g. CONSUMER_GROUP_NOT_FOUND), the stream's failure, or
 * REQUEST_TIMEOUT after `settingsTimeoutMs` (never hangs). Once established, a stream that ends while
 * the session is open is re-opened after `reconnectDelayMs` with Settings sent again; never after
 * `close()`, whose pending re-open timer is cleared with the client's other timers.
 */
import { Code } from '../common/codes.js';
import type { Logger } from '../common/logger.js';
import type { Settings, TelemetryCommand } from '../protocol/wire-types.js';
import type { Connection, TelemetryStream } from './connection.js';
import { VelaClientError, fromStatus, fromTransport, isOk } from './errors.js';
import type { Cancel, Timers } from '../common/timers.js';

type Stream = TelemetryStream;

export interface TelemetryOptions {
  /** The Settings to send (called on every open, so they are current). */
  settings: () => Settings;
  /** Every Settings reply, applied as it comes. */
  onSettings: (s: Settings) => void;
  /** The broker asks about a transaction left open (producers with a checker). */
  onOrphanedTransaction?: (
    command: NonNullable<TelemetryCommand['recover_orphaned_transaction_command']>,
  ) => void;
  timers: Timers;
  logger: Logger;
  settingsTimeoutMs: number;
  reconnectDelayMs: number;
}

/** How long `close()` waits for the broker to end its side after we end ours. */
const CLOSE_GRACE_MS = 500;

export class TelemetrySession {
  private stream: Stream | undefined;
  private established = false;
  private closed = false;
  private reopen: Cancel | undefined;
  private first: { resolve: () => void; reject: (e: unknown) => void; cancel: Cancel } | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    readonly connection: Connection,
    private readonly o: TelemetryOptions,
  ) {}

  /** Open the stream and wait for the first Settings reply. Idempotent. */
  start(): Promise<void> {
    this.starting ??= new Promise<void>((resolve, reject) => {
      const cancel = this.o.timers.timeout(() => {
        const err = new VelaClientError(
          Code.REQUEST_TIMEOUT,
          `no Settings reply from ${this.connection.key} within ${this.o.settingsTimeoutMs} ms`,
          { rpc: 'Telemetry' },
        );
        this.failFirst(err);
        this.stream?.cancel();
      }, this.o.settingsTimeoutMs);
      this.first = { resolve, reject, cancel };
      this.open();
    });
    return this.starting;
  }

  /** Send Settings again (e.g. after the client's topics changed). */
  resend(): void {
    if (this.stream && !this.closed) this.write(this.stream, { settings: this.o.settings() });
  }

  get isEstablished(): boolean {
    return this.established && !this.closed;
  }

  private open(): void {
    if (this.closed) return;
    let stream: Stream;
    try {
      stream = this.connection.telemetry();
    } catch (err) {
      // The channel is gone (closing): fail a start in progress; never retry.
      this.failFirst(fromTransport(err, 'Telemetry'));
      return;
    }
    this.stream = stream;
    let ended = false;
    const onEnd = (err?: unknown) => {
      if (ended) return;
      ended = true;
      this.onStreamEnd(stream, err);
    };
    stream.on('data', (cmd: TelemetryCommand) => this.onCommand(stream, cmd));
    stream.on('error', (err) => onEnd(err));
    stream.on('end', () => onEnd());
    stream.on('close', () => onEnd());
    this.write(stream, { settings: this.o.settings() });
  }

  private write(stream: Stream, cmd: TelemetryCommand): void {
    try {
      stream.write(cmd);
    } catch (err) {
      this.o.logger.debug({ err, endpoint: this.connection.key }, 'telemetry write failed');
    }
  }

  private onCommand(stream: Stream, cmd: TelemetryCommand): void {
    const c = cmd as TelemetryCommand & Record<string, unknown>;
    if (c.settings) {
      if (c.status && !isOk(c.status.code)) {
        this.failFirst(fromStatus(c.status, 'Telemetry'));
        return;
      }
      try {
        this.o.onSettings(c.settings);
      } catch (err) {
        this.o.logger.error({ err }, 'applying the broker settings failed');
      }
      if (this.first) {
        const f = this.first;
        this.first = undefined;
        f.cancel();
        this.established = true;
        f.resolve();
      }
      return;
    }
    const nonce = (x: unknown) => ((x as { nonce?: string } | undefined)?.nonce ?? '') as string;
    if (c.print_thread_stack_trace_command) {
      this.write(stream, {
        status: { code: Code.OK, message: 'OK' },
        thread_stack_trace: {
          nonce: nonce(c.print_thread_stack_trace_command),
          thread_stack_trace: `Node.js ${process.version} (pid ${process.pid}): one event loop, no thread stacks`,
        },
      } as TelemetryCommand);
      return;
    }
    if (c.verify_message_command) {
      this.write(stream, {
        status: {
          code: Code.NOT_IMPLEMENTED,
          message: 'message verification is not supported by this client',
        },
        verify_message_result: { nonce: nonce(c.verify_message_command) },
      });
      return;
    }
    if (c.reconnect_endpoints_command) {
      this.o.logger.info({ endpoint: this.connection.key }, 'broker asked to reconnect telemetry');
      stream.end();
      stream.cancel();
      return;
    }
    if (c.recover_orphaned_transaction_command) {
      if (this.o.onOrphanedTransaction) this.o.onOrphanedTransaction(c.recover_orphaned_transaction_command);
      else
        this.o.logger.warn(
          'ignoring an orphaned-transaction check: this client sends no transactional messages',
        );
      return;
    }
    if (c.status && !isOk(c.status.code)) {
      const err = fromStatus(c.status, 'Telemetry');
      if (this.first) this.failFirst(err);
      else this.o.logger.warn({ err, endpoint: this.connection.key }, 'telemetry error from the broker');
    }
  }

  private failFirst(err: unknown): void {
    const f = this.first;
    if (!f) return;
    this.first = undefined;
    f.cancel();
    f.reject(err);
  }

  private onStreamEnd(stream: Stream, err?: unknown): void {
    if (this.stream === stream) this.stream = undefined;
    try {
      stream.end();
    } catch {
      // already finished
    }
    if (this.first) {
      this.failFirst(
        err
          ? fromTransport(err, 'Telemetry')
          : new VelaClientError(
              Code.INTERNAL_ERROR,
              'the broker ended the telemetry stream before its Settings reply',
              {
                rpc: 'Telemetry',
              },
            ),
      );
      return;
    }
    if (this.closed || !this.established) return;
    this.o.logger.debug(
      { endpoint: this.connection.key, err },
      `telemetry stream ended; re-opening in ${this.o.reconnectDelayMs} ms`,
    );
    this.reopen?.();
    this.reopen = this.o.timers.timeout(() => {
      this.reopen = undefined;
      this.open();
    }, this.o.reconnectDelayMs);
  }

  /** End the stream (half-close, then cancel after a short grace). Never re-opens afterwards. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.reopen?.();
    this.reopen = undefined;
    this.failFirst(new VelaClientError(Code.PRECONDITION_FAILED, 'the client was closed during start-up'));
    const stream = this.stream;
    this.stream = undefined;
    if (!stream) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        resolve();
      };
      // Deliberately not a tracked timer: close() runs while the client's timers are being cleared.
      const t = setTimeout(() => {
        stream.cancel();
        resolve();
      }, CLOSE_GRACE_MS);
      stream.once('status', done);
      stream.once('error', done);
      stream.once('close', done);
      try {
        stream.end();
      } catch {
        done();
      }
    });
  }
}
