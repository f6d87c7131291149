/**
 * The wire codec for `apache.rocketmq.v2`, from Vela's own .proto files (src/protocol/proto), loaded
 * with protobufjs at start-up. protobufjs encodes and decodes straight to plain objects with
 * snake_case fields (about twice as fast as the proto-loader path grpc-js uses by default, measured
 * when the codec was chosen); 64-bit integers are plain numbers. Shared by the broker's edge and the SDK.
 */
import protobuf from 'protobufjs';
import { fileURLToPath } from 'node:url';

// int64 fields as plain numbers (offsets and timestamps stay far below 2^53).
(protobuf.util as unknown as { Long: unknown }).Long = undefined;
protobuf.configure();

/** Works from src/protocol (tsx) and dist/protocol (built): both sit two levels below the package root. */
const PROTO_DIR = fileURLToPath(new URL('../../src/protocol/proto/', import.meta.url));

function loadRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) =>
    target.startsWith('google/protobuf/') ? target : PROTO_DIR + target;
  root.loadSync(['apache/rocketmq/v2/service.proto'], { keepCase: true });
  root.resolveAll();
  return root;
}

export const root = loadRoot();
export const PACKAGE = 'apache.rocketmq.v2';
export const SERVICE_NAME = `${PACKAGE}.MessagingService`;

export function type(name: string): protobuf.Type {
  return root.lookupType(`${PACKAGE}.${name}`);
}

/** One RPC of MessagingService with its protobuf types. */
export interface MethodCodec {
  /** e.g. `SendMessage` */
  readonly name: string;
  /** e.g. `/apache.rocketmq.v2.MessagingService/SendMessage` */
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  readonly requestType: protobuf.Type;
  readonly responseType: protobuf.Type;
}

let methodTable: ReadonlyMap<string, MethodCodec> | undefined;

/** Every MessagingService RPC, by name. */
export function messagingMethods(): ReadonlyMap<string, MethodCodec> {
  if (methodTable) return methodTable;
  const service = root.lookupService(SERVICE_NAME);
  const out = new Map<string, MethodCodec>();
  for (const [name, m] of Object.entries(service.methods)) {
    m.resolve();
    out.set(name, {
      name,
      path: `/${SERVICE_NAME}/${name}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      requestType: m.resolvedRequestType!,
      responseType: m.resolvedResponseType!,
    });
  }
  return (methodTable = out);
}

/** Encode a plain object of `type`. */
export function encode(type: protobuf.Type, o: unknown): Uint8Array {
  return type.encode(o as protobuf.Message).finish();
}

/** Decode to a plain object; bytes that do not decode give a MALFORMED marker instead of throwing. */
export function decodeRequest(type: protobuf.Type, bytes: Uint8Array): object {
  try {
    return type.toObject(type.decode(bytes), DECODE_OPTIONS);
  } catch (err) {
    // Answered with a BAD_REQUEST status by the handler instead of a bare gRPC error.
    return { [MALFORMED]: (err as Error).message };
  }
}

/** Decode to a plain object (throws on bytes that do not decode). */
export function decode(type: protobuf.Type, bytes: Uint8Array): object {
  return type.toObject(type.decode(bytes), DECODE_OPTIONS);
}

/**
 * Decode to protobufjs's message object, without the conversion to a plain object (`decode` spends
 * more on that conversion than on decoding). Absent fields then read as their defaults instead of
 * being missing: null for message fields and `optional` scalars, 0 / '' for the others, {} and [] for
 * maps and repeated fields, an empty array for bytes. Hot paths whose readers accept either shape
 * only (the SDK's ReceiveMessage answers).
 */
export function decodeLean(type: protobuf.Type, bytes: Uint8Array): object {
  return type.decode(bytes);
}

/** A method in the shape `@grpc/grpc-js` takes (tests, benchmarks and tools use grpc-js clients). */
export interface GrpcJsMethodDefinition {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
  requestSerialize: (o: unknown) => Buffer;
  requestDeserialize: (b: Buffer) => unknown;
  responseSerialize: (o: unknown) => Buffer;
  responseDeserialize: (b: Buffer) => unknown;
  originalName: string;
}

/** MessagingService as a grpc-js service definition, with protobufjs (de)serializers. */
export function messagingServiceDefinition(): Record<string, GrpcJsMethodDefinition> {
  const def: Record<string, GrpcJsMethodDefinition> = {};
  for (const [name, m] of messagingMethods()) {
    const req = m.requestType;
    const res = m.responseType;
    def[name] = {
      path: m.path,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
      requestSerialize: (o: unknown) => Buffer.from(encode(req, o)),
      requestDeserialize: (b: Buffer) => decodeRequest(req, b),
      responseSerialize: (o: unknown) => Buffer.from(encode(res, o)),
      responseDeserialize: (b: Buffer) => decode(res, b),
      originalName: name,
    };
  }
  return def;
}

/** Marks a request whose bytes did not decode. */
export const MALFORMED = Symbol('malformed request');

export function malformedReason(request: unknown): string | undefined {
  return request && typeof request === 'object' && MALFORMED in request
    ? String((request as Record<symbol, unknown>)[MALFORMED])
    : undefined;
}

/** Decoded objects: enums as numbers, bytes as Buffer, absent optional fields absent. */
const DECODE_OPTIONS: protobuf.IConversionOptions = {
  enums: Number,
  bytes: Buffer,
  longs: Number,
  oneofs: true,
};

/** Timestamp / Duration helpers. */
export interface PbTimestamp {
  seconds?: number;
  nanos?: number;
}

export function toMillis(t: PbTimestamp | null | undefined): number | undefined {
  if (!t) return undefined;
  return (t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

export function fromMillis(ms: number): { seconds: number; nanos: number } {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: (ms - seconds * 1000) * 1e6 };
}
