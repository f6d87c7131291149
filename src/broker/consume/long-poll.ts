/**
 * Parked receives, by topic. A receive that found nothing parks until a message arrives on its topic
 * (or a delivery of it becomes ready again), its poll time ends, or its caller gives up.
 */
interface Parked {
  resolve: () => void;
}

export interface Parking {
  promise: Promise<void>;
  cancel(): void;
}

export class LongPollWaiters {
  private readonly byTopic = new Map<string, Set<Parked>>();
  private stopped = false;

  park(topic: string, ms: number, signal?: AbortSignal): Parking {
    let entry!: Parked;
    let timer: NodeJS.Timeout | undefined;
    const promise = new Promise<void>((resolve) => {
      const done = () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.byTopic.get(topic)?.delete(entry);
        resolve();
      };
      entry = { resolve: done };
      if (this.stopped || ms <= 0 || signal?.aborted) return done();
      let set = this.byTopic.get(topic);
      if (!set) this.byTopic.set(topic, (set = new Set()));
      set.add(entry);
      timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    });
    return { promise, cancel: () => entry.resolve() };
  }

  wake(topic: string): void {
    const set = this.byTopic.get(topic);
    if (!set || set.size === 0) return;
    for (const p of [...set]) p.resolve();
  }

  /** Answer everyone (shutdown). */
  wakeAll(): void {
    this.stopped = true;
    for (const topic of [...this.byTopic.keys()]) this.wake(topic);
  }

  get parked(): number {
    let n = 0;
    for (const s of this.byTopic.values()) n += s.size;
    return n;
  }
}
