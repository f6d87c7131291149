/**
 * The records of the broker's state journal: one typed union, one encoder and one decoder (snapshots,
 * which replace the records when the journal is compacted, are in state-snapshots.ts). Parts of the
 * broker (topic and group registries, committed offsets, consumption) build and apply these types
 * only; the JSON they are stored as is this module's business.
 *
 * On disk a record is a small JSON object whose `k` names its kind, with short keys (the journal
 * takes one record per receive and per ack batch). Those shapes are the ones every data directory
 * written so far holds, so they stay readable as they are; fields added since (and group or topic
 * settings missing from old records) decode to their defaults. A record that does not have the shape
 * of its kind is damage and is refused (`STORE_CORRUPT_RECORD`) rather than half applied; a kind no
 * part of the broker knows decodes to `null` (the journal counts and reports those).
 */
import type { GroupConfig, TopicConfig } from './metadata.js';
import type { PolicyEntry, User } from './auth/model.js';
import type { Delivery, Source } from './consume/delivery.js';
import {
  decodeGroupConfig,
  decodeTopicConfig,
  deliveryOf,
  fifoLowsOf,
  int,
  list,
  lowsOf,
  num,
  obj,
  optList,
  refOf,
  source,
  str,
  tupleOf,
  type Json,
} from './state-fields.js';

/** The next offset to read on one queue of a topic or of its retry topic. */
export interface QueueNext {
  source: Source;
  queueId: number;
  next: number;
}

/** A delivery by its place: which queue of which source, which offset. */
export interface DeliveryRef {
  source: Source;
  queueId: number;
  offset: number;
}

/** FIFO: the first offset of a queue not yet settled. */
export interface FifoLow {
  queueId: number;
  low: number;
}

export interface CommittedOffsetRow {
  group: string;
  topic: string;
  queueId: number;
  offset: number;
  updatedAt: number;
}

export type StateRecord =
  // topic-registry.ts
  | { kind: 'topic'; config: TopicConfig }
  | { kind: 'topicDeleted'; name: string }
  // group-registry.ts
  | { kind: 'group'; config: GroupConfig }
  | { kind: 'groupDeleted'; name: string }
  // offsets.ts (pull consumers)
  | ({ kind: 'offsetCommitted' } & CommittedOffsetRow)
  | ({ kind: 'offsetReset' } & CommittedOffsetRow)
  | { kind: 'offsetsForgotten'; group?: string; topic?: string }
  // consume/ (push and simple consumers)
  | {
      kind: 'deliveries';
      group: string;
      topic: string;
      /** Read positions moved by a receive. */
      nextOffsets: QueueNext[];
      /** Deliveries created or changed (handed out, renewed, failed in place, due again). */
      deliveries: Delivery[];
      fifoLows: FifoLow[];
    }
  | {
      kind: 'settled';
      group: string;
      topic: string;
      settled: DeliveryRef[];
      /** FIFO deliveries among them: their offsets count as settled in their queue's window. */
      fifo: boolean;
      fifoLows: FifoLow[];
    }
  | { kind: 'consumeForgotten'; group: string; topic: string }
  | {
      /**
       * Retry topics moved from `%RETRY%<group>_<topic>` to `%RETRY%<group>+<topic>` (once, at the
       * first start of a version with the `+` form): per (group, topic), where reading its new retry
       * topic starts, and its in-flight deliveries of the old one (re-queued in the new one).
       */
      kind: 'retryTopicsRenamed';
      moved: {
        group: string;
        topic: string;
        retryNext: { queueId: number; next: number }[];
        dropped: DeliveryRef[];
      }[];
    }
  | {
      kind: 'queueReset';
      group: string;
      topic: string;
      queueId: number;
      offset: number;
      /** Where reading of each retry queue continues (everything waiting is dropped). */
      retryNext: { queueId: number; next: number }[];
    }
  // transaction/ (half messages by their offset in the half topic)
  | { kind: 'txCommitting'; offset: number }
  | { kind: 'txEnded'; offset: number; how: 'commit' | 'rollback' }
  | { kind: 'txChecked'; offset: number; checks: number; at: number }
  // auth/ (ACL 2.0)
  | { kind: 'aclUser'; user: User }
  | { kind: 'aclUserDeleted'; name: string }
  | { kind: 'acl'; user: string; entries: PolicyEntry[] }
  | { kind: 'aclDeleted'; user: string };

