/**
 * The state journal's records and snapshots: every kind round-trips through one encoder and one
 * decoder, the JSON written by earlier versions decodes into the typed records (and encodes back to
 * the same JSON), damage is refused and unknown kinds are reported, not guessed at.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeStateRecord, encodeStateRecord } from '../../src/broker/state-records.js';
import {
  decodeConsumeSnapshot,
  decodeGroupsSnapshot,
  decodeOffsetsSnapshot,
  decodeTopicsSnapshot,
  encodeConsumeSnapshot,
  encodeOffsetsSnapshot,
} from '../../src/broker/state-snapshots.js';
import { isVelaError } from '../../src/common/errors.js';
import { DEFAULT_RETRY_POLICY } from '../../src/broker/retry-policy.js';

/** Records exactly as the broker wrote them before the typed codec (one line each, as on disk). */
const OLD_RECORDS = [
  '{"k":"topic","v":{"name":"T","readQueueNums":4,"writeQueueNums":4,"perm":6,"messageType":"FIFO","attributes":{"x":"y"}}}',
  '{"k":"topic-","name":"Gone"}',
  '{"k":"group","v":{"name":"G","retryMaxTimes":3,"consumeMessageOrderly":true,"consumeBroadcastEnable":true,"consumeEnable":true,"retryPolicy":{"type":"EXPONENTIAL","initial":1000,"max":60000,"multiplier":2},"fifoRetryIntervalMs":250}}',
  '{"k":"group-","name":"OldGroup"}',
  '{"k":"off","g":"G","t":"T","q":2,"o":17,"ts":1700000000123}',
  '{"k":"reset","g":"G","t":"T","q":1,"o":5,"ts":1700000000456}',
  '{"k":"off-","t":"T"}',
  '{"k":"off-","g":"G"}',
  '{"k":"dlv","g":"G","t":"T","offs":[[0,1,8],[1,3,2]],"d":[[0,1,7,123456,1,1700000060000,1,"client-1",0,"1\\u0000order-1"],[1,3,1,99,2,1700000001000,0,"client-2",0,""]],"lows":[[1,5]]}',
  '{"k":"dlv","g":"G","t":"T","d":[[0,0,3,5,2,1700000001000,0,"c",1,"0\\u0000A"]]}',
  '{"k":"done","g":"G","t":"T","items":[[0,1,7],[1,3,1]],"fifo":1,"lows":[[1,8]]}',
  '{"k":"done","g":"G","t":"T","items":[[0,0,3]]}',
  '{"k":"forget","g":"G%BROADCAST%c1","t":"T"}',
  '{"k":"rst","g":"G","t":"T","q":1,"o":0,"retry":[[0,4],[1,0]]}',
  '{"k":"txi","o":42}',
  '{"k":"txe","o":42,"r":"c"}',
  '{"k":"txe","o":43,"r":"r"}',
  '{"k":"txk","o":44,"n":3,"at":1700000000789}',
  '{"k":"user","v":{"username":"alice","password":"s3cret","userType":"Super","userStatus":"enable"}}',
  '{"k":"user-","name":"bob"}',
  '{"k":"acl","user":"alice","entries":[{"resource":"Topic:orders","actions":["Pub","Sub"],"sourceIps":["10.0.0.0/8"],"decision":"Allow"}]}',
  '{"k":"acl-","user":"alice"}',
];

test('the record of the retry topic renaming round-trips', () => {
  const line = '{"k":"retry+","m":[["G","T",[[0,3],[1,0]],[[1,1,7]]],["a_b","c",[],[]]]}';
  const rec = decodeStateRecord(JSON.parse(line));
  assert.deepEqual(rec, {
    kind: 'retryTopicsRenamed',
    moved: [
      {
        group: 'G',
        topic: 'T',
        retryNext: [
          { queueId: 0, next: 3 },
          { queueId: 1, next: 0 },
        ],
        dropped: [{ source: 1, queueId: 1, offset: 7 }],
      },
      { group: 'a_b', topic: 'c', retryNext: [], dropped: [] },
    ],
  });
  assert.deepEqual(JSON.parse(encodeStateRecord(rec!)), JSON.parse(line));
});

