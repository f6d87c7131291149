/**
 * Automatic batching of sends: `send()` calls for one topic made close together are coalesced into
 * one SendMessage carrying many messages. A topic's pending batch goes out when it reaches
 * `maxMessages` or `maxBytes`; otherwise at the end of the current turn of the event loop (which
 * gathers every send issued in the same tick) when no request of the topic is in flight, so a lone
 * send pays no extra latency, or `lingerMs` after its first message while one is (the broker is
 * busy: waiting a little makes bigger batches). The broker answers one entry per message, in order,
 * so each caller still gets its own receipt or its own error.
 */
import type { PreparedMessage, SendReceipt } from './message.js';
import type { Cancel, Timers } from '../common/timers.js';
import { KeptKeyMap } from '../common/kept-key-map.js';

/** One caller's message, waiting for its outcome. */
export interface SendEntry {
  readonly message: PreparedMessage;
  /** Set once the caller has its answer (resolved, rejected, or aborted). */
  settled: boolean;
  /** The caller's signal, if it can give up (always present, undefined or not: one hidden class). */
  readonly signal: AbortSignal | undefined;
  resolve(receipt: SendReceipt): void;
  reject(err: unknown): void;
  /** Set by the sender while the entry is on the wire: called when the caller aborts. */
  onAbort?: () => void;
}

export interface BatchingConfig {
  readonly lingerMs: number;
  readonly maxMessages: number;
  readonly maxBytes: number;
}

interface Pending {
  entries: SendEntry[];
  bytes: number;
  cancel: Cancel | undefined;
}

export class SendBatcher {
  /** Not a Map with deletes: a batch per turn comes and goes (kept-key-map.ts). */
  private readonly pending = new KeptKeyMap<string, Pending>();

  constructor(
    private readonly config: BatchingConfig,
    private readonly timers: Timers,
    /** Sends one batch (all entries share a topic). */
    private readonly dispatch: (topic: string, entries: SendEntry[]) => void,
    /** Whether a request for the topic is in flight. */
    private readonly busy: (topic: string) => boolean,
  ) {}

  add(entry: SendEntry): void {
    const topic = entry.message.topic;
    let p = this.pending.get(topic);
    if (p && p.entries.length > 0 && p.bytes + entry.message.bytes > this.config.maxBytes) {
      this.flush(topic);
      p = undefined;
    }
    if (!p) {
      p = { entries: [], bytes: 0, cancel: undefined };
      this.pending.set(topic, p);
    }
    p.entries.push(entry);
    p.bytes += entry.message.bytes;
    if (p.entries.length >= this.config.maxMessages || p.bytes >= this.config.maxBytes) {
      this.flush(topic);
    } else if (!p.cancel) {
      p.cancel =
        this.config.lingerMs > 0 && this.busy(topic)
          ? this.timers.timeout(() => this.flush(topic), this.config.lingerMs)
          : this.timers.immediate(() => this.flush(topic));
    }
  }

  /** Send every pending batch now (used by `close()`). */
  flushAll(): void {
    for (const topic of this.pending.keys()) this.flush(topic);
  }

  private flush(topic: string): void {
    const p = this.pending.get(topic);
    if (!p) return;
    this.pending.delete(topic);
    p.cancel?.();
    const live = p.entries.filter((e) => !e.settled);
    if (live.length > 0) this.dispatch(topic, live);
  }
}
