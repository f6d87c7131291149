import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeFrame,
  encodeBinaryFrame,
  encodeFrame,
  FrameDecoder,
  FrameError,
  type RemotingCommand,
} from '../../src/remoting/frame.js';
import {
  decodeBatch,
  decodeOffsetMessageId,
  decodeProperties,
  encodeMessageExt,
  encodeProperties,
  offsetMessageId,
  parseHostAddress,
} from '../../src/remoting/message-codec.js';
import { stringify, mqMap } from '../../src/remoting/fastjson.js';
import type { BrokerMessage } from '../../src/broker/message.js';

const cmd: RemotingCommand = {
  code: 310,
  language: 'JAVA',
  version: 475,
  opaque: 42,
  flag: 0,
  remark: 'hello',
  extFields: { a: 'group', b: 'topic', i: 'UNIQ_KEY\u0001X\u0002' },
  body: Buffer.from('body bytes'),
};

describe('Remoting frames', () => {
  test('a JSON frame round-trips through the stream decoder', () => {
    const frames = new FrameDecoder().push(encodeFrame(cmd));
    assert.equal(frames.length, 1);
    const back = decodeFrame(frames[0]!);
    assert.deepEqual({ ...back, body: back.body?.toString() }, { ...cmd, body: 'body bytes' });
  });

  test('a ROCKETMQ binary header decodes to the same command', () => {
    const frames = new FrameDecoder().push(encodeBinaryFrame(cmd));
    assert.deepEqual(decodeFrame(frames[0]!), decodeFrame(new FrameDecoder().push(encodeFrame(cmd))[0]!));
  });

  test('frames split anywhere and frames sharing a chunk are cut correctly', () => {
    const bytes = Buffer.concat([
      encodeFrame(cmd),
      encodeBinaryFrame({ ...cmd, opaque: 43 }),
      encodeFrame({ ...cmd, opaque: 44 }),
    ]);
    const d = new FrameDecoder();
    const out: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 7) out.push(...d.push(bytes.subarray(i, i + 7)));
    assert.deepEqual(
      out.map((f) => decodeFrame(f).opaque),
      [42, 43, 44],
    );
  });

  test('numbers and booleans in a JSON header (as ali-ons sends them) become strings', () => {
    const header = Buffer.from(
      JSON.stringify({ code: 11, opaque: 1, flag: 0, extFields: { queueId: 3, x: true } }),
    );
    const frame = Buffer.alloc(4 + header.length);
    frame.writeUInt32BE(header.length, 0);
    header.copy(frame, 4);
    assert.deepEqual(decodeFrame(frame).extFields, { queueId: '3', x: 'true' });
  });

  test('a frame longer than the limit is refused before it is buffered', () => {
    const d = new FrameDecoder(1024);
    const head = Buffer.alloc(8);
    head.writeUInt32BE(2048, 0);
    assert.throws(() => d.push(head), FrameError);
    const tiny = Buffer.alloc(4);
    tiny.writeUInt32BE(2, 0);
    assert.throws(() => new FrameDecoder().push(tiny), /too small/);
  });

  test('malformed headers are FrameErrors', () => {
    const bad = (header: Buffer, type = 0) => {
      const f = Buffer.alloc(4 + header.length);
      f.writeUInt32BE((type << 24) | header.length, 0);
      header.copy(f, 4);
      return f;
    };
    assert.throws(() => decodeFrame(bad(Buffer.from('{not json'))), FrameError);
    assert.throws(() => decodeFrame(bad(Buffer.from('[1]'))), FrameError);
    assert.throws(() => decodeFrame(bad(Buffer.from('{"opaque":1}'))), /no code/);
    assert.throws(() => decodeFrame(bad(Buffer.from([0, 1, 0]), 1)), /truncated/);
    assert.throws(() => decodeFrame(bad(Buffer.from('{}'), 7)), /serialization 7/);
    const f = Buffer.alloc(4);
    f.writeUInt32BE(100, 0);
    assert.throws(() => decodeFrame(f), /exceeds the frame/);
  });
});