export type StateRecordKind = StateRecord['kind'];
export type StateRecordOf<K extends StateRecordKind> = Extract<StateRecord, { kind: K }>;

/** Kind → the `k` it has on disk. */
const WIRE_KIND: Record<StateRecordKind, string> = {
  topic: 'topic',
  topicDeleted: 'topic-',
  group: 'group',
  groupDeleted: 'group-',
  offsetCommitted: 'off',
  offsetReset: 'reset',
  offsetsForgotten: 'off-',
  deliveries: 'dlv',
  settled: 'done',
  consumeForgotten: 'forget',
  retryTopicsRenamed: 'retry+',
  queueReset: 'rst',
  txCommitting: 'txi',
  txEnded: 'txe',
  txChecked: 'txk',
  aclUser: 'user',
  aclUserDeleted: 'user-',
  acl: 'acl',
  aclDeleted: 'acl-',
};
const KIND_OF_WIRE = new Map(Object.entries(WIRE_KIND).map(([k, w]) => [w, k as StateRecordKind]));

// --- encoding ------------------------------------------------------------------------------------

/** The JSON text of a record. */
export function encodeStateRecord(r: StateRecord): string {
  const k = WIRE_KIND[r.kind];
  switch (r.kind) {
    case 'topic':
    case 'group':
      return JSON.stringify({ k, v: r.config });
    case 'topicDeleted':
    case 'groupDeleted':
      return JSON.stringify({ k, name: r.name });
    case 'offsetCommitted':
    case 'offsetReset':
      return JSON.stringify({ k, g: r.group, t: r.topic, q: r.queueId, o: r.offset, ts: r.updatedAt });
    case 'offsetsForgotten':
      return JSON.stringify({
        k,
        ...(r.group !== undefined ? { g: r.group } : {}),
        ...(r.topic !== undefined ? { t: r.topic } : {}),
      });
    case 'deliveries':
      return JSON.stringify({
        k,
        g: r.group,
        t: r.topic,
        ...(r.nextOffsets.length ? { offs: r.nextOffsets.map((o) => [o.source, o.queueId, o.next]) } : {}),
        d: r.deliveries.map(tupleOf),
        ...(r.fifoLows.length ? { lows: lowsOf(r.fifoLows) } : {}),
      });
    case 'settled':
      return JSON.stringify({
        k,
        g: r.group,
        t: r.topic,
        items: r.settled.map((d) => [d.source, d.queueId, d.offset]),
        ...(r.fifo ? { fifo: 1, lows: lowsOf(r.fifoLows) } : {}),
      });
    case 'consumeForgotten':
      return JSON.stringify({ k, g: r.group, t: r.topic });
    case 'retryTopicsRenamed':
      return JSON.stringify({
        k,
        m: r.moved.map((x) => [
          x.group,
          x.topic,
          x.retryNext.map((n) => [n.queueId, n.next]),
          x.dropped.map((d) => [d.source, d.queueId, d.offset]),
        ]),
      });
    case 'queueReset':
      return JSON.stringify({
        k,
        g: r.group,
        t: r.topic,
        q: r.queueId,
        o: r.offset,
        retry: r.retryNext.map((x) => [x.queueId, x.next]),
      });
    case 'txCommitting':
      return JSON.stringify({ k, o: r.offset });
    case 'txEnded':
      return JSON.stringify({ k, o: r.offset, r: r.how === 'commit' ? 'c' : 'r' });
    case 'txChecked':
      return JSON.stringify({ k, o: r.offset, n: r.checks, at: r.at });
    case 'aclUser':
      return JSON.stringify({ k, v: r.user });
    case 'aclUserDeleted':
      return JSON.stringify({ k, name: r.name });
    case 'acl':
      return JSON.stringify({ k, user: r.user, entries: r.entries });
    case 'aclDeleted':
      return JSON.stringify({ k, user: r.user });
  }
}

// --- decoding ------------------------------------------------------------------------------------