test('records written before the typed codec decode, and encode back to the same JSON', () => {
  for (const line of OLD_RECORDS) {
    const rec = decodeStateRecord(JSON.parse(line));
    assert.ok(rec, `decodes: ${line}`);
    assert.deepEqual(JSON.parse(encodeStateRecord(rec)), JSON.parse(line), `round trip of ${line}`);
  }
});

test('old records decode into the typed fields', () => {
  const [topic, , group, , off, reset, forgetTopic, , dlv, , done, plainDone, , rst] = OLD_RECORDS.map((l) =>
    decodeStateRecord(JSON.parse(l)),
  );
  assert.deepEqual(topic, {
    kind: 'topic',
    config: {
      name: 'T',
      readQueueNums: 4,
      writeQueueNums: 4,
      perm: 6,
      messageType: 'FIFO',
      attributes: { x: 'y' },
    },
  });
  assert.equal(group?.kind, 'group');
  assert.equal(group.kind === 'group' && group.config.fifoRetryIntervalMs, 250);
  assert.deepEqual(off, {
    kind: 'offsetCommitted',
    group: 'G',
    topic: 'T',
    queueId: 2,
    offset: 17,
    updatedAt: 1700000000123,
  });
  assert.equal(reset?.kind, 'offsetReset');
  assert.deepEqual(forgetTopic, { kind: 'offsetsForgotten', topic: 'T' });
  assert.ok(dlv?.kind === 'deliveries');
  assert.deepEqual(dlv.nextOffsets, [
    { source: 0, queueId: 1, next: 8 },
    { source: 1, queueId: 3, next: 2 },
  ]);
  assert.deepEqual(dlv.deliveries[0], {
    source: 0,
    queueId: 1,
    offset: 7,
    nonce: 123456,
    attempt: 1,
    deadline: 1700000060000,
    autoRenew: true,
    clientId: 'client-1',
    state: 0,
    fifoKey: '1\u0000order-1',
    historySeq: -1, // the delivery history is not journalled
    armed: false, // nor whether a deadline item stands for it
  });
  assert.deepEqual(dlv.fifoLows, [{ queueId: 1, low: 5 }]);
  assert.ok(done?.kind === 'settled' && done.fifo && done.settled.length === 2);
  assert.deepEqual(plainDone, {
    kind: 'settled',
    group: 'G',
    topic: 'T',
    settled: [{ source: 0, queueId: 0, offset: 3 }],
    fifo: false,
    fifoLows: [],
  });
  assert.deepEqual(rst, {
    kind: 'queueReset',
    group: 'G',
    topic: 'T',
    queueId: 1,
    offset: 0,
    retryNext: [
      { queueId: 0, next: 4 },
      { queueId: 1, next: 0 },
    ],
  });
});

test('settings missing from older topic and group records take their defaults', () => {
  const g = decodeStateRecord({ k: 'group', v: { name: 'Old', retryMaxTimes: 2 } });
  assert.ok(g?.kind === 'group');
  assert.deepEqual(g.config, {
    name: 'Old',
    retryMaxTimes: 2,
    consumeMessageOrderly: false,
    consumeBroadcastEnable: true,
    consumeEnable: true,
    retryPolicy: DEFAULT_RETRY_POLICY,
    fifoRetryIntervalMs: 1000,
  });
  const t = decodeStateRecord({ k: 'topic', v: { name: 'Old' } });
  assert.ok(t?.kind === 'topic');
  assert.deepEqual(t.config, {
    name: 'Old',
    readQueueNums: 8,
    writeQueueNums: 8,
    perm: 6,
    messageType: 'NORMAL',
    attributes: {},
  });
  // A delivery tuple from before FIFO keys.
  const d = decodeStateRecord({ k: 'dlv', g: 'G', t: 'T', d: [[0, 0, 1, 2, 1, 3, 0, 'c', 0]] });
  assert.ok(d?.kind === 'deliveries');
  assert.equal(d.deliveries[0]!.fifoKey, '');
});

