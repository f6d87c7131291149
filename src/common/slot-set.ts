/**
 * A collection for a long-lived owner whose items come and go at the call rate (the abort callbacks
 * of a signal that outlives its calls: abort-listeners.ts).
 *
 * Why not a `Set`: V8 keeps a Set's items in a hash table that it replaces as items are added and
 * deleted, and a replaced table keeps pointing at the items it held and at the table that replaced it
 * until the next full (mark-compact) collection. Once one replaced table is in the old generation, as
 * it soon is when its owner lives there, every young-generation collection finds the chain of later
 * tables, and every item they ever held, reachable from it: items that lived for one call are
 * promoted, and the old generation grows at the call rate. Five 3 KB objects a millisecond, each
 * added to a long-lived Set and deleted 2 ms later: 4–5 mark-compacts in 5 s and 52–106 ms of
 * pauses (the longest 7–10 ms); with a slot set, 1 and 8–13 ms, as when nothing holds the objects
 * (`node --import tsx bench/set-churn.ts`). Here the items sit in an array whose slots are cleared
 * when they go.
 */

/** An unordered collection; `add` returns a handle that `remove` takes. Adding and removing allocate nothing. */
export class SlotSet<T> {
  private readonly items: (T | undefined)[] = [];
  private readonly freeSlots: number[] = [];
  private live = 0;

  /** Add `item`; the handle removes it (once). */
  add(item: T): number {
    const slot = this.freeSlots.length > 0 ? this.freeSlots.pop()! : this.items.length;
    this.items[slot] = item;
    this.live++;
    return slot;
  }

  /** Remove the item `add` gave this handle for. A handle already removed is ignored. */
  remove(handle: number): void {
    if (this.items[handle] === undefined) return;
    this.items[handle] = undefined;
    this.freeSlots.push(handle);
    this.live--;
  }

  get size(): number {
    return this.live;
  }

  /** The items now (a copy: callers may add and remove while going through it). */
  values(): T[] {
    const out: T[] = [];
    for (const item of this.items) if (item !== undefined) out.push(item);
    return out;
  }

  /**
   * Call `fn` with each item, in place (no copy): an item removed meanwhile, by `fn` or otherwise, is
   * not visited after its removal; one added meanwhile may be.
   */
  each(fn: (item: T) => void): void {
    const items = this.items;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (item !== undefined) fn(item);
    }
  }

  clear(): void {
    this.items.length = 0;
    this.freeSlots.length = 0;
    this.live = 0;
  }
}
