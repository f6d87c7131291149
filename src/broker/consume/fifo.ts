/**
 * Ordered (FIFO) consumption state of one queue for one consumer group.
 *
 * Messages are read in storage order. A message whose key (its message group within the queue, or
 * the whole queue for messages without a group) has an earlier message in flight, waiting for retry
 * or itself held is held back, not skipped: it stays in `held`, in order, behind the earlier ones,
 * until its key is free and it is the first held message of its key. Other keys keep flowing. Reading stops `FIFO_WINDOW` held messages ahead, or `FIFO_SPAN` offsets past the oldest
 * unsettled one, so memory is bounded whatever the backlog.
 *
 * `low` is the first offset not yet settled (acked, dead-lettered or filtered out); settled offsets
 * above it are remembered in `settled` so that after a restart everything in [low, scan) that is
 * neither settled nor in flight can be held again.
 */
import type { MessageStore, StoredMessage } from '../../store/index.js';

export const FIFO_WINDOW = 4096;
/** How far past the oldest unsettled message other keys may flow (bounds `settled`). */
export const FIFO_SPAN = 65_536;

export interface HeldMessage {
  offset: number;
  key: string;
}

export class FifoQueue {
  /** Held messages, in storage order. */
  private list: HeldMessage[] = [];
  /** Held messages per key. */
  private readonly perKey = new Map<string, number>();
  readonly settled = new Set<number>();
  low: number;

  constructor(low: number) {
    this.low = low;
  }

  get held(): readonly HeldMessage[] {
    return this.list;
  }

  /** Hold a message back (offsets ascending). */
  hold(e: HeldMessage): void {
    this.list.push(e);
    this.perKey.set(e.key, (this.perKey.get(e.key) ?? 0) + 1);
  }

  /** Whether messages of `key` are held: a later one of the key must wait behind them. */
  holds(key: string): boolean {
    return this.perKey.has(key);
  }

  /**
   * Release, in storage order, the first held message of each key that `isFree` says may go, at most
   * `max` of them. A key's later held messages stay behind its first.
   */
  release(max: number, isFree: (key: string) => boolean): HeldMessage[] {
    const chosen: HeldMessage[] = [];
    if (max <= 0 || this.list.length === 0) return chosen;
    const seen = new Set<string>();
    const rest: HeldMessage[] = [];
    for (const e of this.list) {
      if (chosen.length < max && !seen.has(e.key) && isFree(e.key)) chosen.push(e);
      else rest.push(e);
      seen.add(e.key);
    }
    if (chosen.length === 0) return chosen;
    this.list = rest;
    for (const e of chosen) {
      const n = this.perKey.get(e.key)! - 1;
      if (n === 0) this.perKey.delete(e.key);
      else this.perKey.set(e.key, n);
    }
    return chosen;
  }

  /** Replace what is held (rebuild after a restart). */
  resetHeld(held: readonly HeldMessage[]): void {
    this.list = [];
    this.perKey.clear();
    for (const e of held) this.hold(e);
  }

  /** Whether reading may go on at `scan`: bounded by held messages and by the distance from `low`. */
  canRead(scan: number): boolean {
    return this.list.length < FIFO_WINDOW && scan - this.low < FIFO_SPAN;
  }

  /**
   * Retention removed everything below `first` (the queue's first stored offset): nothing there can
   * be delivered or settled any more, so `low` moves up to it and what was held below it is dropped.
   * Without this a group that had not read what retention removed would keep `low` where it was and
   * stop reading `FIFO_SPAN` offsets later, for good. Returns whether `low` moved.
   */
  forgetBelow(first: number): boolean {
    if (this.low >= first) return false;
    if (this.list.length > 0 && this.list[0]!.offset < first) {
      this.resetHeld(this.list.filter((e) => e.offset >= first));
    }
    for (const o of this.settled) if (o < first) this.settled.delete(o);
    this.low = first;
    return true;
  }

  /** Record that `offset` needs nothing more, and move `low` past settled offsets. */
  settle(offset: number, scan: number, inFlight: (offset: number) => boolean): void {
    if (offset >= this.low) this.settled.add(offset);
    this.advance(scan, inFlight);
  }

  /** Move `low` to the first offset that is held, in flight, or not yet read. */
  advance(scan: number, inFlight: (offset: number) => boolean): void {
    const firstHeld = this.list.length > 0 ? this.list[0]!.offset : Infinity;
    let low = this.low;
    while (low < scan && low < firstHeld && !inFlight(low) && this.settled.has(low)) {
      this.settled.delete(low);
      low++;
    }
    this.low = low;
  }
}

/** The blocking key of a message in queue `queueId`: its message group there, or the queue itself. */
export function fifoKey(queueId: number, messageGroup: string): string {
  return `${queueId}\u0000${messageGroup}`;
}

/** Read held messages (ascending offsets): one range read when they are close together. */
export async function readHeld(
  store: MessageStore,
  topic: string,
  queueId: number,
  chosen: readonly HeldMessage[],
): Promise<[HeldMessage, StoredMessage | undefined][]> {
  const first = chosen[0]!.offset;
  const span = chosen.at(-1)!.offset - first + 1;
  if (span <= 4 * chosen.length + 64) {
    const r = await store.read(topic, queueId, first, { maxCount: span, maxBytes: 64 * 1024 * 1024 });
    const byOffset = new Map(r.messages.map((m) => [m.queueOffset, m]));
    return chosen.map((e) => [e, byOffset.get(e.offset)]);
  }
  const out: [HeldMessage, StoredMessage | undefined][] = [];
  for (const e of chosen) {
    const r = await store.read(topic, queueId, e.offset, { maxCount: 1 });
    out.push([e, r.messages[0]?.queueOffset === e.offset ? r.messages[0] : undefined]);
  }
  return out;
}

/**
 * After a restart: everything of a queue in [low, scan) that is neither settled nor in flight is held
 * again, in storage order.
 */
export async function rebuildHeld(
  store: MessageStore,
  topic: string,
  queueId: number,
  fq: FifoQueue,
  scan: number,
  inFlight: (offset: number) => boolean,
): Promise<void> {
  const held: HeldMessage[] = [];
  for (let at = fq.low; at < scan;) {
    const r = await store.read(topic, queueId, at, { maxCount: 256 });
    if (r.messages.length === 0) {
      // Below the queue's first offset (retention removed the head): go on from there, do not stop.
      if (r.nextOffset > at) {
        at = r.nextOffset;
        continue;
      }
      break;
    }
    for (const m of r.messages) {
      if (m.queueOffset >= scan) break;
      if (fq.settled.has(m.queueOffset) || inFlight(m.queueOffset)) continue;
      held.push({ offset: m.queueOffset, key: fifoKey(queueId, m.messageGroup) });
    }
    at = r.nextOffset;
  }
  fq.resetHeld(held);
}
