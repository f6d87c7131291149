/**
 * A map from non-negative integer keys (up to 2^53) to values, for a long-lived owner whose entries
 * come and go at the message rate (the deliveries in flight of a consumer group): open addressing
 * over a Float64Array of keys and an array of values, slots cleared on delete (backward shift, no
 * tombstones), and the arrays it outgrows or shrinks out of cleared before they are dropped.
 *
 * Why not a `Map`: V8 replaces a Map's hash table as entries come and go, and a replaced table keeps
 * its entries and its successor reachable until the next full collection, so once one replaced table
 * is old every value added later is promoted (slot-set.ts, kept-key-map.ts). Here no array is
 * replaced while the number of entries stays within a factor of eight, and none that is replaced
 * points at anything.
 */
const EMPTY = -1;
const MIN_CAPACITY = 16;

export class NumberMap<V> {
  private keys: Float64Array;
  private vals: (V | undefined)[];
  private mask: number;
  private count = 0;

  constructor() {
    this.keys = new Float64Array(MIN_CAPACITY).fill(EMPTY);
    this.vals = new Array<V | undefined>(MIN_CAPACITY).fill(undefined);
    this.mask = MIN_CAPACITY - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Keys this map takes: integers from 0 to 2^53 − 1. */
  static accepts(key: number): boolean {
    return Number.isSafeInteger(key) && key >= 0;
  }

  private home(key: number): number {
    const lo = key >>> 0;
    const hi = (key / 4294967296) >>> 0;
    let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    return h & this.mask;
  }

  private slotOf(key: number): number {
    const keys = this.keys;
    const mask = this.mask;
    for (let i = this.home(key); ; i = (i + 1) & mask) {
      const k = keys[i]!;
      if (k === key) return i;
      if (k === EMPTY) return -1;
    }
  }

  get(key: number): V | undefined {
    const i = this.slotOf(key);
    return i < 0 ? undefined : this.vals[i];
  }

  has(key: number): boolean {
    return this.slotOf(key) >= 0;
  }

  set(key: number, value: V): this {
    if (!NumberMap.accepts(key)) throw new RangeError(`NumberMap key ${key} is not an integer in [0, 2^53)`);
    const keys = this.keys;
    const mask = this.mask;
    let i = this.home(key);
    for (; ; i = (i + 1) & mask) {
      const k = keys[i]!;
      if (k === key) {
        this.vals[i] = value;
        return this;
      }
      if (k === EMPTY) break;
    }
    keys[i] = key;
    this.vals[i] = value;
    if (++this.count * 2 > mask + 1) this.resize((mask + 1) * 2);
    return this;
  }

  delete(key: number): boolean {
    let i = this.slotOf(key);
    if (i < 0) return false;
    const keys = this.keys;
    const vals = this.vals;
    const mask = this.mask;
    // Backward shift: move later keys of the run back into the hole, unless their home lies
    // cyclically in (hole, here].
    for (let j = (i + 1) & mask; keys[j] !== EMPTY; j = (j + 1) & mask) {
      const h = this.home(keys[j]!);
      if (i <= j ? h <= i || h > j : h <= i && h > j) {
        keys[i] = keys[j]!;
        vals[i] = vals[j];
        i = j;
      }
    }
    keys[i] = EMPTY;
    vals[i] = undefined;
    this.count--;
    const cap = mask + 1;
    if (cap > MIN_CAPACITY && this.count * 8 < cap) this.resize(cap / 2);
    return true;
  }

  /** Values (a copy: callers may change the map while going through it). */
  values(): V[] {
    const out: V[] = [];
    const keys = this.keys;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) out.push(this.vals[i]!);
    return out;
  }

  /** Entries (a copy). */
  entries(): [number, V][] {
    const out: [number, V][] = [];
    const keys = this.keys;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== EMPTY) out.push([keys[i]!, this.vals[i]!]);
    return out;
  }

  clear(): void {
    this.vals.fill(undefined);
    this.keys = new Float64Array(MIN_CAPACITY).fill(EMPTY);
    this.vals = new Array<V | undefined>(MIN_CAPACITY).fill(undefined);
    this.mask = MIN_CAPACITY - 1;
    this.count = 0;
  }

  private resize(capacity: number): void {
    const oldKeys = this.keys;
    const oldVals = this.vals;
    this.keys = new Float64Array(capacity).fill(EMPTY);
    this.vals = new Array<V | undefined>(capacity).fill(undefined);
    this.mask = capacity - 1;
    this.count = 0;
    for (let i = 0; i < oldKeys.length; i++) if (oldKeys[i] !== EMPTY) this.set(oldKeys[i]!, oldVals[i]!);
    oldVals.fill(undefined);
  }
}
