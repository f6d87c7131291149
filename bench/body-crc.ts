/**
 * What a delivery's body digest costs: `node --import tsx bench/body-crc.ts`. Per body size, the CRC-32
 * of the body computed afresh (what every delivery did before) against `bodyCrcOf`, which derives it
 * from the record's checksum a verified read has just checked (record-codec.ts, crc32-shift.ts). The
 * store derives it only for bodies of `DERIVE_BODY_CRC_FROM` bytes or more, where it is the cheaper.
 * Each row cycles through 64 records of random bodies, so the CRCs differ from call to call as they do
 * in a read (a shift's cost depends on them). A second table: the CRC of a short span (a record's
 * header) in JavaScript (crc32-short.ts) against `zlib.crc32` of its subarray.
 */
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { crc32Short } from '../src/common/crc32-short.js';
import {
  bodyCrcOf,
  decodeMessageFrame,
  encodeMessageFrame,
  messageFrameUpperBound,
} from '../src/store/record-codec.js';

const N = 500_000;
const RECORDS = 64;
let sink = 0;
const time = (fn: (i: number) => number): number => {
  const t = performance.now();
  for (let i = 0; i < N; i++) sink ^= fn(i & (RECORDS - 1));
  return ((performance.now() - t) * 1e6) / N;
};

for (const size of [128, 256, 512, 1024, 4096, 16_384, 65_536]) {
  const records = Array.from({ length: RECORDS }, () => {
    const m = {
      topic: 'BenchTopic',
      queueId: 3,
      messageId: '01AABBCCDDEEFF00112233445566778899',
      body: randomBytes(size),
      properties: { a: 'b' },
    };
    const buf = Buffer.alloc(messageFrameUpperBound(m));
    const len = encodeMessageFrame(buf, 0, m, 5, Date.now());
    const bodyLength = decodeMessageFrame(buf, 0, 0).body.length;
    return { buf, len, bodyLength, body: buf.subarray(len - bodyLength, len) };
  });
  for (const r of records)
    if (bodyCrcOf(r.buf, 0, r.len, r.bodyLength) !== crc32(r.body) >>> 0)
      throw new Error('derived CRC differs');
  const fresh = (i: number): number => crc32(records[i]!.body);
  const derived = (i: number): number => {
    const r = records[i]!;
    return bodyCrcOf(r.buf, 0, r.len, r.bodyLength);
  };
  time(fresh); // warm-up
  time(derived);
  const f = time(fresh);
  const d = time(derived);
  console.log(
    `${String(size).padStart(6)}-byte body: crc32 of the body ${f.toFixed(0).padStart(6)} ns, ` +
      `derived from the record's checksum ${d.toFixed(0).padStart(4)} ns`,
  );
}

console.log('');
const spans = Array.from({ length: RECORDS }, () => randomBytes(1024));
for (const len of [32, 64, 100, 150, 200, 256, 400]) {
  for (const s of spans)
    if (crc32Short(s, 9, 9 + len) !== crc32(s.subarray(9, 9 + len)) >>> 0)
      throw new Error('short CRC differs');
  const z = (i: number): number => crc32(spans[i]!.subarray(9, 9 + len));
  const j = (i: number): number => crc32Short(spans[i]!, 9, 9 + len);
  time(z);
  time(j);
  const zt = time(z);
  const jt = time(j);
  console.log(
    `${String(len).padStart(6)}-byte span: zlib.crc32 of a subarray ${zt.toFixed(0).padStart(4)} ns, ` +
      `crc32Short ${jt.toFixed(0).padStart(4)} ns`,
  );
}
if (sink === 0.5) console.log('(never: keeps the results in use)');
