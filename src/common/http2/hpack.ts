/**
 * HPACK (RFC 7541), the header compression of HTTP/2: a decoder for the header blocks a peer sends (with
 * its dynamic table) and a stateless encoder for the blocks we send.
 *
 * The encoder never adds to the dynamic table, so it is right for any SETTINGS_HEADER_TABLE_SIZE the
 * peer sets (even 0) and one encoder serves every connection; constant blocks can be encoded once.
 * Strings are latin1 both ways: byte 0xe9 is 'é', and the encoder refuses a character above U+00FF.
 */
import { HpackError } from './hpack-error.js';
import { huffmanDecode, huffmanEncode, huffmanLength, latin1 } from './hpack-huffman.js';
import { STATIC_TABLE } from './hpack-tables.js';

export { HpackError } from './hpack-error.js';

/** The fields of one header block. */
export interface DecodedHeaders {
  /** Name (as sent: the connection checks case) → value; a repeated name's values joined with ', ' ('; ' for cookie). Null prototype. */
  fields: Record<string, string>;
  /** The header list passed maxHeaderListSize: fields stops growing, the stream is to be refused. */
  tooLarge: boolean;
  /**
   * What the order of the fields broke, which `fields` cannot show (RFC 9113 §8.3): a pseudo-header
   * after a regular field, or one pseudo-header twice. The stream is malformed; the block decoded.
   */
  misordered: string | undefined;
}

export interface HpackDecoderOptions {
  /** The SETTINGS_HEADER_TABLE_SIZE we advertise: the largest table a size update may ask for. */
  maxTableSize?: number;
  /** The largest header list kept, counted as RFC 9113 does: name + value + 32 octets per field. */
  maxHeaderListSize?: number;
}

const STATIC_COUNT = STATIC_TABLE.length;
const ENTRY_OVERHEAD = 32; // §4.1, and RFC 9113's SETTINGS_MAX_HEADER_LIST_SIZE

/** Decodes the header blocks of one connection, in order (the dynamic table carries over). */
export class HpackDecoder {
  readonly maxTableSize: number;
  readonly maxHeaderListSize: number;
  /** The table's current limit: maxTableSize until the peer's encoder sends a size update. */
  private limit: number;
  private size = 0;
  // The dynamic table, a ring: entry 1 (the newest) is at `first`, entry k at (first + k - 1) & mask.
  private names: string[] = new Array<string>(16).fill('');
  private values: string[] = new Array<string>(16).fill('');
  private mask = 15;
  private first = 0;
  private count = 0;
  // The block being decoded.
  private block: Buffer = Buffer.alloc(0);
  private pos = 0;

  constructor(opts: HpackDecoderOptions = {}) {
    this.maxTableSize = opts.maxTableSize ?? 4096;
    this.maxHeaderListSize = opts.maxHeaderListSize ?? 64 * 1024;
    this.limit = this.maxTableSize;
  }

  /** The dynamic table's size in octets (§4.1). */
  get tableSize(): number {
    return this.size;
  }

  /** The dynamic table, newest entry first (for tests and diagnostics). */
  tableEntries(): [name: string, value: string][] {
    const out: [string, string][] = [];
    for (let k = 0; k < this.count; k++) {
      const slot = (this.first + k) & this.mask;
      out.push([this.names[slot]!, this.values[slot]!]);
    }
    return out;
  }

