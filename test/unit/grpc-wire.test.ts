import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import {
  decodeMessage,
  encodeMessage,
  formatTimeout,
  frameMessages,
  inflate,
  LimitError,
  MessageReader,
  parseTimeout,
} from '../../src/protocol/transport/grpc-wire.js';

function collect(max = 1 << 20, reserve?: (n: number) => void) {
  const got: Buffer[] = [];
  const reader = new MessageReader(max, (m) => got.push(Buffer.from(m.bytes)), reserve);
  return { got, reader };
}

test('the reader splits messages however the bytes are chunked', () => {
  const payloads = [Buffer.from('a'), Buffer.alloc(0), Buffer.alloc(70_000, 7), Buffer.from('last')];
  const wire = frameMessages(payloads);
  for (const size of [1, 2, 3, 5, 6, 4096, wire.length]) {
    const { got, reader } = collect();
    for (let i = 0; i < wire.length; i += size) reader.push(wire.subarray(i, i + size));
    assert.deepEqual(got, payloads, `chunks of ${size}`);
    assert.equal(reader.partial, false);
  }
});

test('a message over the limit is refused from its prefix, before its bytes are buffered', () => {
  const reserved: number[] = [];
  const { got, reader } = collect(1000, (n) => reserved.push(n));
  const prefix = Buffer.from([0, 0, 0x10, 0, 0]); // 1 MiB declared
  assert.throws(
    () => reader.push(prefix),
    (e: unknown) => e instanceof LimitError && e.kind === 'message-too-large',
  );
  assert.deepEqual(reserved, []);
  reader.push(Buffer.alloc(100)); // ignored after the refusal
  assert.equal(got.length, 0);
});

test('the reserve hook can refuse a message (memory budget) and sees each declared length', () => {
  const reserved: number[] = [];
  const { reader } = collect(1 << 20, (n) => {
    if (n > 10) throw new LimitError('inbound-budget', 'full');
    reserved.push(n);
  });
  reader.push(frameMessages([Buffer.from('12345')]));
  assert.deepEqual(reserved, [5]);
  assert.throws(
    () => reader.push(frameMessages([Buffer.alloc(11)])),
    (e: unknown) => e instanceof LimitError && e.kind === 'inbound-budget',
  );
});

test('an invalid compressed flag is malformed', () => {
  const { reader } = collect();
  assert.throws(
    () => reader.push(Buffer.from([2, 0, 0, 0, 0])),
    (e: unknown) => e instanceof LimitError && e.kind === 'malformed',
  );
});

test('gzip inflation stops at the limit: a bomb costs the limit, not its inflated size', async () => {
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024)); // ~64 KiB of gzip
  assert.ok(bomb.length < 100_000);
  const t0 = performance.now();
  await assert.rejects(
    inflate(bomb, 1024 * 1024),
    (e: unknown) => e instanceof LimitError && e.kind === 'message-too-large',
  );
  assert.ok(performance.now() - t0 < 2000);
  const ok = gzipSync(Buffer.from('hello'));
  assert.equal((await inflate(ok, 5)).toString(), 'hello');
  await assert.rejects(inflate(ok, 4), (e: unknown) => e instanceof LimitError);
  await assert.rejects(
    inflate(Buffer.from('not gzip'), 100),
    (e: unknown) => e instanceof LimitError && e.kind === 'malformed',
  );
});

test('grpc-timeout: every unit, at most 8 digits, malformed values refused', () => {
  assert.equal(parseTimeout('2H'), 7_200_000);
  assert.equal(parseTimeout('3M'), 180_000);
  assert.equal(parseTimeout('4S'), 4000);
  assert.equal(parseTimeout('250m'), 250);
  assert.equal(parseTimeout('1500u'), 1.5);
  assert.equal(parseTimeout('1000000n'), 1);
  assert.equal(parseTimeout(undefined), undefined);
  for (const bad of ['', '10', '123456789m', '-1S', '1.5S', '10x']) assert.throws(() => parseTimeout(bad));
  for (const ms of [0, 1, 3000, 99_999_999, 100_000_000, 2 ** 40]) {
    const v = formatTimeout(ms);
    assert.match(v, /^\d{1,8}[HMSmun]$/);
    assert.ok(parseTimeout(v)! >= ms);
  }
});

test('grpc-message is percent-encoded and decoded', () => {
  assert.equal(encodeMessage('plain text'), 'plain text');
  const odd = 'ünïcode 100% \n';
  const enc = encodeMessage(odd);
  assert.match(enc, /^[\x20-\x7e]*$/);
  assert.equal(decodeMessage(enc), odd);
});
