/** Microbenchmark (not a test): CPU cost per record of encoding + CRC, key hashing and index updates. Run: node --import tsx bench/record-codec-micro.ts */
import { encodeMessageFrame, messageFrameUpperBound, keyHash, tagHash } from '../src/store/record-codec.js';
import { QueueIndex } from '../src/store/queue-index.js';
const body = Buffer.alloc(1024, 7);
const N = 400_000;
const msgs = Array.from({ length: N }, (_, n) => ({
  topic: 'Bench',
  queueId: n & 7,
  messageId: `0A0B0C0D0E0F${n.toString(16).padStart(20, '0')}`,
  body,
  tag: 'TagA',
  keys: ['order-' + n],
}));
const buf = Buffer.allocUnsafe(1 << 30);
for (let rep = 0; rep < 3; rep++) {
  let off = 0;
  let t = performance.now();
  for (const m of msgs) {
    messageFrameUpperBound(m);
    off += encodeMessageFrame(buf, off, m, 1, 2);
  }
  const enc = ((performance.now() - t) / N) * 1000;
  t = performance.now();
  let h = 0;
  void h;
  for (const m of msgs) {
    h ^= keyHash(m.messageId) ^ keyHash(m.keys[0]!) ^ tagHash(m.tag);
  }
  const hash = ((performance.now() - t) / N) * 1000;
  const qs = Array.from({ length: 8 }, (_, i) => QueueIndex.create('B', i, '/tmp/x', 1000));
  t = performance.now();
  for (let i = 0; i < N; i++) qs[i & 7]!.add(i * 1100, 5, 1100, 3);
  const idx = ((performance.now() - t) / N) * 1000;
  console.log(
    `encode+crc ${enc.toFixed(2)} µs, hashes ${hash.toFixed(2)} µs, index add ${idx.toFixed(2)} µs`,
  );
}
