/**
 * The state journal's two most frequent records — `deliveries` (every receive) and `settled` (every
 * ack batch) — in a compact binary form; every other record stays JSON (state-records.ts). A binary
 * record starts with byte 0x01, which no JSON record does (they start with `{`), so a journal may hold
 * both and older journals replay as they are. Encoding 256 deliveries as JSON cost ~0.45 µs each
 * plus the string's conversion to bytes; here it is a few field writes.
 *
 * Layout (little-endian): 0x01, kind (1 deliveries, 2 settled), group and topic (u16 byte length +
 * UTF-8), then
 * - deliveries: u32 n, n × (u8 source, u32 queue id, f64 next offset); u32 n, n × delivery (u8 source,
 *   u32 queue id, f64 offset, f64 nonce, u32 attempt, f64 deadline, u8 auto-renew, u8 state, client id
 *   and FIFO key as u16 length + UTF-8); FIFO lows;
 * - settled: u8 fifo, u32 n, n × (u8 source, u32 queue id, f64 offset); FIFO lows;
 * where FIFO lows are u32 n, n × (u32 queue id, f64 low). A value that does not fit (a string over
 * 65,535 bytes, a number the fields cannot hold exactly) leaves the record to JSON.
 */
import { DeliveryState, Source, type Delivery } from './consume/delivery.js';
import { corrupt } from './state-fields.js';
import type { DeliveryRef, FifoLow, QueueNext, StateRecord } from './state-records.js';

export const BINARY_RECORD = 0x01;
const KIND_DELIVERIES = 1;
const KIND_SETTLED = 2;

class Writer {
  buf: Buffer;
  at = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }
  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(bigger, 0, 0, this.at);
    this.buf = bigger;
  }
  u8(v: number): void {
    this.room(1);
    this.buf[this.at++] = v;
  }
  u32(v: number): void {
    if (!Number.isInteger(v) || v < 0 || v > 0xffff_ffff) throw NOT_BINARY;
    this.room(4);
    this.buf.writeUInt32LE(v, this.at);
    this.at += 4;
  }
  f64(v: number): void {
    this.room(8);
    this.buf.writeDoubleLE(v, this.at);
    this.at += 8;
  }
  str(s: string): void {
    if (s.length === 0) {
      this.room(2);
      this.buf[this.at++] = 0;
      this.buf[this.at++] = 0;
      return;
    }
    // A record repeats its strings (one client id for a whole receive): encode each run once.
    if (s !== this.last) {
      this.last = s;
      this.lastBytes = Buffer.from(s, 'utf8');
      if (this.lastBytes.length > 0xffff) throw NOT_BINARY;
    }
    const b = this.lastBytes;
    this.room(2 + b.length);
    this.buf.writeUInt16LE(b.length, this.at);
    this.buf.set(b, this.at + 2);
    this.at += 2 + b.length;
  }
  private last = '';
  private lastBytes: Buffer = Buffer.alloc(0);
}

class NotBinary extends Error {}
const NOT_BINARY = new NotBinary();

function writeLows(w: Writer, lows: readonly FifoLow[]): void {
  w.u32(lows.length);
  for (const l of lows) {
    w.u32(l.queueId);
    w.f64(l.low);
  }
}

/** The record in binary form, or null if it is not a kind (or a value) this form holds. */
export function encodeBinaryRecord(r: StateRecord): Buffer | null {
  if (r.kind !== 'deliveries' && r.kind !== 'settled') return null;
  try {
    if (r.kind === 'deliveries') {
      const w = new Writer(64 + r.nextOffsets.length * 13 + r.deliveries.length * 72);
      w.u8(BINARY_RECORD);
      w.u8(KIND_DELIVERIES);
      w.str(r.group);
      w.str(r.topic);
      w.u32(r.nextOffsets.length);
      for (const o of r.nextOffsets) {
        w.u8(o.source);
        w.u32(o.queueId);
        w.f64(o.next);
      }
      w.u32(r.deliveries.length);
      for (const d of r.deliveries) {
        w.u8(d.source);
        w.u32(d.queueId);
        w.f64(d.offset);
        w.f64(d.nonce);
        w.u32(d.attempt);
        w.f64(d.deadline);
        w.u8(d.autoRenew ? 1 : 0);
        w.u8(d.state);
        w.str(d.clientId);
        w.str(d.fifoKey);
      }
      writeLows(w, r.fifoLows);
      return w.buf.subarray(0, w.at);
    }
    const w = new Writer(64 + r.settled.length * 13);
    w.u8(BINARY_RECORD);
    w.u8(KIND_SETTLED);
    w.str(r.group);
    w.str(r.topic);
    w.u8(r.fifo ? 1 : 0);
    w.u32(r.settled.length);
    for (const d of r.settled) {
      w.u8(d.source);
      w.u32(d.queueId);
      w.f64(d.offset);
    }
    writeLows(w, r.fifoLows);
    return w.buf.subarray(0, w.at);
  } catch (err) {
    if (err === NOT_BINARY) return null;
    throw err;
  }
}

