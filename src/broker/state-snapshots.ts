/**
 * Snapshots of the broker's state (what replaces the journal when it is compacted), per part: their
 * typed form and their JSON, one encoder and one decoder each. The JSON is the shape every data
 * directory written so far holds.
 */
import type { GroupConfig, TopicConfig } from './metadata.js';
import { Source, type Delivery } from './consume/delivery.js';
import {
  corrupt,
  decodeGroupConfig,
  decodeTopicConfig,
  deliveryOf,
  int,
  list,
  num,
  obj,
  optList,
  str,
  tupleOf,
  type DeliveryTuple,
} from './state-fields.js';
import type { CommittedOffsetRow, QueueNext } from './state-records.js';

export function encodeTopicsSnapshot(topics: readonly TopicConfig[]): unknown {
  return topics;
}
export function decodeTopicsSnapshot(data: unknown): TopicConfig[] {
  return list(data, 'topics snapshot').map((t) => decodeTopicConfig(t, 'topics snapshot'));
}

export function encodeGroupsSnapshot(groups: readonly GroupConfig[]): unknown {
  return groups;
}
export function decodeGroupsSnapshot(data: unknown): GroupConfig[] {
  return list(data, 'groups snapshot').map((g) => decodeGroupConfig(g, 'groups snapshot'));
}

export interface OffsetsSnapshot {
  offsets: CommittedOffsetRow[];
  /** Resets not yet seen by a pull. */
  resets: { group: string; topic: string; queueId: number; offset: number }[];
}

const offsetKey = (g: string, t: string, q: number) => `${g}\u0000${t}\u0000${q}`;
function splitOffsetKey(k: unknown, what: string): { group: string; topic: string; queueId: number } {
  const [g, t, q, ...rest] = str(k, what).split('\u0000');
  if (g === undefined || t === undefined || q === undefined || rest.length > 0)
    throw corrupt(what, `bad offset key ${JSON.stringify(k)}`);
  return { group: g, topic: t, queueId: int(Number(q), what) };
}

export function encodeOffsetsSnapshot(s: OffsetsSnapshot): unknown {
  return {
    offsets: s.offsets.map((r) => [
      offsetKey(r.group, r.topic, r.queueId),
      { offset: r.offset, updatedAt: r.updatedAt },
    ]),
    resets: s.resets.map((r) => [offsetKey(r.group, r.topic, r.queueId), r.offset]),
  };
}
export function decodeOffsetsSnapshot(data: unknown): OffsetsSnapshot {
  const what = 'offsets snapshot';
  const o = obj(data, what);
  return {
    offsets: list(o.offsets, what).map((x) => {
      const [k, v] = list(x, what);
      const r = obj(v, what);
      return { ...splitOffsetKey(k, what), offset: int(r.offset, what), updatedAt: num(r.updatedAt, what) };
    }),
    resets: optList(o.resets, what).map((x) => {
      const [k, v] = list(x, what);
      return { ...splitOffsetKey(k, what), offset: int(v, what) };
    }),
  };
}

export interface ConsumeSnapshotEntry {
  group: string;
  topic: string;
  nextOffsets: QueueNext[];
  deliveries: Delivery[];
  fifo: { queueId: number; low: number; settled: number[] }[];
}

/** Snapshots name a read position `t:<queue>` (topic) or `r:<queue>` (retry topic). */
const positionName = (o: QueueNext) => `${o.source === Source.TOPIC ? 't' : 'r'}:${o.queueId}`;

export interface ConsumeSnapshot {
  /** Retry topics have the `+` form (snapshots of earlier versions are a bare list: the `_` form). */
  retryTopicsRenamed: boolean;
  entries: ConsumeSnapshotEntry[];
}

export function encodeConsumeSnapshot(snapshot: ConsumeSnapshot): unknown {
  const entries = snapshot.entries.map((e) => ({
    g: e.group,
    t: e.topic,
    offs: e.nextOffsets.map((o) => [positionName(o), o.next]),
    d: e.deliveries.map(tupleOf),
    fifo: e.fifo.map((f) => [f.queueId, f.low, f.settled]),
  }));
  return snapshot.retryTopicsRenamed ? { retry: '+', states: entries } : entries;
}
/** Deliveries per item of a walked consume snapshot: each item is serialized in one piece. */
export const DELIVERIES_PER_ITEM = 1024;

/** A (group, topic) as a walked snapshot reads it: its deliveries are read lazily. */
export interface LiveConsumeEntry {
  group: string;
  topic: string;
  nextOffsets: QueueNext[];
  deliveries: Iterable<Delivery>;
  fifo: { queueId: number; low: number; settled: number[] }[];
}