  /** Decodes one complete header block (HEADERS + CONTINUATION payloads); throws HpackError if malformed. */
  decode(block: Buffer): DecodedHeaders {
    this.block = block;
    this.pos = 0;
    // Null prototype, yet fast properties: V8 keeps Object.create(null) objects as hash tables (slower to fill).
    const fields = Object.setPrototypeOf({}, null) as Record<string, string>;
    let listSize = 0;
    let tooLarge = false;
    let sawField = false;
    let sawRegular = false;
    let misordered: string | undefined;
    while (this.pos < block.length) {
      const byte = block[this.pos]!;
      let name: string;
      let value: string;
      if (byte & 0x80) {
        // §6.1 indexed field
        const index = this.integer(7);
        name = this.nameAt(index);
        value = this.valueAt(index);
      } else if (byte & 0x40) {
        // §6.2.1 literal with incremental indexing
        const index = this.integer(6);
        name = index === 0 ? this.string() : this.nameAt(index);
        value = this.string();
        this.insert(name, value);
      } else if (byte & 0x20) {
        // §6.3 dynamic table size update: only before the block's first field (§4.2)
        if (sawField) throw new HpackError('dynamic table size update after a header field');
        const size = this.integer(5);
        if (size > this.maxTableSize) {
          throw new HpackError(`dynamic table size update to ${size} > ${this.maxTableSize}`);
        }
        this.limit = size;
        this.evictTo(size);
        continue;
      } else {
        // §6.2.2 literal without indexing (0000), §6.2.3 never indexed (0001)
        const index = this.integer(4);
        name = index === 0 ? this.string() : this.nameAt(index);
        value = this.string();
      }
      sawField = true;
      if (tooLarge) continue;
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      if (listSize > this.maxHeaderListSize) {
        tooLarge = true;
        continue;
      }
      const previous = fields[name];
      if (name.charCodeAt(0) === 0x3a /* ':' */) {
        if (sawRegular) misordered ??= `pseudo-header ${name} after a regular field`;
        else if (previous !== undefined) misordered ??= `pseudo-header ${name} twice`;
      } else sawRegular = true;
      fields[name] = previous === undefined ? value : previous + (name === 'cookie' ? '; ' : ', ') + value;
    }
    this.block = EMPTY;
    return { fields, tooLarge, misordered };
  }

  /** §5.1: an integer with an N-bit prefix; values over 32 bits (or padded past 5 extra bytes) are refused. */
  private integer(prefixBits: number): number {
    const block = this.block;
    let pos = this.pos;
    if (pos >= block.length) throw new HpackError('header block truncated');
    const max = (1 << prefixBits) - 1;
    let value = block[pos++]! & max;
    if (value === max) {
      for (let shift = 0; ; shift += 7) {
        if (shift > 28) throw new HpackError('integer encoding too long');
        if (pos >= block.length) throw new HpackError('header block truncated in an integer');
        const byte = block[pos++]!;
        value += (byte & 0x7f) * 2 ** shift;
        if (value > 0xffffffff) throw new HpackError('integer overflow');
        if ((byte & 0x80) === 0) break;
      }
    }
    this.pos = pos;
    return value;
  }

  /** §5.2: a string literal, raw or Huffman-coded, as latin1. */
  private string(): string {
    const huffman = (this.block[this.pos]! & 0x80) !== 0; // integer() checks pos is in the block
    const length = this.integer(7);
    const start = this.pos;
    const end = start + length;
    if (end > this.block.length) throw new HpackError('string literal runs past the header block');
    this.pos = end;
    return huffman ? huffmanDecode(this.block, start, end) : latin1(this.block, start, end);
  }

  private slotOf(index: number): number {
    if (index === 0 || index > STATIC_COUNT + this.count) {
      throw new HpackError(`header table index ${index} out of range (${STATIC_COUNT + this.count} entries)`);
    }
    return (this.first + index - STATIC_COUNT - 1) & this.mask;
  }

  private nameAt(index: number): string {
    if (index !== 0 && index <= STATIC_COUNT) return STATIC_TABLE[index - 1]![0];
    return this.names[this.slotOf(index)]!;
  }

  private valueAt(index: number): string {
    if (index !== 0 && index <= STATIC_COUNT) return STATIC_TABLE[index - 1]![1];
    return this.values[this.slotOf(index)]!;
  }

  /** §4.4: evict from the oldest until the entry fits; one larger than the whole table empties it. */
  private insert(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    if (size > this.limit) {
      this.evictTo(0);
      return;
    }
    this.evictTo(this.limit - size);
    if (this.count > this.mask) this.grow();
    this.first = (this.first - 1) & this.mask;
    this.names[this.first] = name;
    this.values[this.first] = value;
    this.count++;
    this.size += size;
  }

  private evictTo(size: number): void {
    while (this.size > size) {
      const slot = (this.first + this.count - 1) & this.mask;
      this.size -= this.names[slot]!.length + this.values[slot]!.length + ENTRY_OVERHEAD;
      this.names[slot] = '';
      this.values[slot] = '';
      this.count--;
    }
  }