describe('Remoting message codec', () => {
  test('properties use \\u0001 and \\u0002', () => {
    const s = encodeProperties({ TAGS: 'A', UNIQ_KEY: 'X', k: 'v=1' });
    assert.equal(s, 'TAGS\u0001A\u0002UNIQ_KEY\u0001X\u0002k\u0001v=1\u0002');
    assert.deepEqual(decodeProperties(s), { TAGS: 'A', UNIQ_KEY: 'X', k: 'v=1' });
  });

  test('offset message ids carry the store address and log position', () => {
    const id = offsetMessageId(parseHostAddress('10.1.2.3:9876'), 0x1_0000_0001);
    assert.equal(id, '0A01020300002694' + '0000000100000001');
    assert.deepEqual(decodeOffsetMessageId(id), { address: '10.1.2.3:9876', logPosition: 0x1_0000_0001 });
    assert.equal(decodeOffsetMessageId('01' + 'A'.repeat(32)), null);
    assert.equal(decodeOffsetMessageId('zz'), null);
  });

  test('a stored message is encoded in MessageDecoder layout', () => {
    const m: BrokerMessage = {
      topic: 'T',
      queueId: 3,
      queueOffset: 7,
      messageId: 'UNIQ1',
      body: Buffer.from('hi'),
      tag: 'TagA',
      keys: ['k1', 'k2'],
      messageGroup: '',
      properties: { user: 'u', __VELA_BODY_MD5: 'x' },
      bornTimestamp: 1000,
      bornHost: '192.168.0.9:5555',
      storeTimestamp: 2000,
      deliveryTimestamp: 0,
      reconsumeTimes: 2,
      sysFlag: 1,
      logPosition: 4096,
      size: 0,
    };
    const b = encodeMessageExt(m, parseHostAddress('127.0.0.1:9876'));
    assert.equal(b.readInt32BE(0), b.length);
    assert.equal(b.readInt32BE(4), -626843481);
    assert.equal(b.readInt32BE(12), 3);
    assert.equal(Number(b.readBigInt64BE(20)), 7);
    assert.equal(Number(b.readBigInt64BE(28)), 4096);
    assert.equal(b.readInt32BE(36), 0, 'sysFlag: plain body, IPv4 hosts');
    assert.equal(Number(b.readBigInt64BE(40)), 1000);
    assert.deepEqual([...b.subarray(48, 52)], [192, 168, 0, 9]);
    assert.equal(b.readInt32BE(52), 5555);
    assert.equal(Number(b.readBigInt64BE(56)), 2000);
    assert.deepEqual([...b.subarray(64, 68)], [127, 0, 0, 1]);
    assert.equal(b.readInt32BE(68), 9876);
    assert.equal(b.readInt32BE(72), 2, 'reconsumeTimes');
    assert.equal(b.readInt32BE(84), 2);
    assert.equal(b.toString('utf8', 88, 90), 'hi');
    assert.equal(b[90], 1);
    assert.equal(b.toString('utf8', 91, 92), 'T');
    const propsLength = b.readInt16BE(92);
    const props = decodeProperties(b.toString('utf8', 94, 94 + propsLength));
    assert.deepEqual(props, { user: 'u', TAGS: 'TagA', KEYS: 'k1 k2', UNIQ_KEY: 'UNIQ1' });
    assert.equal(94 + propsLength, b.length);
  });

  test('a batch body decodes into its messages; a corrupt one is refused', () => {
    const one = (body: string, props: string) => {
      const p = Buffer.from(props);
      const b = Buffer.alloc(20 + body.length + 2 + p.length);
      b.writeInt32BE(b.length, 0);
      b.writeInt32BE(5, 12);
      b.writeInt32BE(body.length, 16);
      b.write(body, 20);
      b.writeInt16BE(p.length, 20 + body.length);
      p.copy(b, 22 + body.length);
      return b;
    };
    const batch = decodeBatch(
      Buffer.concat([one('a', 'UNIQ_KEY\u0001A\u0002'), one('bb', 'UNIQ_KEY\u0001B\u0002')]),
    );
    assert.deepEqual(
      batch.map((e) => [e.body.toString(), e.properties.UNIQ_KEY, e.flag]),
      [
        ['a', 'A', 5],
        ['bb', 'B', 5],
      ],
    );
    const bad = one('a', 'x');
    bad.writeInt32BE(1000, 0);
    assert.throws(() => decodeBatch(bad), /out of range/);
    assert.throws(() => decodeBatch(Buffer.alloc(0)), /no message/);
  });

  test('fastjson maps keyed by message queues are written with object keys', () => {
    assert.equal(
      stringify({ offsetTable: mqMap([[{ brokerName: 'b', queueId: 0, topic: 't' }, { maxOffset: 3 }]]) }),
      '{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"maxOffset":3}}}',
    );
  });
});