/**
 * The consume snapshot as items, for a walk over the live state (`snapshotItems`): first a header,
 * `{retry: '+' | '_'}`, then per (group, topic) an item with its read positions, FIFO windows and
 * first deliveries, followed by items carrying `DELIVERIES_PER_ITEM` more deliveries each. So no item
 * (and no piece of work between two turns of the event loop) grows with the number in flight.
 */
export function* consumeSnapshotItems(
  retryTopicsRenamed: boolean,
  entries: Iterable<LiveConsumeEntry>,
): Generator<unknown> {
  yield { retry: retryTopicsRenamed ? '+' : '_' };
  for (const e of entries) {
    let first = true;
    let d: DeliveryTuple[] = [];
    const item = () => {
      const out = first
        ? {
            g: e.group,
            t: e.topic,
            offs: e.nextOffsets.map((o) => [positionName(o), o.next]),
            d,
            fifo: e.fifo.map((f) => [f.queueId, f.low, f.settled]),
          }
        : { g: e.group, t: e.topic, d };
      first = false;
      d = [];
      return out;
    };
    for (const delivery of e.deliveries) {
      d.push(tupleOf(delivery));
      if (d.length >= DELIVERIES_PER_ITEM) yield item();
    }
    if (first || d.length > 0) yield item();
  }
}

/** A walked snapshot: an array whose first element is the header (older arrays hold entries only). */
function isWalked(data: unknown): data is unknown[] {
  if (!Array.isArray(data) || data.length === 0) return false;
  const head = data[0] as { retry?: unknown; g?: unknown } | null;
  return typeof head === 'object' && head !== null && 'retry' in head && !('g' in head);
}

function decodeWalkedConsumeSnapshot(data: unknown[]): ConsumeSnapshot {
  const what = 'consume snapshot';
  const retry = obj(data[0], what).retry;
  if (retry !== '+' && retry !== '_') throw corrupt(what, 'unknown retry topic form');
  const byKey = new Map<string, ConsumeSnapshotEntry>();
  for (let i = 1; i < data.length; i++) {
    const e = obj(data[i], what);
    const group = str(e.g, what);
    const topic = str(e.t, what);
    const key = `${group}\u0000${topic}`;
    let entry = byKey.get(key);
    if (!entry) byKey.set(key, (entry = { group, topic, nextOffsets: [], deliveries: [], fifo: [] }));
    if (e.offs !== undefined) entry.nextOffsets = decodePositions(e.offs, what);
    if (e.fifo !== undefined) entry.fifo = decodeFifo(e.fifo, what);
    for (const t of list(e.d, what)) entry.deliveries.push(deliveryOf(t, what));
  }
  return { retryTopicsRenamed: retry === '+', entries: [...byKey.values()] };
}

function decodePositions(offs: unknown, what: string): QueueNext[] {
  return list(offs, what).map((p) => {
    const [name, next] = list(p, what);
    const m = /^([tr]):(\d+)$/.exec(str(name, what));
    if (!m) throw corrupt(what, `bad read position ${JSON.stringify(name)}`);
    return {
      source: m[1] === 't' ? Source.TOPIC : Source.RETRY,
      queueId: Number(m[2]),
      next: int(next, what),
    };
  });
}

function decodeFifo(fifo: unknown, what: string): ConsumeSnapshotEntry['fifo'] {
  return optList(fifo, what).map((f) => {
    const [q, low, settled] = list(f, what);
    return {
      queueId: int(q, what),
      low: int(low, what),
      settled: list(settled, what).map((s) => int(s, what)),
    };
  });
}

export function decodeConsumeSnapshot(data: unknown): ConsumeSnapshot {
  const what = 'consume snapshot';
  if (isWalked(data)) return decodeWalkedConsumeSnapshot(data);
  const renamed = !Array.isArray(data);
  const states = renamed ? obj(data, what).states : data;
  if (renamed && obj(data, what).retry !== '+') throw corrupt(what, 'unknown retry topic form');
  return {
    retryTopicsRenamed: renamed,
    entries: list(states, what).map((x) => {
      const e = obj(x, what);
      return {
        group: str(e.g, what),
        topic: str(e.t, what),
        nextOffsets: decodePositions(e.offs, what),
        deliveries: list(e.d, what).map((t) => deliveryOf(t, what)),
        fifo: decodeFifo(e.fifo, what),
      };
    }),
  };
}
