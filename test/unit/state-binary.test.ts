/**
 * The state journal's binary form of its two hot records: every `deliveries` and `settled` record
 * written as JSON by earlier versions comes back the same through the binary form; other kinds, and
 * values the form cannot hold, stay JSON; damage is refused, never guessed at.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeStateRecord, encodeStateRecord, type StateRecord } from '../../src/broker/state-records.js';
import { BINARY_RECORD, decodeBinaryRecord, encodeBinaryRecord } from '../../src/broker/state-binary.js';
import { isVelaError } from '../../src/common/errors.js';

const JSON_RECORDS = [
  '{"k":"dlv","g":"G","t":"T","offs":[[0,1,8],[1,3,2]],"d":[[0,1,7,123456,1,1700000060000,1,"client-1",0,"1\\u0000order-1"],[1,3,1,99,2,1700000001000,0,"client-2",0,""]],"lows":[[1,5]]}',
  '{"k":"dlv","g":"G","t":"T","d":[[0,0,3,5,2,1700000001000,0,"c",1,"0\\u0000A"]]}',
  '{"k":"dlv","g":"グループ","t":"Tópico","d":[[0,0,9007199254740991,4294967295,7,1700000001000,0,"ключ",2,""]]}',
  '{"k":"done","g":"G","t":"T","items":[[0,1,7],[1,3,1]],"fifo":1,"lows":[[1,8]]}',
  '{"k":"done","g":"G","t":"T","items":[[0,0,3]]}',
  '{"k":"done","g":"G","t":"T","items":[]}',
];

test('deliveries and settled records round-trip through the binary form as through JSON', () => {
  for (const line of JSON_RECORDS) {
    const rec = decodeStateRecord(JSON.parse(line))!;
    const bin = encodeBinaryRecord(rec);
    assert.ok(bin, line);
    assert.equal(bin![0], BINARY_RECORD);
    assert.notEqual(bin![0], '{'.charCodeAt(0), 'never mistaken for JSON');
    const back = decodeBinaryRecord(bin!);
    assert.deepEqual(back, rec, line);
    assert.equal(encodeStateRecord(back), encodeStateRecord(rec), 'and to the same JSON');
    assert.ok(bin!.length < Buffer.byteLength(line) * 1.2, `${bin!.length} bytes against ${line.length}`);
  }
});

test('other kinds, and values the binary form cannot hold, stay JSON', () => {
  const offset = decodeStateRecord(
    JSON.parse('{"k":"off","g":"G","t":"T","q":2,"o":17,"ts":1700000000123}'),
  )!;
  assert.equal(encodeBinaryRecord(offset), null);
  const base = decodeStateRecord(JSON.parse(JSON_RECORDS[0]!)) as Extract<
    StateRecord,
    { kind: 'deliveries' }
  >;
  const longClient = { ...base, deliveries: [{ ...base.deliveries[0]!, clientId: 'x'.repeat(70_000) }] };
  assert.equal(encodeBinaryRecord(longClient), null, 'a string over 65,535 bytes');
  const bigQueue = { ...base, deliveries: [{ ...base.deliveries[0]!, queueId: 2 ** 33 }] };
  assert.equal(encodeBinaryRecord(bigQueue), null, 'a queue id over 32 bits');
});

test('a damaged binary record is refused as corrupt', () => {
  const bin = encodeBinaryRecord(decodeStateRecord(JSON.parse(JSON_RECORDS[0]!))!)!;
  const damaged: Buffer[] = [
    bin.subarray(0, bin.length - 3), // cut short
    Buffer.concat([bin, Buffer.from([0])]), // bytes past the end
    Buffer.from([BINARY_RECORD, 9, 0, 0, 0, 0]), // unknown kind
  ];
  const badState = Buffer.from(bin);
  // group "G" and topic "T" (3 bytes each), then one next offset (13 bytes), the count, then a
  // delivery whose state byte sits after source, queue, offset, nonce, attempt, deadline, auto-renew.
  const stateAt = 2 + 3 + 3 + 4 + 2 * 13 + 4 + (1 + 4 + 8 + 8 + 4 + 8 + 1);
  badState[stateAt] = 7;
  damaged.push(badState);
  const badCount = Buffer.from(bin);
  badCount.writeUInt32LE(0xffff_ffff, 2 + 3 + 3);
  damaged.push(badCount);
  for (const b of damaged) {
    assert.throws(
      () => decodeBinaryRecord(b),
      (e: unknown) => isVelaError(e, 'STORE_CORRUPT_RECORD'),
    );
  }
});
