/** A minimal gRPC v2 client for benchmarks: sends, receives, acks, nacks with the shared codec. */
import * as grpc from '@grpc/grpc-js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { messagingServiceDefinition, fromMillis } from '../src/protocol/codec.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Any = any;

const CHILD = fileURLToPath(new URL('./broker-child.ts', import.meta.url));

/** Start the broker in a child process; resolves with its ports. */
export function startBrokerChild(
  dataDir: string,
  options: Record<string, unknown> = {},
): Promise<{ child: ChildProcess; grpcPort: number; httpPort: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, 'broker', dataDir, JSON.stringify(options)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    createInterface({ input: child.stdout! }).on('line', (l) => {
      const [word, g, h] = l.split(' ');
      if (word === 'READY') resolve({ child, grpcPort: Number(g), httpPort: Number(h) });
    });
    child.on('exit', (code) => reject(new Error(`broker child exited ${code}`)));
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export class BenchClient {
  private readonly c: Any;
  private readonly md = new grpc.Metadata();
  private seq = 0;

  constructor(port: number, clientId = `bench-${Math.random().toString(36).slice(2)}`) {
    const Ctor = grpc.makeGenericClientConstructor(messagingServiceDefinition(), 'MessagingService');
    this.c = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': 64 << 20,
    });
    this.md.set('x-mq-client-id', clientId);
  }

  call(method: string, req: Any): Promise<Any> {
    return new Promise((resolve, reject) =>
      this.c[method](req, this.md, (err: Error | null, res: Any) => (err ? reject(err) : resolve(res))),
    );
  }

  async send(topic: string, bodies: Buffer[], group?: (i: number) => string): Promise<void> {
    const r = await this.call('SendMessage', {
      messages: bodies.map((body, i) => ({
        topic: { name: topic },
        body,
        system_properties: {
          message_id: `BENCH${(this.seq++).toString(16).padStart(28, '0')}`,
          message_type: group ? 2 : 1,
          born_timestamp: fromMillis(Date.now()),
          born_host: 'bench',
          ...(group ? { message_group: group(i) } : {}),
        },
      })),
    });
    if (r.status.code !== 20000) throw new Error(`send failed: ${JSON.stringify(r.status)}`);
  }

  /** One receive; `push` = auto-renewed (server-chosen invisible time). */
  receive(
    group: string,
    topic: string,
    opts: { push?: boolean; invisibleMs?: number; pollMs?: number; batch?: number } = {},
  ): Promise<Any[]> {
    return new Promise((resolve, reject) => {
      const out: Any[] = [];
      const s = this.c.ReceiveMessage(
        {
          group: { name: group },
          message_queue: { topic: { name: topic }, id: -1 },
          filter_expression: { type: 1, expression: '*' },
          batch_size: opts.batch ?? 32,
          ...(opts.push
            ? { auto_renew: true }
            : { invisible_duration: fromMillis(opts.invisibleMs ?? 60_000) }),
          long_polling_timeout: fromMillis(opts.pollMs ?? 0),
        },
        this.md,
      );
      s.on('data', (f: Any) => f.message && out.push(f.message));
      s.on('error', reject);
      s.on('end', () => resolve(out));
    });
  }

  async ack(group: string, topic: string, messages: Any[]): Promise<void> {
    if (messages.length === 0) return;
    const r = await this.call('AckMessage', {
      group: { name: group },
      topic: { name: topic },
      entries: messages.map((m) => ({
        message_id: m.system_properties.message_id,
        receipt_handle: m.system_properties.receipt_handle,
      })),
    });
    if (r.status.code !== 20000 && r.status.code !== 30000)
      throw new Error(`ack failed: ${JSON.stringify(r.status)}`);
  }

  async nack(group: string, topic: string, m: Any): Promise<void> {
    await this.call('ChangeInvisibleDuration', {
      group: { name: group },
      topic: { name: topic },
      receipt_handle: m.system_properties.receipt_handle,
      invisible_duration: fromMillis(0),
      message_id: m.system_properties.message_id,
    });
  }

  /** One PullMessage: the messages and the offset to continue from. */
  pull(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
    batch: number,
  ): Promise<{ count: number; bytes: number; next: number }> {
    return new Promise((resolve, reject) => {
      let count = 0;
      let bytes = 0;
      let next = offset;
      const s = this.c.PullMessage(
        {
          group: { name: group },
          message_queue: { topic: { name: topic }, id: queueId },
          offset,
          batch_size: batch,
          filter_expression: { type: 1, expression: '*' },
          long_polling_timeout: fromMillis(0),
        },
        this.md,
      );
      s.on('data', (f: Any) => {
        if (f.message) {
          count++;
          bytes += f.message.body.length;
        } else if (f.next_offset !== undefined) next = f.next_offset;
      });
      s.on('error', reject);
      s.on('end', () => resolve({ count, bytes, next }));
    });
  }

  /** One long-polling PullMessage: the messages themselves and the offset to continue from. */
  pullMessages(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
    opts: { batch?: number; pollMs?: number } = {},
  ): Promise<{ messages: Any[]; next: number }> {
    return new Promise((resolve, reject) => {
      const messages: Any[] = [];
      let next = offset;
      const s = this.c.PullMessage(
        {
          group: { name: group },
          message_queue: { topic: { name: topic }, id: queueId },
          offset,
          batch_size: opts.batch ?? 256,
          filter_expression: { type: 1, expression: '*' },
          long_polling_timeout: fromMillis(opts.pollMs ?? 0),
        },
        this.md,
      );
      s.on('data', (f: Any) => {
        if (f.message) messages.push(f.message);
        else if (f.next_offset !== undefined) next = Number(f.next_offset);
      });
      s.on('error', reject);
      s.on('end', () => resolve({ messages, next }));
    });
  }

  close(): void {
    this.c.close();
  }
}

/** Admin HTTP helpers. */
export async function admin(httpPort: number, path: string, body?: unknown): Promise<Any> {
  const r = await fetch(
    `http://127.0.0.1:${httpPort}${path}`,
    body === undefined
      ? {}
      : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
  );
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return r.json();
}
