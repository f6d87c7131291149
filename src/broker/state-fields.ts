/**
 * JSON field codecs shared by the state journal's records (state-records.ts) and snapshots
 * (state-snapshots.ts): typed readers that refuse a value of the wrong shape as damage
 * (`STORE_CORRUPT_RECORD`), the positional tuple a delivery is stored as, and topic and group
 * settings, whose fields missing from older data take their defaults.
 */
import { VelaError } from '../common/errors.js';
import {
  groupDefaults,
  parseMessageType,
  topicDefaults,
  type GroupConfig,
  type TopicConfig,
} from './metadata.js';
import { parseRetryPolicy } from './retry-policy.js';
import { DeliveryState, Source, type Delivery } from './consume/delivery.js';
import type { DeliveryRef, FifoLow } from './state-records.js';

/** On disk, a delivery is a positional tuple (the journal's most frequent item). */
export type DeliveryTuple = [
  source: number,
  queueId: number,
  offset: number,
  nonce: number,
  attempt: number,
  deadline: number,
  autoRenew: 0 | 1,
  clientId: string,
  state: number,
  fifoKey: string,
];

export const tupleOf = (d: Delivery): DeliveryTuple => [
  d.source,
  d.queueId,
  d.offset,
  d.nonce,
  d.attempt,
  d.deadline,
  d.autoRenew ? 1 : 0,
  d.clientId,
  d.state,
  d.fifoKey,
];
export const lowsOf = (lows: readonly FifoLow[]) => lows.map((l) => [l.queueId, l.low]);

export function corrupt(what: string, why: string): VelaError {
  return new VelaError('STORE_CORRUPT_RECORD', `state ${what}: ${why}`);
}

export type Json = Record<string, unknown>;

export function obj(v: unknown, what: string): Json {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw corrupt(what, 'not an object');
  return v as Json;
}
export function num(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw corrupt(what, `${JSON.stringify(v)} is not a number`);
  return v;
}
export function int(v: unknown, what: string): number {
  const n = num(v, what);
  if (!Number.isInteger(n)) throw corrupt(what, `${n} is not an integer`);
  return n;
}
export function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw corrupt(what, `${JSON.stringify(v)} is not a string`);
  return v;
}
export function list(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw corrupt(what, 'not a list');
  return v;
}
/** An optional list: absent in records that had none. */
export function optList(v: unknown, what: string): unknown[] {
  return v === undefined ? [] : list(v, what);
}
export function source(v: unknown, what: string): Source {
  if (v !== Source.TOPIC && v !== Source.RETRY) throw corrupt(what, `unknown source ${JSON.stringify(v)}`);
  return v;
}

export function deliveryOf(v: unknown, what: string): Delivery {
  const t = list(v, what);
  const state = t[8];
  if (
    state !== DeliveryState.INFLIGHT &&
    state !== DeliveryState.WAITING_RETRY &&
    state !== DeliveryState.READY
  )
    throw corrupt(what, `unknown delivery state ${JSON.stringify(state)}`);
  return {
    source: source(t[0], what),
    queueId: int(t[1], what),
    offset: int(t[2], what),
    nonce: num(t[3], what),
    attempt: int(t[4], what),
    deadline: num(t[5], what),
    autoRenew: t[6] === 1,
    clientId: str(t[7], what),
    state,
    // Records from before FIFO consumption have no key.
    fifoKey: t[9] === undefined ? '' : str(t[9], what),
    historySeq: -1,
    armed: false,
  };
}

export function fifoLowsOf(v: unknown, what: string): FifoLow[] {
  return optList(v, what).map((x) => {
    const p = list(x, what);
    return { queueId: int(p[0], what), low: int(p[1], what) };
  });
}

export function refOf(v: unknown, what: string): DeliveryRef {
  const p = list(v, what);
  return { source: source(p[0], what), queueId: int(p[1], what), offset: int(p[2], what) };
}

/** A topic as stored: settings missing from older records take their defaults. */
export function decodeTopicConfig(v: unknown, what = 'topic'): TopicConfig {
  const o = obj(v, what);
  const name = str(o.name, what);
  const d = topicDefaults(name);
  try {
    return {
      name,
      readQueueNums: o.readQueueNums === undefined ? d.readQueueNums : int(o.readQueueNums, what),
      writeQueueNums: o.writeQueueNums === undefined ? d.writeQueueNums : int(o.writeQueueNums, what),
      perm: o.perm === undefined ? d.perm : int(o.perm, what),
      messageType:
        o.messageType === undefined ? d.messageType : parseMessageType(str(o.messageType, what), true),
      attributes: Object.fromEntries(
        Object.entries(o.attributes === undefined ? {} : obj(o.attributes, what)).map(([k, x]) => [
          k,
          str(x, what),
        ]),
      ),
    };
  } catch (err) {
    if (err instanceof VelaError && err.kind !== 'STORE_CORRUPT_RECORD') throw corrupt(what, err.message);
    throw err;
  }
}

/** A consumer group as stored: settings missing from older records take their defaults. */
export function decodeGroupConfig(v: unknown, what = 'group'): GroupConfig {
  const o = obj(v, what);
  const name = str(o.name, what);
  const d = groupDefaults(name);
  const bool = (x: unknown, dflt: boolean) => {
    if (x === undefined) return dflt;
    if (typeof x !== 'boolean') throw corrupt(what, `${JSON.stringify(x)} is not a boolean`);
    return x;
  };
  let retryPolicy = d.retryPolicy;
  if (o.retryPolicy !== undefined) {
    try {
      retryPolicy = parseRetryPolicy(o.retryPolicy);
    } catch (err) {
      throw corrupt(what, (err as Error).message);
    }
  }
  return {
    name,
    retryMaxTimes: o.retryMaxTimes === undefined ? d.retryMaxTimes : int(o.retryMaxTimes, what),
    consumeMessageOrderly: bool(o.consumeMessageOrderly, d.consumeMessageOrderly),
    consumeBroadcastEnable: bool(o.consumeBroadcastEnable, d.consumeBroadcastEnable),
    consumeEnable: bool(o.consumeEnable, d.consumeEnable),
    retryPolicy,
    fifoRetryIntervalMs:
      o.fifoRetryIntervalMs === undefined ? d.fifoRetryIntervalMs : num(o.fifoRetryIntervalMs, what),
  };
}