test('a record of the wrong shape is refused as damage; an unknown kind is null', () => {
  for (const bad of [
    { k: 'dlv', g: 1, t: 'T', d: [] },
    { k: 'dlv', g: 'G', t: 'T', d: [[0, 0, 'x', 2, 1, 3, 0, 'c', 0, '']] },
    { k: 'dlv', g: 'G', t: 'T', d: [[7, 0, 1, 2, 1, 3, 0, 'c', 0, '']] },
    { k: 'dlv', g: 'G', t: 'T', d: [[0, 0, 1, 2, 1, 3, 0, 'c', 9, '']] },
    { k: 'done', g: 'G', t: 'T' },
    { k: 'off', g: 'G', t: 'T', q: 0.5, o: 1, ts: 1 },
    { k: 'group', v: { name: 'G', retryPolicy: { type: 'NOPE' } } },
    { k: 'topic', v: { name: 'T', messageType: 'WHATEVER' } },
    'not an object',
  ]) {
    assert.throws(
      () => decodeStateRecord(bad),
      (err) => isVelaError(err, 'STORE_CORRUPT_RECORD'),
      JSON.stringify(bad),
    );
  }
  assert.equal(decodeStateRecord({ k: 'from-the-future', x: 1 }), null);
});

test('snapshots written before the typed codec decode and encode back the same', () => {
  const consume = [
    {
      g: 'G',
      t: 'T',
      offs: [
        ['t:0', 4],
        ['r:2', 1],
      ],
      d: [[0, 0, 3, 77, 1, 1700000001000, 0, 'c', 0, '0\u0000A']],
      fifo: [[0, 2, [3]]],
    },
  ];
  const decoded = decodeConsumeSnapshot(consume);
  assert.equal(decoded.retryTopicsRenamed, false, 'a bare list: written before the + form');
  assert.deepEqual(decoded.entries[0]!.nextOffsets, [
    { source: 0, queueId: 0, next: 4 },
    { source: 1, queueId: 2, next: 1 },
  ]);
  assert.deepEqual(decoded.entries[0]!.fifo, [{ queueId: 0, low: 2, settled: [3] }]);
  assert.deepEqual(encodeConsumeSnapshot(decoded), consume);
  const renamed = encodeConsumeSnapshot({ ...decoded, retryTopicsRenamed: true });
  assert.deepEqual(renamed, { retry: '+', states: consume });
  assert.deepEqual(decodeConsumeSnapshot(renamed), { ...decoded, retryTopicsRenamed: true });
  const offsets = {
    offsets: [['G\u0000T\u00003', { offset: 9, updatedAt: 5 }]],
    resets: [['G\u0000T\u00003', 9]],
  };
  assert.deepEqual(decodeOffsetsSnapshot(offsets).offsets, [
    { group: 'G', topic: 'T', queueId: 3, offset: 9, updatedAt: 5 },
  ]);
  assert.deepEqual(encodeOffsetsSnapshot(decodeOffsetsSnapshot(offsets)), offsets);
  assert.equal(decodeTopicsSnapshot([{ name: 'A' }])[0]!.readQueueNums, 8);
  assert.equal(decodeGroupsSnapshot([{ name: 'B' }])[0]!.retryMaxTimes, 16);
  assert.throws(
    () => decodeConsumeSnapshot([{ g: 'G', t: 'T', offs: [['x:1', 2]], d: [] }]),
    (err) => isVelaError(err, 'STORE_CORRUPT_RECORD'),
  );
});