  private grow(): void {
    const entries = this.tableEntries();
    const capacity = (this.mask + 1) * 2;
    this.names = new Array<string>(capacity).fill('');
    this.values = new Array<string>(capacity).fill('');
    entries.forEach(([name, value], k) => {
      this.names[k] = name;
      this.values[k] = value;
    });
    this.mask = capacity - 1;
    this.first = 0;
  }
}

const EMPTY = Buffer.alloc(0);

export interface HpackEncoderOptions {
  /** Huffman-code a string when that is strictly shorter (default true); false sends every string raw. */
  huffman?: boolean;
  /**
   * Index: add fields to the dynamic table (literals with incremental indexing) and send them as one
   * index afterwards. The encoder then belongs to one connection, and its blocks must reach the wire
   * in the order they were encoded. Fields whose name is in `volatile` (a value new in every block:
   * request ids, timestamps, signatures) are never added.
   */
  indexing?: {
    volatile: ReadonlySet<string>;
    /** The table size both ends start from (what the peer announced before any block). @defaultValue 4096 */
    tableSize?: number;
  };
}

/** The encoder's mirror of the peer decoder's dynamic table (RFC 7541 §2.3.2, §4). */
class EncoderTable {
  /** name → value → the insertion number of its entry. */
  private readonly byName = new Map<string, Map<string, number>>();
  private readonly entries: { name: string; value: string; size: number }[] = [];
  /** Insertion number of entries[0] (the oldest kept). */
  private oldest = 0;
  private size = 0;
  /** A size update owed to the peer at the start of the next block. */
  pendingUpdate: number | undefined;

  constructor(public maxSize: number) {}

  /** The field's index (62 for the newest entry), or undefined. */
  indexOf(name: string, value: string): number | undefined {
    const seq = this.byName.get(name)?.get(value);
    return seq === undefined ? undefined : STATIC_COUNT + this.oldest + this.entries.length - seq;
  }

  /** Whether an entry of this size can be added without emptying the table (else: do not index). */
  fits(name: string, value: string): boolean {
    return name.length + value.length + ENTRY_OVERHEAD <= this.maxSize / 2;
  }

  add(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    this.evictTo(this.maxSize - size);
    const seq = this.oldest + this.entries.length;
    this.entries.push({ name, value, size });
    this.size += size;
    let values = this.byName.get(name);
    if (!values) this.byName.set(name, (values = new Map()));
    values.set(value, seq);
  }

  /** The peer's SETTINGS_HEADER_TABLE_SIZE changed: use at most that (at most 4,096) from the next block. */
  resize(peerMax: number): void {
    const size = Math.min(peerMax, 4096);
    if (size === this.maxSize && this.pendingUpdate === undefined) return;
    this.maxSize = size;
    this.pendingUpdate = Math.min(this.pendingUpdate ?? size, size);
    this.evictTo(size);
  }

  private evictTo(limit: number): void {
    let drop = 0;
    while (this.size > limit && drop < this.entries.length) {
      const e = this.entries[drop]!;
      this.size -= e.size;
      const values = this.byName.get(e.name)!;
      if (values.get(e.value) === this.oldest + drop) values.delete(e.value);
      if (values.size === 0) this.byName.delete(e.name);
      drop++;
    }
    if (drop > 0) {
      this.entries.splice(0, drop);
      this.oldest += drop;
    }
  }
}

/** name → its first static index, and value → index for the entries with that name. */
const STATIC_BY_NAME = new Map<string, { index: number; values: Map<string, number> }>();
STATIC_TABLE.forEach(([name, value], i) => {
  let entry = STATIC_BY_NAME.get(name);
  if (entry === undefined) STATIC_BY_NAME.set(name, (entry = { index: i + 1, values: new Map() }));
  if (value !== '') entry.values.set(value, i + 1);
});

/**
 * Encodes header blocks without a dynamic table: a field in the static table is indexed, a name in it is
 * referenced from a literal without indexing, any other field is a literal without indexing. Names must
 * be lower-case (HTTP/2 requires it; the encoder does not change them).
 */
