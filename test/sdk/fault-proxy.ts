/**
 * A gRPC proxy for SDK tests: a MessagingService that forwards every call to a real broker, counts
 * SendMessage calls (and the message ids in each), and, on demand, answers a SendMessage with a fault
 * instead of forwarding it: a transport error, flow control, an internal error, or no answer at all;
 * it can also change a byte of every delivered body (`corruptBodies`), as a faulty network would.
 * The broker's routes name the endpoints the client dialled, so a client pointed at the proxy keeps
 * talking to the proxy.
 */
import * as grpc from '@grpc/grpc-js';
import { messagingServiceDefinition } from '../../src/protocol/codec.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

export type Fault = 'unavailable' | 'flow-control' | 'internal' | 'bad-request' | 'hang';

const FAULT_CODES: Record<'flow-control' | 'internal' | 'bad-request', number> = {
  'flow-control': 42900,
  internal: 50001,
  'bad-request': 40000,
};

export class FaultProxy {
  /** One entry per SendMessage call received: the message ids it carried and what it got. */
  readonly sends: { messageIds: string[]; fault: Fault | 'forwarded' }[] = [];
  /** Faults for the next SendMessage calls, consumed in order (empty: forward). */
  readonly faults: Fault[] = [];
  /** Faults for the next ReceiveMessage calls ('flow-control' or 'internal' answer that status). */
  readonly receiveFaults: ('flow-control' | 'internal')[] = [];
  /** ReceiveMessage calls received. */
  receiveCalls = 0;
  /** Flip a bit in the body of every message ReceiveMessage delivers. */
  corruptBodies = false;
  /** The digest type of every message ReceiveMessage delivered. */
  readonly digestTypes: number[] = [];
  /** The request headers of every SendMessage call. */
  readonly sendHeaders: Record<string, string>[] = [];
  private readonly upstream: grpc.Client;
  private readonly hung = new Set<grpc.ServerUnaryCall<Any, Any>>();

  private constructor(
    private readonly server: grpc.Server,
    readonly port: number,
    upstream: grpc.Client,
  ) {
    this.upstream = upstream;
  }

  get endpoints(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Messages per SendMessage call. */
  get batchSizes(): number[] {
    return this.sends.map((s) => s.messageIds.length);
  }

  static async start(target: string): Promise<FaultProxy> {
    const def = messagingServiceDefinition();
    const upstream = new grpc.Client(target, grpc.credentials.createInsecure());
    const server = new grpc.Server();
    const ref: { proxy?: FaultProxy } = {};
    const forwardMd = (md: grpc.Metadata) => {
      const out = new grpc.Metadata();
      for (const [k, v] of Object.entries(md.getMap())) {
        if (k.startsWith('x-mq-') || k.startsWith('x-vela-') || k === 'authorization')
          out.set(k, v as string);
      }
      return out;
    };
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [name, m] of Object.entries(def)) {
      if (!m.requestStream && !m.responseStream) {
        impl[name] = (call: grpc.ServerUnaryCall<Any, Any>, cb: grpc.sendUnaryData<Any>) => {
          if (name === 'SendMessage' && ref.proxy!.intercept(call, cb)) return;
          const deadline = call.getDeadline();
          upstream.makeUnaryRequest(
            m.path,
            m.requestSerialize,
            m.responseDeserialize,
            call.request,
            forwardMd(call.metadata),
            { deadline: deadline instanceof Date || typeof deadline === 'number' ? deadline : Infinity },
            (err, res) => (err ? cb(err) : cb(null, res)),
          );
        };
      } else if (!m.requestStream && m.responseStream) {
        impl[name] = (call: grpc.ServerWritableStream<Any, Any>) => {
          if (name === 'ReceiveMessage') {
            ref.proxy!.receiveCalls++;
            const fault = ref.proxy!.receiveFaults.shift();
            if (fault) {
              call.write({ status: { code: FAULT_CODES[fault], message: `injected ${fault}` } });
              call.end();
              return;
            }
          }
          const up = upstream.makeServerStreamRequest(
            m.path,
            m.requestSerialize,
            m.responseDeserialize,
            call.request,
            forwardMd(call.metadata),
            { deadline: call.getDeadline() },
          );
          call.on('cancelled', () => up.cancel());
          up.on('data', (f) => {
            const message = name === 'ReceiveMessage' ? f.message : undefined;
            if (message) {
              ref.proxy!.digestTypes.push(message.system_properties?.body_digest?.type);
              if (ref.proxy!.corruptBodies && message.body?.length) {
                message.body = Buffer.from(message.body);
                message.body[0] ^= 1;
              }
            }
            call.write(f);
          });
          up.on('error', (err: grpc.ServiceError) => call.destroy(err));
          up.on('end', () => call.end());
        };
      } else {
        impl[name] = (call: grpc.ServerDuplexStream<Any, Any>) => {
          const up = upstream.makeBidiStreamRequest(
            m.path,
            m.requestSerialize,
            m.responseDeserialize,
            forwardMd(call.metadata),
          );
          call.on('data', (c) => up.write(c));
          call.on('end', () => up.end());
          call.on('cancelled', () => up.cancel());
          call.on('error', () => up.cancel());
          up.on('data', (c) => call.write(c));
          up.on('error', () => call.end());
          up.on('end', () => call.end());
        };
      }
    }
    server.addService(def, impl);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    ref.proxy = new FaultProxy(server, port, upstream);
    return ref.proxy;
  }

  /** Apply the next fault to a SendMessage; false to forward it. */
  private intercept(call: grpc.ServerUnaryCall<Any, Any>, cb: grpc.sendUnaryData<Any>): boolean {
    const messageIds: string[] = (call.request.messages ?? []).map(
      (m: Any) => m.system_properties?.message_id,
    );
    const fault = this.faults.shift();
    this.sendHeaders.push(call.metadata.getMap() as Record<string, string>);
    this.sends.push({ messageIds, fault: fault ?? 'forwarded' });
    if (!fault) return false;
    if (fault === 'unavailable') {
      cb({ code: grpc.status.UNAVAILABLE, details: 'injected: connection lost' });
    } else if (fault === 'hang') {
      this.hung.add(call);
      call.on('cancelled', () => this.hung.delete(call));
    } else {
      const status = { code: FAULT_CODES[fault], message: `injected ${fault}` };
      cb(null, { status, entries: messageIds.map((id) => ({ status, message_id: id })) });
    }
    return true;
  }

  async close(): Promise<void> {
    this.server.forceShutdown();
    this.upstream.close();
  }
}
