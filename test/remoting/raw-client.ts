/**
 * A minimal Remoting client for tests: raw frames over TCP, responses matched by opaque, and the
 * broker's own requests (NOTIFY_CONSUMER_IDS_CHANGED) collected.
 */
import { connect, type Socket } from 'node:net';
import {
  decodeFrame,
  encodeBinaryFrame,
  encodeFrame,
  Flag,
  FrameDecoder,
  isResponse,
  type RemotingCommand,
} from '../../src/remoting/frame.js';

export class RawRemotingClient {
  private opaque = 0;
  private readonly pending = new Map<number, (c: RemotingCommand) => void>();
  readonly pushed: RemotingCommand[] = [];
  /** Every response that arrived, by opaque. */
  readonly answers = new Map<number, RemotingCommand>();
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    const decoder = new FrameDecoder();
    socket.on('data', (chunk: Buffer) => {
      for (const f of decoder.push(chunk)) {
        const c = decodeFrame(f);
        if (isResponse(c)) {
          this.answers.set(c.opaque, c);
          this.pending.get(c.opaque)?.(c);
          this.pending.delete(c.opaque);
        } else this.pushed.push(c);
      }
    });
    this.closed = new Promise((r) => socket.once('close', () => r()));
    socket.on('error', () => {});
  }

  static connect(port: number): Promise<RawRemotingClient> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(new RawRemotingClient(s)));
      s.once('error', reject);
    });
  }

  /** Send a request and wait for its response (or fail after `timeoutMs`). */
  request(
    code: number,
    extFields: Record<string, string | number> = {},
    body?: Buffer,
    opts: { binary?: boolean; timeoutMs?: number; version?: number } = {},
  ): Promise<RemotingCommand> {
    const opaque = ++this.opaque;
    const cmd = this.command(code, extFields, body, opaque, 0, opts.version);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(opaque);
        reject(new Error(`no response to code ${code} within ${opts.timeoutMs ?? 5000} ms`));
      }, opts.timeoutMs ?? 5000);
      this.pending.set(opaque, (c) => {
        clearTimeout(timer);
        resolve(c);
      });
      this.socket.write(opts.binary ? encodeBinaryFrame(cmd) : encodeFrame(cmd));
    });
  }

  oneway(code: number, extFields: Record<string, string | number> = {}, body?: Buffer): number {
    const opaque = ++this.opaque;
    this.socket.write(encodeFrame(this.command(code, extFields, body, opaque, Flag.ONEWAY)));
    return opaque;
  }

  /** Send a request without waiting for (or tracking) its response. */
  fire(code: number, extFields: Record<string, string | number> = {}): void {
    this.socket.write(encodeFrame(this.command(code, extFields, undefined, ++this.opaque, 0)));
  }

  /** Answer a request the broker sent this client. */
  respond(opaque: number, code: number, body?: Buffer, remark?: string): void {
    const cmd: RemotingCommand = {
      code,
      language: 'JAVA',
      version: 475,
      opaque,
      flag: Flag.RESPONSE,
      extFields: {},
      ...(remark !== undefined ? { remark } : {}),
      ...(body ? { body } : {}),
    };
    this.socket.write(encodeFrame(cmd));
  }

  /** Write raw bytes (malformed frames). */
  writeRaw(b: Buffer): void {
    this.socket.write(b);
  }

  /** Whether a response with this opaque arrived (for one-way checks). */
  waiting(opaque: number): boolean {
    return this.pending.has(opaque);
  }

  private command(
    code: number,
    ext: Record<string, string | number>,
    body: Buffer | undefined,
    opaque: number,
    flag: number,
    version = 475,
  ): RemotingCommand {
    const extFields: Record<string, string> = {};
    for (const [k, v] of Object.entries(ext)) extFields[k] = String(v);
    return { code, language: 'JAVA', version, opaque, flag, extFields, ...(body ? { body } : {}) };
  }

  close(): Promise<void> {
    this.socket.destroy();
    return this.closed;
  }
}
