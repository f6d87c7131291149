/**
 * Serialized async work. `KeyedExecutor` runs the tasks submitted under one key one at a time, in
 * submission order, while tasks under other keys run freely: the consumption state of one
 * (consumer group, topic) is changed only by one task at a time, even across `await`s, instead of by
 * flags checked around them. `SerialExecutor` is the one-key case (the store's maintenance: index
 * flushes, checkpoints, retention and close never interleave).
 *
 * A task that fails rejects its own promise only; the next task under the key still runs. A key
 * holds memory only while it has work queued.
 */
import { KeptKeyMap } from './kept-key-map.js';

export class KeyedExecutor<K> {
  /** Not a Map with deletes: a replaced table would keep every tail it held alive (kept-key-map.ts). */
  private readonly tails = new KeptKeyMap<K, Promise<void>>();

  run<T>(key: K, task: () => T | Promise<T>): Promise<T> {
    const prev = this.tails.get(key);
    const result = prev ? prev.then(task) : Promise.resolve().then(task);
    const tail = result.then(
      () => {},
      () => {},
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with work queued or running. */
  get busyKeys(): number {
    return this.tails.size;
  }

  /** Resolves once every task submitted so far, under every key, has finished. */
  async drain(): Promise<void> {
    while (this.tails.size > 0) await Promise.all(this.tails.values());
  }
}

export class SerialExecutor {
  private readonly keyed = new KeyedExecutor<0>();

  run<T>(task: () => Promise<T>): Promise<T> {
    return this.keyed.run(0, task);
  }
}
