/**
 * A map for a long-lived owner whose keys come back (a consumer group's state key, a connection's
 * batch key) while its values come and go at the call rate: a removed key keeps its place in the
 * table, with no value, and takes the next value without the table changing.
 *
 * Why not a `Map` with `delete`: V8 replaces a Map's hash table as entries are added and deleted, and
 * a replaced table keeps pointing at the values it held and at the table that replaced it until the
 * next full (mark-compact) collection. Once one replaced table is in the old generation every later
 * table, and every value they held, survives young-generation collections through it: values that
 * lived for one call are promoted, with all they point to (slot-set.ts has the measurements). Writing
 * a value over a key the table already has replaces nothing.
 *
 * Keys whose values are gone are dropped in one sweep once they outnumber the live ones (plus a
 * slack): a table of keys that never come back stays bounded. Values may not be `undefined`.
 */
const SLACK = 64;

export class KeptKeyMap<K, V> {
  private readonly table = new Map<K, V | undefined>();
  private live = 0;

  get size(): number {
    return this.live;
  }

  get(key: K): V | undefined {
    return this.table.get(key);
  }

  has(key: K): boolean {
    return this.table.get(key) !== undefined;
  }

  set(key: K, value: V): this {
    if (value === undefined) throw new TypeError('KeptKeyMap values may not be undefined');
    if (this.table.get(key) === undefined) this.live++;
    this.table.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    if (this.table.get(key) === undefined) return false;
    this.table.set(key, undefined);
    this.live--;
    if (this.table.size > 2 * this.live + SLACK) this.sweep();
    return true;
  }

  /** Keys with a value (a copy: callers may change the map while going through it). */
  keys(): K[] {
    const out: K[] = [];
    for (const [k, v] of this.table) if (v !== undefined) out.push(k);
    return out;
  }

  /** Values (a copy). */
  values(): V[] {
    const out: V[] = [];
    for (const v of this.table.values()) if (v !== undefined) out.push(v);
    return out;
  }

  /** Entries with a value (a copy). */
  entries(): [K, V][] {
    const out: [K, V][] = [];
    for (const [k, v] of this.table) if (v !== undefined) out.push([k, v]);
    return out;
  }

  clear(): void {
    this.table.clear();
    this.live = 0;
  }

  /** Keys held without a value: what a sweep would drop (for tests). */
  get idleKeys(): number {
    return this.table.size - this.live;
  }

  private sweep(): void {
    for (const [k, v] of this.table) if (v === undefined) this.table.delete(k);
  }
}
