/**
 * What a delivery's body digest costs: `node --import tsx bench/body-crc.ts`. Per body size, the CRC-32
 * of the body computed afresh (what every delivery did before) against `bodyCrcOf`, which derives it
 * from the record's checksum a verified read has just checked (record-codec.ts, crc32-shift.ts). The
 * store derives it only for bodies of `DERIVE_BODY_CRC_FROM` bytes or more, where it is the cheaper.
 */
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import {
  bodyCrcOf,
  decodeMessageFrame,
  encodeMessageFrame,
  messageFrameUpperBound,
} from '../src/store/record-codec.js';

const N = 500_000;
for (const size of [256, 1024, 4096, 16_384, 65_536]) {
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
  const body = buf.subarray(len - bodyLength, len);
  let sink = 0;
  const time = (fn: () => number): number => {
    const t = performance.now();
    for (let i = 0; i < N; i++) sink ^= fn();
    return ((performance.now() - t) * 1e6) / N;
  };
  time(() => crc32(body)); // warm-up
  time(() => bodyCrcOf(buf, 0, len, bodyLength));
  const fresh = time(() => crc32(body));
  const derived = time(() => bodyCrcOf(buf, 0, len, bodyLength));
  if (sink === -1) console.log('(never: keeps the results in use)');
  console.log(
    `${String(size).padStart(6)}-byte body: crc32 of the body ${fresh.toFixed(0).padStart(6)} ns, ` +
      `derived from the record's checksum ${derived.toFixed(0).padStart(4)} ns`,
  );
}