class Reader {
  at = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly what: string,
  ) {}
  private need(n: number): void {
    if (this.at + n > this.buf.length) throw corrupt(this.what, 'ends early');
  }
  u8(): number {
    this.need(1);
    return this.buf[this.at++]!;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.at);
    this.at += 4;
    return v;
  }
  private f64(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.at);
    this.at += 8;
    return v;
  }
  /** A stored integer (offsets, deadlines): anything else is damage. */
  int(): number {
    const v = this.f64();
    if (!Number.isSafeInteger(v)) throw corrupt(this.what, `${v} is not an integer`);
    return v;
  }
  num(): number {
    const v = this.f64();
    if (!Number.isFinite(v)) throw corrupt(this.what, `${v} is not a number`);
    return v;
  }
  str(): string {
    this.need(2);
    const n = this.buf.readUInt16LE(this.at);
    this.need(2 + n);
    const s = this.buf.toString('utf8', this.at + 2, this.at + 2 + n);
    this.at += 2 + n;
    return s;
  }
  source(): Source {
    const v = this.u8();
    if (v !== Source.TOPIC && v !== Source.RETRY) throw corrupt(this.what, `unknown source ${v}`);
    return v;
  }
  count(itemBytes: number): number {
    const n = this.u32();
    if (n * itemBytes > this.buf.length - this.at) throw corrupt(this.what, `${n} items cannot fit`);
    return n;
  }
  lows(): FifoLow[] {
    const n = this.count(12);
    const out: FifoLow[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = { queueId: this.u32(), low: this.int() };
    return out;
  }
  end(): void {
    if (this.at !== this.buf.length)
      throw corrupt(this.what, `${this.buf.length - this.at} bytes past its end`);
  }
}

/** A binary record (its first byte is BINARY_RECORD) back; damage throws STORE_CORRUPT_RECORD. */
export function decodeBinaryRecord(buf: Buffer): StateRecord {
  const r = new Reader(buf, 'binary record');
  if (r.u8() !== BINARY_RECORD) throw corrupt('binary record', 'not a binary record');
  const kind = r.u8();
  const group = r.str();
  const topic = r.str();
  if (kind === KIND_DELIVERIES) {
    const nextOffsets: QueueNext[] = new Array(r.count(13));
    for (let i = 0; i < nextOffsets.length; i++) {
      nextOffsets[i] = { source: r.source(), queueId: r.u32(), next: r.int() };
    }
    const deliveries: Delivery[] = new Array(r.count(40));
    for (let i = 0; i < deliveries.length; i++) {
      const source = r.source();
      const queueId = r.u32();
      const offset = r.int();
      const nonce = r.num();
      const attempt = r.u32();
      const deadline = r.num();
      const autoRenew = r.u8() === 1;
      const state = r.u8();
      if (
        state !== DeliveryState.INFLIGHT &&
        state !== DeliveryState.WAITING_RETRY &&
        state !== DeliveryState.READY
      ) {
        throw corrupt('binary record', `unknown delivery state ${state}`);
      }
      deliveries[i] = {
        source,
        queueId,
        offset,
        nonce,
        attempt,
        deadline,
        autoRenew,
        clientId: r.str(),
        state,
        fifoKey: r.str(),
        historySeq: -1,
        armed: false,
      };
    }
    const fifoLows = r.lows();
    r.end();
    return { kind: 'deliveries', group, topic, nextOffsets, deliveries, fifoLows };
  }
  if (kind === KIND_SETTLED) {
    const fifo = r.u8() === 1;
    const settled: DeliveryRef[] = new Array(r.count(13));
    for (let i = 0; i < settled.length; i++)
      settled[i] = { source: r.source(), queueId: r.u32(), offset: r.int() };
    const fifoLows = r.lows();
    r.end();
    return { kind: 'settled', group, topic, settled, fifo, fifoLows };
  }
  throw corrupt('binary record', `unknown kind ${kind}`);
}
