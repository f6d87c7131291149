/**
 * The Java producer compressing its bodies with LZ4 and ZSTD (`setCompressType`): the broker stores
 * them inflated, so a Remoting consumer and a gRPC consumer both get the plain body; the message
 * `flag` is kept and delivered to Remoting consumers (and not shown to gRPC ones). A batch with one
 * invalid message is refused whole.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { SimpleConsumer } from '../../src/index.js';
import { encodeProperties } from '../../src/remoting/message-codec.js';
import { ResponseCode } from '../../src/remoting/codes.js';
import { uniqueName, use } from '../support/harness.js';
import { javaBrokerSuite, runJava, type ProgramEvent } from './client-programs.js';
import { RawRemotingClient } from './raw-client.js';

const suite = javaBrokerSuite('vela-java-compress-home-');
const ns = suite.ns;

/** The bodies the `compressed` scenario sends: two of 2000 lines (compressed), one of one line. */
function expectedBody(type: string, i: number): string {
  let s = '';
  for (let l = 0; l < (i === 2 ? 1 : 2000); l++) s += `${type} body ${i} line ${l}\n`;
  return s;
}

async function receiveGrpc(topic: string, n: number) {
  const c = use(
    new SimpleConsumer({
      endpoints: suite.broker.endpoints,
      group: uniqueName('GG'),
      subscriptions: { [topic]: '*' },
      awaitDurationMs: 1000,
    }),
  );
  await c.start();
  const got = [];
  while (got.length < n) {
    const batch = await c.receive(32, 10_000);
    for (const m of batch) await c.ack(m);
    got.push(...batch);
  }
  await c.close();
  return got;
}

describe('compressed bodies and flags from the Java client', { concurrency: 2 }, () => {
  for (const type of ['LZ4', 'ZSTD']) {
    test(`${type}: stored plain, consumed over Remoting and over gRPC, flags kept`, async () => {
      const topic = uniqueName('T');
      const group = uniqueName('G');
      await suite.broker.running.broker.topics.upsert(topic, { readQueueNums: 2, writeQueueNums: 2 });
      await suite.broker.running.broker.groups.upsert(group, {});
      const ev: ProgramEvent[] = await runJava(suite.home, ['compressed', ns(), topic, group, type]);
      const sent = ev.filter((e) => e.event === 'sent');
      assert.equal(sent.length, 3);
      for (const s of sent) assert.equal(s.status, 'SEND_OK');

      const received = ev.filter((e) => e.event === 'received');
      assert.equal(received.length, 3);
      const byKey = new Map(received.map((r) => [r.keys as string, r]));
      for (let i = 0; i < 3; i++) {
        const r = byKey.get(`c-${i}`)!;
        assert.equal(r.body, expectedBody(type, i), `body ${i} over Remoting`);
        assert.equal(r.flag, 7 + i, 'the flag the producer set');
        assert.equal(r.properties && (r.properties as Record<string, string>).__VELA_FLAG, undefined);
      }
      // Stored inflated: what a gRPC consumer gets is the plain body, with no internal property.
      for (let i = 0; i < 2; i++) {
        const [stored] = await suite.broker.running.broker.findMessageById(sent[i]!.msgId as string);
        assert.equal(stored?.body.toString(), expectedBody(type, i));
      }
      const grpc = await receiveGrpc(topic, 3);
      assert.deepEqual(
        grpc.map((m) => m.body.toString()).sort(),
        [0, 1, 2].map((i) => expectedBody(type, i)).sort(),
      );
      for (const m of grpc) assert.deepEqual(Object.keys(m.properties), ['origin']);
    });
  }

  test('a batch with one invalid message stores none of it and answers the first error', async () => {
    const topic = uniqueName('T');
    await suite.broker.running.broker.topics.upsert(topic, { readQueueNums: 1, writeQueueNums: 1 });
    const record = (body: string, props: Record<string, string>, flag = 0) => {
      const bodyBuf = Buffer.from(body);
      const propBuf = Buffer.from(encodeProperties(props));
      const total = 4 + 4 + 4 + 4 + 4 + bodyBuf.length + 2 + propBuf.length;
      const r = Buffer.alloc(total);
      r.writeInt32BE(total, 0);
      r.writeInt32BE(flag, 12);
      r.writeInt32BE(bodyBuf.length, 16);
      bodyBuf.copy(r, 20);
      r.writeInt16BE(propBuf.length, 20 + bodyBuf.length);
      propBuf.copy(r, 22 + bodyBuf.length);
      return r;
    };
    const c = await RawRemotingClient.connect(suite.broker.running.remotingPort!);
    try {
      const header = {
        a: 'PG',
        b: topic,
        c: 'TBW102',
        d: 4,
        e: 0,
        f: 0,
        g: Date.now(),
        h: 0,
        i: '',
        j: 0,
        k: 'false',
        m: 'true',
      };
      const bad = await c.request(
        320,
        header,
        Buffer.concat([
          record('ok 1', { UNIQ_KEY: 'A'.repeat(32) }),
          record('', { UNIQ_KEY: 'B'.repeat(32) }), // empty body
          record('ok 3', { UNIQ_KEY: 'C'.repeat(32), TAGS: 'a|b' }), // illegal tag
        ]),
      );
      assert.equal(bad.code, ResponseCode.MESSAGE_ILLEGAL);
      assert.match(bad.remark ?? '', /empty/i, 'the first error');
      assert.equal(
        suite.broker.running.broker.queueState(topic, 0).maxOffset,
        0,
        'nothing of the batch stored',
      );

      const good = await c.request(
        320,
        header,
        Buffer.concat([
          record('ok 1', { UNIQ_KEY: 'D'.repeat(32) }, 42),
          record('ok 2', { UNIQ_KEY: 'E'.repeat(32) }),
        ]),
      );
      assert.equal(good.code, ResponseCode.SUCCESS);
      assert.equal(suite.broker.running.broker.queueState(topic, 0).maxOffset, 2);
      const group = uniqueName('G');
      await suite.broker.running.broker.groups.upsert(group, {});
      const pulled = await c.request(11, {
        consumerGroup: group,
        topic,
        queueId: 0,
        queueOffset: 0,
        maxMsgNums: 32,
        sysFlag: 0x4,
        commitOffset: 0,
        suspendTimeoutMillis: 0,
        subscription: '*',
        subVersion: 0,
        expressionType: 'TAG',
      });
      assert.equal(pulled.code, ResponseCode.SUCCESS);
      // The first record's flag (offset 16 of the MessageDecoder layout) is the batch entry's.
      assert.equal(pulled.body!.readInt32BE(16), 42);
    } finally {
      await c.close();
    }
  });
});
