/**
 * Reads of the message log through a small least-recently-used cache of aligned chunks.
 *
 * The queues of a topic are interleaved in the log, so the records of one queue lie a few other
 * queues' records apart: one store read of a queue's batch covers (and copies) the whole span, and
 * the next queue's read covers the same span again. With eight queues a consumer read eight bytes
 * for each byte it delivered. Here the span is read once, in chunks that every queue's read (and
 * every consumer group's) then shares; a record is copied out of its chunk, without a thread-pool
 * hop.
 *
 * Chunk buffers never leave the cache (readers get copies), so evicted ones are reused: the cache
 * is a fixed amount of memory, not a stream of large buffers for the garbage collector.
 *
 * A chunk holds only bytes that were durable when it was read (its length says how many); a read
 * needing more of it reads it again. The log drops the cache whenever bytes it held can change
 * (truncation at recovery, a rollback) and the chunks of deleted segments.
 */

export interface ChunkCacheOptions {
  /** Bytes per chunk (chunks are aligned to this within their segment). */
  chunkSize: number;
  /** Bytes a chunk buffer holds: its chunk and a little past it. */
  capacity: number;
  /** Most bytes kept (whole buffers). */
  budget: number;
}

interface Chunk {
  buf: Buffer;
  /** Bytes of `buf` read. */
  length: number;
}

export class LogChunkCache {
  private readonly chunks = new Map<number, Chunk>();
  private readonly loading = new Map<number, Promise<void>>();
  private readonly free: Buffer[] = [];
  /** Buffers owned: in `chunks`, being loaded, or free. */
  private owned = 0;
  /** Bumped by `clear`: a read begun before it never enters the cache. */
  private generation = 0;

  constructor(private readonly o: ChunkCacheOptions) {}

  get chunkSize(): number {
    return this.o.chunkSize;
  }

  /** Bytes held in chunks. */
  get size(): number {
    return this.chunks.size * this.o.capacity;
  }

  /** Copy [position, position + length) into `into[at…]` if the chunk starting at `start` holds it all. */
  copyInto(start: number, position: number, length: number, into: Buffer, at: number): boolean {
    const c = this.chunks.get(start);
    if (!c || position + length > start + c.length) return false;
    into.set(c.buf.subarray(position - start, position - start + length), at);
    return true;
  }

  /** Whether `copyInto` would serve these bytes. */
  holds(start: number, position: number, length: number): boolean {
    const c = this.chunks.get(start);
    return c !== undefined && position + length <= start + c.length;
  }

  /**
   * Make sure the chunk starting at `start` is cached with at least `need` bytes, reading it with
   * `read` (into a buffer of the cache's; returns the bytes read) if not. Reads of the same chunk
   * under way are shared. Without room in the budget nothing is cached.
   */
  async load(start: number, need: number, read: (into: Buffer) => Promise<number>): Promise<void> {
    const hit = this.chunks.get(start);
    if (hit && hit.length >= need) {
      this.chunks.delete(start); // most recently used last
      this.chunks.set(start, hit);
      return;
    }
    const pending = this.loading.get(start);
    if (pending) {
      await pending;
      if ((this.chunks.get(start)?.length ?? 0) >= need) return;
    }
    const buf = this.takeBuffer();
    if (!buf) return;
    const generation = this.generation;
    const p = read(buf).then(
      (length) => {
        if (generation !== this.generation || length === 0) {
          this.free.push(buf); // read before a clear: it may hold bytes the log no longer has
          return;
        }
        const old = this.chunks.get(start);
        if (old) {
          this.chunks.delete(start);
          this.free.push(old.buf);
        }
        this.chunks.set(start, { buf, length });
      },
      (err: unknown) => {
        this.free.push(buf);
        throw err;
      },
    );
    this.loading.set(start, p);
    try {
      await p;
    } finally {
      if (this.loading.get(start) === p) this.loading.delete(start);
    }
  }

  /** Forget every chunk (the bytes they hold may no longer be the log's). */
  clear(): void {
    for (const c of this.chunks.values()) this.free.push(c.buf);
    this.chunks.clear();
    this.loading.clear();
    this.generation++;
  }

  /** Forget the chunks that start below `position` (their segments were deleted). */
  dropBelow(position: number): void {
    for (const [start, c] of this.chunks) {
      if (start >= position) continue;
      this.chunks.delete(start);
      this.free.push(c.buf);
    }
  }

  /** A free buffer, a new one within the budget, or the least recently used chunk's. */
  private takeBuffer(): Buffer | null {
    const free = this.free.pop();
    if (free) return free;
    if ((this.owned + 1) * this.o.capacity <= this.o.budget) {
      this.owned++;
      return Buffer.allocUnsafe(this.o.capacity);
    }
    for (const [start, c] of this.chunks) {
      this.chunks.delete(start);
      return c.buf;
    }
    return null; // every buffer is being loaded
  }
}
