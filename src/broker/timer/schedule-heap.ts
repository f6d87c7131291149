/**
 * A min-heap of schedule entries ordered by (due time, log position), in parallel typed arrays:
 * about 20 bytes an entry and no object per entry, so a slab of a few hundred thousand scheduled
 * messages costs a few megabytes while it is loaded.
 */
import type { EntryArrays } from '../../store/index.js';

export interface HeapEntry {
  due: number;
  position: number;
  label: number;
}

export class ScheduleHeap {
  private due: Float64Array;
  private pos: Float64Array;
  private lab: Uint32Array;
  private n = 0;

  constructor(capacity = 16) {
    const c = Math.max(16, capacity);
    this.due = new Float64Array(c);
    this.pos = new Float64Array(c);
    this.lab = new Uint32Array(c);
  }

  /** A heap of the given entries (heapified in linear time). */
  static from(a: EntryArrays): ScheduleHeap {
    const h = new ScheduleHeap(a.length + 16);
    h.due.set(a.due.subarray(0, a.length));
    h.pos.set(a.position.subarray(0, a.length));
    h.lab.set(a.label.subarray(0, a.length));
    h.n = a.length;
    for (let i = (h.n >> 1) - 1; i >= 0; i--) h.down(i);
    return h;
  }

  get size(): number {
    return this.n;
  }

  /** Due time of the earliest entry, Infinity when empty. */
  peekDue(): number {
    return this.n > 0 ? this.due[0]! : Infinity;
  }

  push(due: number, position: number, label: number): void {
    if (this.n === this.due.length) this.grow();
    let i = this.n++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(due, position, this.due[p]!, this.pos[p]!)) break;
      this.due[i] = this.due[p]!;
      this.pos[i] = this.pos[p]!;
      this.lab[i] = this.lab[p]!;
      i = p;
    }
    this.due[i] = due;
    this.pos[i] = position;
    this.lab[i] = label;
  }

  /** Remove and return the earliest entry. */
  pop(): HeapEntry | undefined {
    if (this.n === 0) return undefined;
    const top = { due: this.due[0]!, position: this.pos[0]!, label: this.lab[0]! };
    const last = --this.n;
    if (last > 0) {
      this.due[0] = this.due[last]!;
      this.pos[0] = this.pos[last]!;
      this.lab[0] = this.lab[last]!;
      this.down(0);
    }
    return top;
  }

  /** Whether an entry with this position is in the heap (a linear scan: for rare operations). */
  has(position: number): boolean {
    for (let i = 0; i < this.n; i++) if (this.pos[i] === position) return true;
    return false;
  }

  /** The earliest due time among entries with this label (a linear scan), Infinity if none. */
  earliestOf(label: number, skip?: ReadonlySet<number>): number {
    let best = Infinity;
    for (let i = 0; i < this.n; i++) {
      if (this.lab[i] === label && this.due[i]! < best && !skip?.has(this.pos[i]!)) best = this.due[i]!;
    }
    return best;
  }

  private before(d1: number, p1: number, d2: number, p2: number): boolean {
    return d1 < d2 || (d1 === d2 && p1 < p2);
  }

  private down(i: number): void {
    const n = this.n;
    const d = this.due[i]!;
    const p = this.pos[i]!;
    const l = this.lab[i]!;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && this.before(this.due[c + 1]!, this.pos[c + 1]!, this.due[c]!, this.pos[c]!)) c++;
      if (!this.before(this.due[c]!, this.pos[c]!, d, p)) break;
      this.due[i] = this.due[c]!;
      this.pos[i] = this.pos[c]!;
      this.lab[i] = this.lab[c]!;
      i = c;
    }
    this.due[i] = d;
    this.pos[i] = p;
    this.lab[i] = l;
  }

  private grow(): void {
    const c = this.due.length * 2;
    const due = new Float64Array(c);
    const pos = new Float64Array(c);
    const lab = new Uint32Array(c);
    due.set(this.due);
    pos.set(this.pos);
    lab.set(this.lab);
    this.due = due;
    this.pos = pos;
    this.lab = lab;
  }
}
