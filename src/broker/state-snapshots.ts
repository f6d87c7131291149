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
export function decodeConsumeSnapshot(data: unknown): ConsumeSnapshot {
  const what = 'consume snapshot';
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
        nextOffsets: list(e.offs, what).map((p) => {
          const [name, next] = list(p, what);
          const m = /^([tr]):(\d+)$/.exec(str(name, what));
          if (!m) throw corrupt(what, `bad read position ${JSON.stringify(name)}`);
          return {
            source: m[1] === 't' ? Source.TOPIC : Source.RETRY,
            queueId: Number(m[2]),
            next: int(next, what),
          };
        }),
        deliveries: list(e.d, what).map((t) => deliveryOf(t, what)),
        fifo: optList(e.fifo, what).map((f) => {
          const [q, low, settled] = list(f, what);
          return {
            queueId: int(q, what),
            low: int(low, what),
            settled: list(settled, what).map((s) => int(s, what)),
          };
        }),
      };
    }),
  };
}
