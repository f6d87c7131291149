/**
 * Bounds what decoding a request can cost before protobufjs builds a single object. A few bytes of
 * protobuf can stand for a great many objects (an empty `Message` is 2 bytes, so 4 MiB of them decode
 * to two million objects and seconds of event-loop time), so the wire bytes are walked first, guided
 * by the message's schema, counting every value decoding would create and the entries of the one
 * repeated field that makes a request a batch (SendMessage's messages, AckMessage's entries). The walk
 * skips over string and bytes contents, so it costs a small fraction of the decoding it protects.
 */
import type protobuf from 'protobufjs';
import { LimitError } from './transport/grpc-wire.js';

export interface RequestLimits {
  /** Most values (fields, list elements, map entries) one request may decode to. */
  readonly maxValues: number;
  /** Most entries in the batch field (`entriesField`). */
  readonly maxEntries: number;
}

type FieldSpec =
  | { kind: 'message'; type: protobuf.Type }
  | { kind: 'map'; entry: Map<number, FieldSpec> | undefined }
  | { kind: 'packed' };

const specs = new WeakMap<protobuf.Type, Map<number, FieldSpec>>();

function specOf(type: protobuf.Type): Map<number, FieldSpec> {
  let s = specs.get(type);
  if (s) return s;
  s = new Map();
  for (const f of type.fieldsArray) {
    f.resolve();
    const resolved = f.resolvedType;
    if (f.map) {
      // A map entry is a message of key (1) and value (2).
      const entry = isType(resolved)
        ? new Map<number, FieldSpec>([[2, { kind: 'message', type: resolved }]])
        : undefined;
      s.set(f.id, { kind: 'map', entry });
    } else if (isType(resolved)) {
      s.set(f.id, { kind: 'message', type: resolved });
    } else if (f.repeated) {
      s.set(f.id, { kind: 'packed' });
    }
  }
  specs.set(type, s);
  return s;
}

function isType(t: unknown): t is protobuf.Type {
  return !!t && typeof t === 'object' && 'fieldsArray' in t;
}

const MAX_DEPTH = 32;

class Walk {
  values: number;
  constructor(
    readonly buf: Uint8Array,
    readonly limits: RequestLimits,
  ) {
    this.values = limits.maxValues;
  }

  charge(n: number): void {
    this.values -= n;
    if (this.values < 0) {
      throw new LimitError(
        'message-too-large',
        `the request decodes to more than ${this.limits.maxValues} values`,
      );
    }
  }
}

/**
 * Throws a LimitError: `message-too-large` when the request would decode to too much, `malformed`
 * when its bytes are not protobuf of this type's shape (truncated, unknown wire type).
 */
export function guardRequest(
  type: protobuf.Type,
  bytes: Uint8Array,
  limits: RequestLimits,
  entriesField?: number,
): void {
  walk(new Walk(bytes, limits), specOf(type), 0, bytes.length, 0, entriesField);
}

function malformed(why: string): LimitError {
  return new LimitError('malformed', why);
}

function walk(
  w: Walk,
  spec: Map<number, FieldSpec> | undefined,
  start: number,
  end: number,
  depth: number,
  entriesField?: number,
): void {
  if (depth > MAX_DEPTH) throw malformed('messages nested too deeply');
  const buf = w.buf;
  let entries = 0;
  let pos = start;
  while (pos < end) {
    // The tag: a varint of at most 5 bytes.
    let tag = 0;
    let mul = 1;
    for (let i = 0; ; i++) {
      if (pos >= end || i === 5) throw malformed('truncated or invalid field tag');
      const b = buf[pos++]!;
      tag += (b & 0x7f) * mul;
      mul *= 128;
      if (b < 0x80) break;
    }
    w.charge(1);
    const id = Math.floor(tag / 8);
    switch (tag % 8) {
      case 0: // varint
        for (let i = 0; ; i++) {
          if (pos >= end || i === 10) throw malformed('truncated or invalid varint');
          if (buf[pos++]! < 0x80) break;
        }
        break;
      case 1: // fixed64
        pos += 8;
        break;
      case 5: // fixed32
        pos += 4;
        break;
      case 2: {
        let len = 0;
        mul = 1;
        for (let i = 0; ; i++) {
          if (pos >= end || i === 5) throw malformed('truncated or invalid length');
          const b = buf[pos++]!;
          len += (b & 0x7f) * mul;
          mul *= 128;
          if (b < 0x80) break;
        }
        if (pos + len > end) throw malformed('a field runs past the end of its message');
        if (id === entriesField && ++entries > w.limits.maxEntries) {
          throw new LimitError(
            'message-too-large',
            `the request carries more than ${w.limits.maxEntries} entries`,
          );
        }
        const f = spec?.get(id);
        if (f?.kind === 'message') walk(w, specOf(f.type), pos, pos + len, depth + 1);
        else if (f?.kind === 'map') walk(w, f.entry, pos, pos + len, depth + 1);
        else if (f?.kind === 'packed') w.charge(len); // each packed element is at least one byte
        pos += len;
        break;
      }
      default:
        throw malformed(`unsupported wire type ${tag % 8}`);
    }
    if (pos > end) throw malformed('a field runs past the end of its message');
  }
}