export class HpackEncoder {
  private readonly huffman: boolean;
  private readonly table: EncoderTable | undefined;
  private readonly volatile: ReadonlySet<string> | undefined;
  private scratch = Buffer.allocUnsafe(4096);
  private pos = 0;

  constructor(opts: HpackEncoderOptions = {}) {
    this.huffman = opts.huffman ?? true;
    if (opts.indexing) {
      this.table = new EncoderTable(Math.min(opts.indexing.tableSize ?? 4096, 4096));
      this.volatile = opts.indexing.volatile;
    }
  }

  /** Indexing encoders: the peer's SETTINGS_HEADER_TABLE_SIZE (a size update starts the next block). */
  setPeerTableSize(size: number): void {
    this.table?.resize(size);
  }

  /** Encodes a list of fields, or a record's own enumerable properties, in order. */
  encode(fields: Iterable<readonly [string, string]> | Record<string, string>): Buffer {
    this.pos = 0;
    const update = this.table?.pendingUpdate;
    if (update !== undefined) {
      this.table!.pendingUpdate = undefined;
      this.pos = writeInteger(this.scratch, 0, 0x20, 5, update);
    }
    if (Symbol.iterator in fields) {
      for (const [name, value] of fields as Iterable<readonly [string, string]>) this.field(name, value);
    } else {
      const record = fields as Record<string, string>;
      for (const name in record) this.field(name, record[name]!);
    }
    const block = Buffer.allocUnsafe(this.pos);
    this.scratch.copy(block, 0, 0, this.pos);
    return block;
  }

  private field(name: string, value: string): void {
    const most = 16 + name.length + value.length; // three integers of ≤ 5 bytes, then the strings
    if (this.pos + most > this.scratch.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.scratch.length * 2, this.pos + most));
      this.scratch.copy(bigger, 0, 0, this.pos);
      this.scratch = bigger;
    }
    const out = this.scratch;
    const known = STATIC_BY_NAME.get(name);
    const index = known?.values.get(value) ?? this.table?.indexOf(name, value);
    if (index !== undefined) {
      this.pos = writeInteger(out, this.pos, 0x80, 7, index);
    } else if (this.table && !this.volatile!.has(name) && this.table.fits(name, value)) {
      // §6.2.1: literal with incremental indexing, the name from the static table when it is there.
      this.pos =
        known !== undefined
          ? this.writeString(out, writeInteger(out, this.pos, 0x40, 6, known.index), value)
          : this.writeString(
              out,
              this.writeString(out, writeInteger(out, this.pos, 0x40, 6, 0), name),
              value,
            );
      this.table.add(name, value);
    } else if (known !== undefined) {
      this.pos = this.writeString(out, writeInteger(out, this.pos, 0x00, 4, known.index), value);
    } else {
      out[this.pos] = 0x00;
      this.pos = this.writeString(out, this.writeString(out, this.pos + 1, name), value);
    }
  }

  private writeString(out: Buffer, pos: number, text: string): number {
    const length = huffmanLength(text);
    if (length < 0)
      throw new RangeError(`header string has a character above U+00FF: ${JSON.stringify(text)}`);
    if (this.huffman && length < text.length) {
      return huffmanEncode(text, out, writeInteger(out, pos, 0x80, 7, length));
    }
    pos = writeInteger(out, pos, 0x00, 7, text.length);
    if (text.length > 32) return pos + out.write(text, pos, 'latin1');
    for (let i = 0; i < text.length; i++) out[pos++] = text.charCodeAt(i); // short: cheaper than a write()
    return pos;
  }
}

/** Encodes one header block with a default HpackEncoder (for blocks computed once and reused). */
export function encodeHeaderBlock(
  fields: Iterable<readonly [string, string]> | Record<string, string>,
): Buffer {
  return defaultEncoder.encode(fields);
}

const defaultEncoder = new HpackEncoder();

/** §5.1: `value` with an N-bit prefix in a first byte that also carries `flags`. */
function writeInteger(out: Buffer, pos: number, flags: number, prefixBits: number, value: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[pos++] = flags | value;
    return pos;
  }
  out[pos++] = flags | max;
  value -= max;
  while (value >= 0x80) {
    out[pos++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  out[pos++] = value;
  return pos;
}
