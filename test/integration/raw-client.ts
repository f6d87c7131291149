/**
 * A raw gRPC v2 client for tests: every MessagingService call with our own codec, plus the ability to
 * send arbitrary bytes, so tests can speak to the broker exactly as any client could (or as a broken one).
 */
import * as grpc from '@grpc/grpc-js';
import { messagingServiceDefinition, SERVICE_NAME, fromMillis } from '../../src/protocol/codec.js';
import type { RunningBroker, StartBrokerOptions } from '../../src/server.js';
import { startTestBroker as startHarnessBroker } from '../support/harness.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

export class RawClient {
  private readonly client: Any;
  readonly metadata = new grpc.Metadata();

  constructor(
    readonly address: string,
    clientId = `test-${Math.random().toString(36).slice(2)}`,
    /** grpc-js channel options; `{ 'grpc.use_local_subchannel_pool': 1 }` gives a connection of its own. */
    options: grpc.ChannelOptions = {},
  ) {
    const Ctor = grpc.makeGenericClientConstructor(messagingServiceDefinition(), 'MessagingService');
    this.client = new Ctor(address, grpc.credentials.createInsecure(), options);
    if (clientId) this.metadata.set('x-mq-client-id', clientId);
  }

  unary(method: string, request: Any, metadata = this.metadata): Promise<Any> {
    return new Promise((resolve, reject) =>
      this.client[method](
        request,
        metadata,
        { deadline: Date.now() + 10_000 },
        (err: Error | null, res: Any) => (err ? reject(err) : resolve(res)),
      ),
    );
  }

  /** ReceiveMessage: all frames of the stream. */
  receive(request: Any, timeoutMs = 10_000): Promise<Any[]> {
    return new Promise((resolve, reject) => {
      const frames: Any[] = [];
      const call = this.client.ReceiveMessage(request, this.metadata, { deadline: Date.now() + timeoutMs });
      call.on('data', (f: Any) => frames.push(f));
      call.on('error', reject);
      call.on('end', () => resolve(frames));
    });
  }

  /** Messages of a receive, with the status frame. */
  async receiveMessages(
    group: string,
    topic: string,
    opts: { batch?: number; invisibleMs?: number; pollMs?: number; tag?: string } = {},
  ) {
    const frames = await this.receive({
      group: { name: group },
      message_queue: { topic: { name: topic }, id: 0 },
      filter_expression: { type: 1, expression: opts.tag ?? '*' },
      batch_size: opts.batch ?? 32,
      invisible_duration: fromMillis(opts.invisibleMs ?? 10_000),
      auto_renew: false,
      long_polling_timeout: fromMillis(opts.pollMs ?? 0),
    });
    const status = frames.find((f) => f.status)?.status;
    return { status, messages: frames.filter((f) => f.message).map((f) => f.message) };
  }

  send(topic: string, messages: Any[]): Promise<Any> {
    return this.unary('SendMessage', {
      messages: messages.map((m, i) => ({
        topic: { name: topic },
        body: m.body ?? Buffer.from(`body-${i}`),
        user_properties: m.properties ?? {},
        system_properties: {
          message_id: m.messageId ?? `MSG-${Date.now()}-${Math.random().toString(36).slice(2)}`,
          ...(m.tag !== undefined ? { tag: m.tag } : {}),
          keys: m.keys ?? [],
          message_type: m.messageType ?? 1,
          body_encoding: 1,
          born_timestamp: fromMillis(Date.now()),
          born_host: 'test-host',
          ...(m.messageGroup ? { message_group: m.messageGroup } : {}),
          ...(m.deliveryTimestamp ? { delivery_timestamp: fromMillis(m.deliveryTimestamp) } : {}),
        },
      })),
    });
  }

  ack(group: string, topic: string, handles: string[]): Promise<Any> {
    return this.unary('AckMessage', {
      group: { name: group },
      topic: { name: topic },
      entries: handles.map((h) => ({ message_id: 'x', receipt_handle: h })),
    });
  }

  changeInvisible(group: string, topic: string, handle: string, ms: number): Promise<Any> {
    return this.unary('ChangeInvisibleDuration', {
      group: { name: group },
      topic: { name: topic },
      receipt_handle: handle,
      invisible_duration: fromMillis(ms),
      message_id: 'x',
    });
  }

  /** Send raw bytes as the request of a unary method; resolve with the decoded response or the gRPC error. */
  rawUnary(method: string, bytes: Buffer): Promise<{ response?: Any; error?: grpc.ServiceError }> {
    const def = messagingServiceDefinition()[method]!;
    const c = new grpc.Client(this.address, grpc.credentials.createInsecure());
    return new Promise((resolve) => {
      c.makeUnaryRequest(
        `/${SERVICE_NAME}/${method}`,
        (b: Buffer) => b,
        (b: Buffer) => def.responseDeserialize(b),
        bytes,
        this.metadata,
        (err, res) => {
          c.close();
          resolve(err ? { error: err } : { response: res });
        },
      );
    });
  }

  /** Open a Telemetry session with these Settings; resolves with the first reply. */
  telemetry(settings: Any): Promise<{ reply: Any; end: () => void }> {
    return new Promise((resolve, reject) => {
      const call = this.client.Telemetry(this.metadata);
      call.once('data', (reply: Any) => resolve({ reply, end: () => call.end() }));
      call.on('error', (err: Error) => reject(err));
      call.write({ settings });
    });
  }

  /** Pull a queue from an offset: the status, messages and next offset. */
  async pull(
    group: string,
    topic: string,
    queueId: number,
    offset: number,
    opts: { batch?: number; pollMs?: number } = {},
  ) {
    const frames = await new Promise<Any[]>((resolve, reject) => {
      const out: Any[] = [];
      const call = this.client.PullMessage(
        {
          group: { name: group },
          message_queue: { topic: { name: topic }, id: queueId },
          offset,
          batch_size: opts.batch ?? 32,
          filter_expression: { type: 1, expression: '*' },
          long_polling_timeout: fromMillis(opts.pollMs ?? 0),
        },
        this.metadata,
        { deadline: Date.now() + 10_000 },
      );
      call.on('data', (f: Any) => out.push(f));
      call.on('error', reject);
      call.on('end', () => resolve(out));
    });
    return {
      status: frames.find((f) => f.status)?.status,
      messages: frames.filter((f) => f.message).map((f) => f.message),
      nextOffset: frames.find((f) => f.next_offset !== undefined)?.next_offset ?? 0,
    };
  }

  close(): void {
    this.client.close();
  }
}

/**
 * The broker most integration tests share (test/support/harness.ts), with a raw client connected to
 * it and a `close()` that tears both down.
 */
export async function startTestBroker(options: Partial<StartBrokerOptions> = {}): Promise<{
  running: RunningBroker;
  client: RawClient;
  close: () => Promise<void>;
}> {
  const b = await startHarnessBroker(options);
  const client = new RawClient(b.endpoints);
  return {
    running: b.running,
    client,
    close: async () => {
      client.close();
      await b.close();
    },
  };
}
