import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import {
  bodyCrcOf,
  checkFrame,
  decodeMessageFrame,
  decodeMessageIndexFields,
  encodeMessageFrame,
  encodePayloadFrame,
  FrameCheck,
  messageFrameUpperBound,
  MessageRecordSpans,
  RecordType,
  tagHash,
  keyHash,
  type MessageInput,
} from '../../src/store/record-codec.js';

const sample: MessageInput = {
  topic: 'OrderTopic',
  queueId: 3,
  messageId: '01A2B3C4D5E6F7000000000000000001',
  body: Buffer.from('héllo wörld — 你好'),
  tag: 'TagA',
  keys: ['order-1', 'ключ'],
  messageGroup: 'group-7',
  properties: { traceId: 'abc', 'x-ümlaut': 'ü'.repeat(100) },
  bornTimestamp: 1_700_000_000_123,
  bornHost: '10.0.0.1:5555',
  deliveryTimestamp: 1_700_000_060_000,
  reconsumeTimes: 2,
  sysFlag: 5,
};

function encode(m: MessageInput, offset = 42, storeTs = 1_700_000_000_999): Buffer {
  const buf = Buffer.alloc(messageFrameUpperBound(m));
  const len = encodeMessageFrame(buf, 0, m, offset, storeTs);
  return buf.subarray(0, len);
}

test('a message record round-trips every field, including non-ASCII text', () => {
  const frame = encode(sample);
  assert.equal(checkFrame(frame, 0, frame.length), FrameCheck.OK);
  const m = decodeMessageFrame(frame, 0, 1234);
  assert.deepEqual(
    { ...m, body: m.body.toString() },
    {
      ...sample,
      body: sample.body.toString(),
      keys: [...sample.keys!],
      properties: { ...sample.properties },
      queueOffset: 42,
      storeTimestamp: 1_700_000_000_999,
      logPosition: 1234,
      size: frame.length,
      bodyCrc: -1,
    },
  );
  const spans = new MessageRecordSpans();
  assert.ok(spans.readMessage(m), 'it holds the record it was read from');
  assert.equal(spans.buf, frame, 'that record, not a copy');
  assert.equal(spans.readMessage({ ...m }), false, 'a copy made by spreading it holds none');
  assert.equal(JSON.stringify(m).includes('"record'), false, 'nor does its JSON');
  const f = decodeMessageIndexFields(frame, 0);
  assert.deepEqual(f, {
    flags: 0,
    topic: 'OrderTopic',
    queueId: 3,
    queueOffset: 42,
    storeTimestamp: 1_700_000_000_999,
    tag: 'TagA',
    messageId: sample.messageId,
    keys: ['order-1', 'ключ'],
  });
});

test('optional fields default sensibly and large offsets survive', () => {
  const frame = encode({ topic: 'T', queueId: 0, messageId: 'id', body: Buffer.alloc(0) }, 2 ** 40 + 7, 5);
  const m = decodeMessageFrame(frame, 0, 0);
  assert.equal(m.queueOffset, 2 ** 40 + 7);
  assert.equal(m.tag, '');
  assert.deepEqual(m.keys, []);
  assert.deepEqual(m.properties, {});
  assert.equal(m.bornTimestamp, 5, 'born time defaults to the store time');
  assert.equal(m.deliveryTimestamp, 0);
  assert.equal(m.body.length, 0);
});

test('the upper bound always covers the encoding', () => {
  const frame = encode(sample);
  assert.ok(frame.length <= messageFrameUpperBound(sample));
});

test('a flipped byte anywhere in a frame is detected', () => {
  const frame = encode(sample);
  for (let i = 4; i < frame.length; i += 7) {
    const copy = Buffer.from(frame);
    copy[i] = copy[i]! ^ 0x01;
    assert.equal(checkFrame(copy, 0, copy.length), FrameCheck.CORRUPT, `flip at ${i}`);
  }
});

test('a truncated frame is incomplete, a nonsense length is corrupt', () => {
  const frame = encode(sample);
  assert.equal(checkFrame(frame, 0, frame.length - 1), FrameCheck.INCOMPLETE);
  assert.equal(checkFrame(frame, 0, 5), FrameCheck.INCOMPLETE);
  const bad = Buffer.from(frame);
  bad.writeUInt32LE(3, 0);
  assert.equal(checkFrame(bad, 0, bad.length), FrameCheck.CORRUPT);
  bad.writeUInt32LE(0xffffffff, 0);
  assert.equal(checkFrame(bad, 0, bad.length), FrameCheck.CORRUPT);
});

test('opaque payload frames carry their type', () => {
  const frame = encodePayloadFrame(RecordType.STATE, Buffer.from('state'));
  assert.equal(checkFrame(frame, 0, frame.length), FrameCheck.OK);
  assert.equal(frame[8], RecordType.STATE);
  assert.equal(frame.subarray(9).toString(), 'state');
});

