/**
 * Runs async tasks one at a time, in submission order: the store's maintenance (index flushes,
 * checkpoints, retention, close) must never interleave across awaits.
 */
export class SerialExecutor {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => {});
    return result;
  }
}
