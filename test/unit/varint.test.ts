import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { vsize, writeVarint } from '../../src/protocol/varint.js';

(protobuf.util as unknown as { Long: unknown }).Long = undefined;
protobuf.configure();

test('varints are the bytes protobufjs writes for uint64, at every length up to 2^53', () => {
  const values = [0, 1, 127, 128, 16383, 16384, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28];
  values.push(2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 35 - 1, 2 ** 35, 2 ** 42, 2 ** 49);
  values.push(2 ** 53 - 1, 1_764_000_000, 999_000_000, 123_456_789_012);
  for (const v of values) {
    const expected = Buffer.from(protobuf.Writer.create().uint64(v).finish());
    const buf = Buffer.alloc(16);
    const end = writeVarint(buf, 3, v);
    assert.deepEqual(buf.subarray(3, end), expected, `writeVarint(${v})`);
    assert.equal(vsize(v), expected.length, `vsize(${v})`);
  }
});