test('tag hash is Java String.hashCode (RocketMQ tagsCode), 0 without a tag', () => {
  assert.equal(tagHash('hello'), 99162322);
  assert.equal(tagHash('TagA'), 2598919);
  assert.equal(
    tagHash('a-rather-long-tag-that-overflows-int32'),
    (() => {
      let h = 0;
      for (const c of 'a-rather-long-tag-that-overflows-int32') h = (h * 31 + c.charCodeAt(0)) | 0;
      return h;
    })(),
  );
  assert.equal(tagHash(''), 0);
  assert.equal(tagHash(undefined), 0);
});

test('key hash is stable and spreads similar keys', () => {
  assert.equal(keyHash('order-1'), keyHash('order-1'));
  const hashes = new Set(Array.from({ length: 10_000 }, (_, i) => keyHash(`order-${i}`)));
  assert.ok(hashes.size > 9_990);
});

test("a verified record's body CRC follows from its checksum, for any body and header", () => {
  const bodies = [
    Buffer.alloc(0),
    Buffer.from('x'),
    randomBytes(1024),
    randomBytes(70_001),
    sample.body as Buffer,
  ];
  for (const body of bodies) {
    for (const m of [
      { ...sample, body },
      { topic: 'T', queueId: 0, messageId: 'id', body },
      // A header longer than the span crc32Short takes (the header's CRC then comes from zlib).
      { ...sample, body, properties: { big: 'v'.repeat(400) } },
    ]) {
      const frame = encode(m);
      assert.equal(checkFrame(frame, 0, frame.length), FrameCheck.OK);
      const decoded = decodeMessageFrame(frame, 0, 0);
      assert.equal(decoded.bodyCrc, -1, 'unknown until a verified read derives it');
      assert.equal(
        bodyCrcOf(frame, 0, frame.length, decoded.body.length),
        crc32(body) >>> 0,
        `${body.length} bytes`,
      );
    }
  }
  // Inside a larger buffer, as the store reads runs of records.
  const a = encode(sample);
  const b = encode({ ...sample, body: randomBytes(333) });
  const run = Buffer.concat([a, b]);
  assert.equal(bodyCrcOf(run, a.length, b.length, 333), crc32(decodeMessageFrame(b, 0, 0).body) >>> 0);
});

test('the spans of a record locate each stored field without decoding it', () => {
  const frame = Buffer.concat([Buffer.alloc(11), encode(sample)]);
  const m = decodeMessageFrame(frame, 11, 0);
  const s = new MessageRecordSpans();
  assert.equal(s.read(frame, 11), true);
  const text = (at: number, length: number) => frame.toString('utf8', at, at + length);
  assert.equal(text(s.topicAt, s.topicLength), m.topic);
  assert.equal(text(s.idAt, s.idLength), m.messageId);
  assert.equal(text(s.tagAt, s.tagLength), m.tag);
  assert.equal(text(s.groupAt, s.groupLength), m.messageGroup);
  assert.equal(text(s.hostAt, s.hostLength), m.bornHost);
  const keys = Array.from({ length: s.keyCount }, (_, i) => text(s.keys[2 * i]!, s.keys[2 * i + 1]!));
  assert.deepEqual(keys, m.keys);
  const props: Record<string, string> = {};
  for (let i = 0; i < s.propertyCount; i++) {
    const p = s.properties;
    props[text(p[4 * i]!, p[4 * i + 1]!)] = text(p[4 * i + 2]!, p[4 * i + 3]!);
  }
  assert.deepEqual(props, m.properties);
  assert.ok(frame.subarray(s.bodyAt, s.bodyAt + s.bodyLength).equals(m.body));
  const many = encode({ ...sample, keys: Array.from({ length: 40 }, (_, i) => `k${i}`) });
  assert.equal(s.read(many, 0), true, 'more keys than its first arrays hold');
  assert.equal(s.keyCount, 40);
  assert.equal(s.read(encodePayloadFrame(RecordType.STATE, Buffer.from('x')), 0), false, 'not a message');
});

test('a decoded string that equals the one expected is that string; other text is decoded', () => {
  const latin = encode({ ...sample, topic: 'Ã©', bornHost: 'Ã©' });
  const utf = encode({ ...sample, topic: 'é', bornHost: 'é' });
  assert.equal(decodeMessageFrame(latin, 0, 0, 'Ã©').bornHost, 'Ã©');
  const m = decodeMessageFrame(utf, 0, 0, 'Ã©'); // the last born host decoded was "Ã©" too
  assert.equal(m.topic, 'é');
  assert.equal(m.bornHost, 'é');
  assert.equal(decodeMessageFrame(encode(sample), 0, 0, 'Other').topic, sample.topic);
});
