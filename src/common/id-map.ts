/**
 * A map from small positive integer ids (HTTP/2 stream ids) to values, for a long-lived owner whose
 * entries come and go at the call rate: open addressing over plain arrays, slots cleared on delete,
 * and the arrays it outgrows cleared before they are dropped. Why not a `Map`: see slot-set.ts (a
 * replaced hash table keeps the entries it held, and its successor, reachable until the next full
 * collection, so entries that lived for one call are promoted once one such table is old).
 *
 * Why not the `NumberMap` (number-map.ts) the deliveries use: stream ids go up by two, so `id / 2`
 * is a slot of its own with no hashing and, while fewer streams are open than it has slots, no
 * collisions; a `NumberMap` hashes every key. With the connections' streams and calls in a
 * `NumberMap`, three alternating pairs (`npm run bench:compare -- --only vela-sdk --workloads
 * w2,w3a`) gave W2 125,957–130,015 against 123,210–142,422 msgs/s and W3a p99 4.33–5.97 against
 * 4.05–4.54 ms, so the two stay apart.
 */
export class IdMap<V> {
  private keys: Float64Array;
  private vals: (V | undefined)[];
  private mask: number;
  private count = 0;

  constructor(capacity = 16) {
    let cap = 8;
    while (cap < capacity * 2) cap *= 2;
    this.keys = new Float64Array(cap);
    this.vals = new Array<V | undefined>(cap).fill(undefined);
    this.mask = cap - 1;
  }

  get size(): number {
    return this.count;
  }

  private slotOf(id: number): number {
    return (id >>> 1) & this.mask;
  }

  get(id: number): V | undefined {
    const keys = this.keys;
    for (let i = this.slotOf(id); ; i = (i + 1) & this.mask) {
      const k = keys[i]!;
      if (k === id) return this.vals[i];
      if (k === 0) return undefined;
    }
  }

  has(id: number): boolean {
    return this.get(id) !== undefined;
  }

  set(id: number, v: V): void {
    if (!(id > 0)) throw new RangeError(`id ${id} is not positive`);
    const keys = this.keys;
    let i = this.slotOf(id);
    for (; ; i = (i + 1) & this.mask) {
      const k = keys[i]!;
      if (k === id) {
        this.vals[i] = v;
        return;
      }
      if (k === 0) break;
    }
    keys[i] = id;
    this.vals[i] = v;
    if (++this.count * 2 > this.mask + 1) this.grow();
  }

  delete(id: number): boolean {
    const keys = this.keys;
    const mask = this.mask;
    let i = this.slotOf(id);
    for (; ; i = (i + 1) & mask) {
      const k = keys[i]!;
      if (k === id) break;
      if (k === 0) return false;
    }
    // Backward-shift deletion: no tombstones; every slot left holds nothing.
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const k = keys[j]!;
      if (k === 0) break;
      const home = this.slotOf(k);
      // Move k into the hole at i unless its home lies cyclically in (i, j].
      if (i <= j ? home <= i || home > j : home <= i && home > j) {
        keys[i] = k;
        this.vals[i] = this.vals[j];
        i = j;
      }
    }
    keys[i] = 0;
    this.vals[i] = undefined;
    this.count--;
    return true;
  }

  values(): V[] {
    const out: V[] = [];
    for (let i = 0; i <= this.mask; i++) if (this.keys[i] !== 0) out.push(this.vals[i]!);
    return out;
  }

  clear(): void {
    this.keys.fill(0);
    this.vals.fill(undefined);
    this.count = 0;
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldVals = this.vals;
    const cap = (this.mask + 1) * 2;
    this.keys = new Float64Array(cap);
    this.vals = new Array<V | undefined>(cap).fill(undefined);
    this.mask = cap - 1;
    this.count = 0;
    for (let i = 0; i < oldKeys.length; i++) if (oldKeys[i] !== 0) this.set(oldKeys[i]!, oldVals[i]!);
    oldVals.fill(undefined);
  }
}
