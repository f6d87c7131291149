/**
 * An insertion-ordered collection with removal in constant time, for a long-lived owner whose items
 * come and go at the call rate (parked requests, oldest first): a doubly linked list whose nodes are
 * emptied and unlinked when their item goes, so a removed node points at nothing.
 *
 * Why not a `Set` (which keeps insertion order too): V8 replaces a Set's table as items come and go,
 * and a replaced table keeps its items, and its successor, reachable until the next full collection;
 * once one such table is old, every item added later is promoted (slot-set.ts, kept-key-map.ts).
 */
export class ListNode<T> {
  constructor(
    public value: T | undefined,
    public prev: ListNode<T> | undefined,
    public next: ListNode<T> | undefined,
  ) {}
}

export class OrderedList<T> {
  private head: ListNode<T> | undefined;
  private tail: ListNode<T> | undefined;
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Add `value` last; the node removes it. */
  push(value: T): ListNode<T> {
    const node = new ListNode<T>(value, this.tail, undefined);
    if (this.tail) this.tail.next = node;
    else this.head = node;
    this.tail = node;
    this.count++;
    return node;
  }

  /** Remove the item of `node` (pushed here). A node already removed is ignored; returns whether it was here. */
  remove(node: ListNode<T>): boolean {
    if (node.value === undefined) return false;
    const { prev, next } = node;
    if (prev) prev.next = next;
    else this.head = next;
    if (next) next.prev = prev;
    else this.tail = prev;
    node.value = undefined;
    node.prev = undefined;
    node.next = undefined;
    this.count--;
    return true;
  }

  /** The oldest item. */
  first(): T | undefined {
    return this.head?.value;
  }

  /** The items, oldest first (a copy: callers may remove while going through it). */
  values(): T[] {
    const out: T[] = [];
    for (let n = this.head; n; n = n.next) out.push(n.value!);
    return out;
  }

  /** The oldest item that `test` accepts (`test` may not change the list). */
  find(test: (value: T) => boolean): T | undefined {
    for (let n = this.head; n; n = n.next) if (test(n.value!)) return n.value;
    return undefined;
  }
}