function offsetRow(o: Json, what: string): CommittedOffsetRow {
  return {
    group: str(o.g, what),
    topic: str(o.t, what),
    queueId: int(o.q, what),
    offset: int(o.o, what),
    updatedAt: num(o.ts, what),
  };
}

/** A record from its parsed JSON; `null` for a kind no part of the broker knows. */
export function decodeStateRecord(json: unknown): StateRecord | null {
  const o = obj(json, 'record');
  const kind = KIND_OF_WIRE.get(o.k as string);
  if (kind === undefined) return null;
  const what = `record "${String(o.k)}"`;
  switch (kind) {
    case 'topic':
      return { kind, config: decodeTopicConfig(o.v, what) };
    case 'group':
      return { kind, config: decodeGroupConfig(o.v, what) };
    case 'topicDeleted':
    case 'groupDeleted':
      return { kind, name: str(o.name, what) };
    case 'offsetCommitted':
    case 'offsetReset':
      return { kind, ...offsetRow(o, what) };
    case 'offsetsForgotten':
      return {
        kind,
        ...(o.g !== undefined ? { group: str(o.g, what) } : {}),
        ...(o.t !== undefined ? { topic: str(o.t, what) } : {}),
      };
    case 'deliveries':
      return {
        kind,
        group: str(o.g, what),
        topic: str(o.t, what),
        nextOffsets: optList(o.offs, what).map((x) => {
          const p = list(x, what);
          return { source: source(p[0], what), queueId: int(p[1], what), next: int(p[2], what) };
        }),
        deliveries: list(o.d, what).map((x) => deliveryOf(x, what)),
        fifoLows: fifoLowsOf(o.lows, what),
      };
    case 'settled':
      return {
        kind,
        group: str(o.g, what),
        topic: str(o.t, what),
        settled: list(o.items, what).map((x) => refOf(x, what)),
        fifo: o.fifo === 1 || o.fifo === true,
        fifoLows: fifoLowsOf(o.lows, what),
      };
    case 'consumeForgotten':
      return { kind, group: str(o.g, what), topic: str(o.t, what) };
    case 'retryTopicsRenamed':
      return {
        kind,
        moved: list(o.m, what).map((x) => {
          const [group, topic, next, dropped] = list(x, what);
          return {
            group: str(group, what),
            topic: str(topic, what),
            retryNext: list(next, what).map((n) => {
              const p = list(n, what);
              return { queueId: int(p[0], what), next: int(p[1], what) };
            }),
            dropped: list(dropped, what).map((d) => refOf(d, what)),
          };
        }),
      };
    case 'queueReset':
      return {
        kind,
        group: str(o.g, what),
        topic: str(o.t, what),
        queueId: int(o.q, what),
        offset: int(o.o, what),
        retryNext: optList(o.retry, what).map((x) => {
          const p = list(x, what);
          return { queueId: int(p[0], what), next: int(p[1], what) };
        }),
      };
    case 'txCommitting':
      return { kind, offset: int(o.o, what) };
    case 'txEnded':
      return { kind, offset: int(o.o, what), how: o.r === 'c' ? 'commit' : 'rollback' };
    case 'txChecked':
      return { kind, offset: int(o.o, what), checks: int(o.n, what), at: num(o.at, what) };
    case 'aclUser': {
      const u = obj(o.v, what);
      return {
        kind,
        user: {
          username: str(u.username, what),
          password: str(u.password, what),
          userType: str(u.userType, what) as User['userType'],
          userStatus: str(u.userStatus, what) as User['userStatus'],
        },
      };
    }
    case 'aclUserDeleted':
      return { kind, name: str(o.name, what) };
    case 'acl':
      return {
        kind,
        user: str(o.user, what),
        entries: list(o.entries, what).map((x) => {
          const e = obj(x, what);
          return {
            resource: str(e.resource, what),
            actions: list(e.actions, what).map((a) => str(a, what)) as PolicyEntry['actions'],
            sourceIps: optList(e.sourceIps, what).map((ip) => str(ip, what)),
            decision: str(e.decision, what) as PolicyEntry['decision'],
          };
        }),
      };
    case 'aclDeleted':
      return { kind, user: str(o.user, what) };
  }
}
