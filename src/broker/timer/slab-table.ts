/**
 * The timer's view of its slabs in memory: for every slab (a minute of due times, see
 * store/schedule-index.ts) how many entries wait per topic label, and, for the few loaded ones, the
 * heap of their entries. It also keeps the totals per label that the admin status reads. Nothing
 * here grows with the number of scheduled messages, except the loaded heaps.
 */
import type { ScheduleEntry } from '../../store/index.js';
import type { HeapEntry, ScheduleHeap } from './schedule-heap.js';

export interface LoadedSlab {
  heap: ScheduleHeap;
  /** Recalled entries (skipped when they come up). */
  cancelled: Set<number>;
  /** Entries taken for delivery whose DONE mark is not written yet. */
  inflight: number;
}

export interface Slab {
  start: number;
  /** Entries still to deliver, by label (topic). */
  counts: Map<number, number>;
  maxPosition: number;
  state: 'unloaded' | 'loading' | 'loaded';
  loaded?: LoadedSlab;
  /** Entries scheduled while the slab was being read. */
  lateAdds?: HeapEntry[];
}

export class SlabTable {
  private readonly slabs = new Map<number, Slab>();
  /** Slab starts in time order. */
  readonly order: number[] = [];
  /** The slabs in memory. */
  readonly loaded = new Set<Slab>();
  /** Entries still to deliver, by label, all slabs. */
  readonly totals = new Map<number, number>();

  constructor(private readonly slabOf: (due: number) => number) {}

  get(start: number): Slab | undefined {
    return this.slabs.get(start);
  }

  /** The slab a due time falls in, if it has one. */
  of(due: number): Slab | undefined {
    return this.slabs.get(this.slabOf(due));
  }

  get count(): number {
    return this.slabs.size;
  }

  /** The slab starting at `start`, created (unloaded, empty) if there is none. */
  ensure(start: number): Slab {
    let slab = this.slabs.get(start);
    if (!slab) {
      slab = { start, counts: new Map(), maxPosition: 0, state: 'unloaded' };
      this.slabs.set(start, slab);
      // Binary insertion keeps `order` sorted.
      let lo = 0;
      let hi = this.order.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.order[mid]! < start) lo = mid + 1;
        else hi = mid;
      }
      this.order.splice(lo, 0, start);
    }
    return slab;
  }

  /** A new entry: counted, and in the heap of its slab if that is in memory. */
  track(e: ScheduleEntry): void {
    const slab = this.ensure(this.slabOf(e.due));
    this.count_(slab, e.label, 1);
    if (e.position > slab.maxPosition) slab.maxPosition = e.position;
    if (slab.state === 'loaded') slab.loaded!.heap.push(e.due, e.position, e.label);
    else if (slab.state === 'loading') slab.lateAdds!.push(e);
  }

  /** An entry read back at start-up (`n` of them for a label). */
  restore(start: number, label: number, n: number): void {
    this.count_(this.ensure(start), label, n);
  }

  /** An entry delivered or recalled. */
  untrack(slab: Slab, label: number): void {
    this.count_(slab, label, -1);
  }

  markLoaded(slab: Slab, loaded: LoadedSlab): void {
    slab.loaded = loaded;
    slab.state = 'loaded';
    this.loaded.add(slab);
  }

  /** Forget a slab (all its entries are delivered or recalled). */
  remove(slab: Slab): void {
    if (this.slabs.get(slab.start) !== slab) return;
    this.slabs.delete(slab.start);
    this.loaded.delete(slab);
    this.order.splice(this.order.indexOf(slab.start), 1);
  }

  /** Entries in memory. */
  loadedEntries(): number {
    let n = 0;
    for (const s of this.loaded) n += s.loaded!.heap.size;
    return n;
  }

  /** Entries still to deliver, all labels. */
  get size(): number {
    let n = 0;
    for (const c of this.totals.values()) n += c;
    return n;
  }

  private count_(slab: Slab, label: number, delta: number): void {
    const c = (slab.counts.get(label) ?? 0) + delta;
    if (c > 0) slab.counts.set(label, c);
    else slab.counts.delete(label);
    const t = (this.totals.get(label) ?? 0) + delta;
    if (t > 0) this.totals.set(label, t);
    else this.totals.delete(label);
  }
}
