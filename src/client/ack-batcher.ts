/**
 * Coalesces acknowledgements: acks for the same broker, group and topic go out as one AckMessage with
 * many entries (at most `MAX_ACK_ENTRIES`). While no AckMessage of that key is in flight, what was issued
 * in one turn of the event loop goes at the end of the turn — with whatever else the connection writes
 * then (a push consumer's next ReceiveMessage), in one socket write, or else at the next `setImmediate`;
 * while one is in flight, acks gather until it is answered (or until `MAX_ACK_ENTRIES` are waiting), so
 * a busy consumer sends full batches rather than one per received batch. Each caller gets its own entry's outcome: resolved, or rejected with that
 * entry's typed error.
 */
import type { Resource } from '../protocol/wire-types.js';
import type { Connection } from './connection.js';
import type { AckAnswer, AckEntry } from './hot-codec.js';
import { VelaClientError, fromStatus, isOk } from './errors.js';
import type { Cancel, Timers } from '../common/timers.js';
import { Code } from '../common/codes.js';
import { KeptKeyMap } from '../common/kept-key-map.js';
import { SlotSet } from '../common/slot-set.js';

/**
 * Most entries per AckMessage (the broker takes up to `maxRequestEntries`, 1,024 by default). Each
 * call costs the SDK tens of µs in node:http2 alone, so a busy consumer's acks go in large batches.
 */
export const MAX_ACK_ENTRIES = 256;

/**
 * Called once with an entry's outcome — `undefined` when acknowledged, else why not — and the `arg`
 * the ack was given: one function can serve every ack, with no closure per message.
 */
export type AckDone<A = undefined> = (err: unknown, arg: A) => void;

interface Item {
  messageId: string;
  receiptHandle: string;
  done: AckDone<unknown>;
  arg: unknown;
}

interface Pending {
  conn: Connection;
  group: Resource;
  topic: Resource;
  items: Item[];
}

/** Sends one AckMessage; resolves with its answer, whatever its status. */
export type AckSender = (
  conn: Connection,
  group: Resource,
  topic: Resource,
  entries: readonly AckEntry[],
) => Promise<AckAnswer>;

export class AckBatcher {
  // Not Maps and a Set with deletes: batches come and go at the call rate, and replaced hash tables
  // would keep each one (its tickets, their messages) alive until a full collection (slot-set.ts,
  // kept-key-map.ts).
  private readonly pending = new KeptKeyMap<string, Pending>();
  private readonly inflight = new SlotSet<Promise<void>>();
  /** AckMessage calls in flight per key. */
  private readonly busy = new KeptKeyMap<string, number>();
  private scheduled: Cancel | undefined;

  constructor(
    private readonly timers: Timers,
    private readonly send: AckSender,
  ) {}

  ack(
    conn: Connection,
    group: Resource,
    topic: Resource,
    messageId: string,
    receiptHandle: string,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) =>
      this.ackThen(
        conn,
        group,
        topic,
        messageId,
        receiptHandle,
        (err) => (err === undefined ? resolve() : reject(err)),
        undefined,
      ),
    );
  }

  /**
   * `ack` without a promise: `done(err, arg)` is called once, never in this call. A push consumer acks
   * tens of thousands of messages a second; a promise and its reactions per message were most of what
   * its settling allocated, and then a callback made per message.
   */
  ackThen<A>(
    conn: Connection,
    group: Resource,
    topic: Resource,
    messageId: string,
    receiptHandle: string,
    done: AckDone<A>,
    arg: A,
  ): void {
    const key = this.keyOf(conn, group, topic);
    let p = this.pending.get(key);
    if (!p) this.pending.set(key, (p = { conn, group, topic, items: [] }));
    p.items.push({ messageId, receiptHandle, done: done as AckDone<unknown>, arg });
    if (p.items.length >= MAX_ACK_ENTRIES) this.flushKey(key);
    else if (!this.busy.has(key) && !this.scheduled) {
      const cancel = this.timers.immediate(() => this.flushIdle());
      this.scheduled = cancel;
      // Or earlier: when the connection writes what else this turn queued (a push consumer's next
      // receive), the acks go in the same socket write instead of one of their own.
      conn.beforeFlush?.(() => {
        if (this.scheduled !== cancel) return;
        cancel();
        this.flushIdle();
      });
    }
  }

  private last: { conn: Connection; group: Resource; topic: Resource; key: string } | undefined;

  /** The batch key; the messages of one receive share their objects, so the last key is reused. */
  private keyOf(conn: Connection, group: Resource, topic: Resource): string {
    const l = this.last;
    if (l && l.conn === conn && l.group === group && l.topic === topic) return l.key;
    const key = `${conn.key}\u0000${group.name}\u0000${topic.name}`;
    this.last = { conn, group, topic, key };
    return key;
  }

  /** Send everything pending now. */
  flush(): void {
    this.scheduled?.();
    this.scheduled = undefined;
    for (const key of this.pending.keys()) this.flushKey(key);
  }

  /** At the end of a turn: send what waits for keys with no AckMessage in flight (the others go when theirs is answered). */
  private flushIdle(): void {
    this.scheduled = undefined;
    for (const key of this.pending.keys()) if (!this.busy.has(key)) this.flushKey(key);
  }

  /** Flush, then wait for every AckMessage in flight. */
  async drain(): Promise<void> {
    this.flush();
    while (this.inflight.size > 0) await Promise.allSettled(this.inflight.values());
  }

  private flushKey(key: string): void {
    const p = this.pending.get(key);
    if (!p) return;
    this.pending.delete(key);
    const call = this.send(p.conn, p.group, p.topic, p.items).then(
      (res) => {
        const entries = res.entries;
        p.items.forEach((item, i) => {
          const st = entries.length === p.items.length ? (entries[i]!.status ?? res.status) : res.status;
          if (!st) {
            item.done(
              new VelaClientError(Code.INTERNAL_ERROR, 'AckMessage: the response carries no status', {
                rpc: 'AckMessage',
              }),
              item.arg,
            );
          } else if (isOk(st.code)) item.done(undefined, item.arg);
          else item.done(fromStatus(st, 'AckMessage'), item.arg);
        });
      },
      (err: unknown) => {
        for (const item of p.items)
          item.done(err ?? new VelaClientError(Code.INTERNAL_ERROR, 'AckMessage failed'), item.arg);
      },
    );
    const slot = this.inflight.add(call);
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
    void call.finally(() => {
      this.inflight.remove(slot);
      const n = this.busy.get(key)! - 1;
      if (n > 0) this.busy.set(key, n);
      else this.busy.delete(key);
      // What gathered meanwhile goes now.
      if (n === 0 && this.pending.has(key)) this.flushKey(key);
    });
  }
}
