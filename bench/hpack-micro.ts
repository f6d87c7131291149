/**
 * Microbenchmark (not a test): HPACK decode and encode cost per header block.
 * Run: node --import tsx bench/hpack-micro.ts
 *
 * Decode: the request header blocks of 2000 AckMessage calls made by @grpc/grpc-js (what the official
 * Node client runs on: nghttp2's encoder, dynamic table and Huffman choices) with the official client's
 * metadata, captured by a raw HTTP/2 server (test/support/raw-h2.ts), then decoded in order by one
 * decoder per pass. Per call the client changes x-mq-date-time (advanced a second a call here, as if
 * each call came a second after the last), x-mq-request-id (a uuid), authorization (its signature) and
 * sometimes grpc-timeout; nghttp2 indexes the rest after the first call and never indexes authorization.
 * Encode: our response headers and trailers, Huffman where shorter and all raw.
 */
import { createHmac, randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { HpackDecoder, HpackEncoder, encodeHeaderBlock } from '../src/common/http2/hpack.js';
import { startRawH2Server } from '../test/support/raw-h2.js';

const CALLS = 2000;
const PASSES = 50;

async function captureRequestBlocks(): Promise<Buffer[]> {
  const blocks: Buffer[] = [];
  const trailersOnly = encodeHeaderBlock({
    ':status': '200',
    'content-type': 'application/grpc',
    'grpc-status': '0',
  });
  const server = await startRawH2Server({
    onHeaders: (block) => {
      blocks.push(Buffer.from(block));
      return trailersOnly;
    },
  });
  const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  const clientId = `vela-bench@${process.pid}@0@${Date.now().toString(36)}`;
  const start = Date.parse('2025-01-01T00:00:00Z');
  const id = (x: Buffer) => x;
  try {
    for (let i = 0; i < CALLS; i++) {
      const dateTime = new Date(start + i * 1000).toISOString().split('.')[0]!.replace(/[-:]/g, '') + 'Z';
      const signature = createHmac('sha1', 'bench-secret').update(dateTime).digest('hex').toUpperCase();
      const metadata = new grpc.Metadata();
      metadata.set('x-mq-protocol', 'v2');
      metadata.set('x-mq-client-id', clientId);
      metadata.set('x-mq-date-time', dateTime);
      metadata.set('x-mq-request-id', randomUUID());
      metadata.set('x-mq-language', 'HTTP'); // what rocketmq-client-nodejs 1.0.8 sends
      metadata.set('x-mq-client-version', '1.0.8');
      metadata.set(
        'authorization',
        `MQv2-HMAC-SHA1 Credential=benchAccessKey, SignedHeaders=x-mq-date-time, Signature=${signature}`,
      );
      await new Promise<void>((resolve) => {
        const deadline = Date.now() + 3000;
        const path = '/apache.rocketmq.v2.MessagingService/AckMessage';
        client.makeUnaryRequest(path, id, id, Buffer.alloc(40, 1), metadata, { deadline }, () => resolve());
      });
    }
  } finally {
    client.close();
    await server.close();
  }
  return blocks;
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

const blocks = await captureRequestBlocks();
const sample = new HpackDecoder();
for (const block of blocks.slice(0, -1)) sample.decode(block);
const last = sample.decode(blocks[blocks.length - 1]!);
const steady = blocks.slice(10).reduce((sum, b) => sum + b.length, 0) / (blocks.length - 10);
console.log(
  `captured ${blocks.length} blocks: first ${blocks[0]!.length} B, later ${steady.toFixed(1)} B on average`,
);
console.log('last block decodes to', { ...last.fields });

/** Runs `body` (which does `count` operations) `reps` times; the median wall and CPU ns per operation. */
function measure(reps: number, count: number, body: () => void): string {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const c = process.cpuUsage();
    const t = process.hrtime.bigint();
    body();
    wall.push(Number(process.hrtime.bigint() - t) / count);
    const used = process.cpuUsage(c);
    cpu.push(((used.user + used.system) * 1000) / count);
  }
  return `${median(wall).toFixed(0)} ns wall, ${median(cpu).toFixed(0)} ns CPU (median of ${reps})`;
}

let sink = 0;
const decodeAll = () => {
  for (let pass = 0; pass < PASSES; pass++) {
    const decoder = new HpackDecoder();
    for (const block of blocks) sink += decoder.decode(block).tooLarge ? 1 : 0;
  }
};
console.log(
  `decode, one decoder per pass over the blocks in order: ${measure(9, PASSES * blocks.length, decodeAll)} per block`,
);

const RESPONSE = {
  ':status': '200',
  'content-type': 'application/grpc',
  'grpc-accept-encoding': 'identity,gzip',
};
const TRAILERS = { 'grpc-status': '0' };
for (const [label, encoder] of [
  ['huffman where shorter', new HpackEncoder()],
  ['raw', new HpackEncoder({ huffman: false })],
] as const) {
  const N = 300_000;
  const sizes = [encoder.encode(RESPONSE).length, encoder.encode(TRAILERS).length];
  const both = measure(7, N, () => {
    for (let i = 0; i < N; i++) sink += encoder.encode(RESPONSE).length + encoder.encode(TRAILERS).length;
  });
  console.log(
    `encode response headers (${sizes[0]} B) + trailers (${sizes[1]} B), ${label}: ${both} for both`,
  );
}
if (sink === -1) console.log(sink);
