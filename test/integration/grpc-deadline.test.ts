/**
 * Long client deadlines. The official Java client opens its Telemetry stream with a deadline 60 × 365
 * days away (grpc-timeout `31536000M`); a server that cannot hold such a timer must treat it as "no
 * deadline", not cancel the call at once (grpc-js ≤ 1.14.7 did: its timer wrapped to a negative delay).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { fromMillis, messagingServiceDefinition } from '../../src/protocol/codec.js';
import { sleep } from '../helpers.js';
import { startTestBroker } from './raw-client.js';
import type { RunningBroker } from '../../src/server.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

/** What the Java client sends (ClientImpl.TELEMETRY_TIMEOUT). */
const JAVA_TELEMETRY_DEADLINE_MS = 60 * 365 * 24 * 3600 * 1000;

let running: RunningBroker;
let close: () => Promise<void>;
let client: Any;
const metadata = new grpc.Metadata();
metadata.set('x-mq-client-id', 'deadline-test-client');

before(async () => {
  ({ running, close } = await startTestBroker());
  const Ctor = grpc.makeGenericClientConstructor(messagingServiceDefinition(), 'MessagingService');
  client = new Ctor(`127.0.0.1:${running.grpcPort}`, grpc.credentials.createInsecure());
});

after(async () => {
  client.close();
  await close();
});

test('a Telemetry stream with a 60×365-day deadline stays open and answers Settings', async () => {
  const call = client.Telemetry(metadata, { deadline: Date.now() + JAVA_TELEMETRY_DEADLINE_MS });
  const replies: Any[] = [];
  const errors: grpc.ServiceError[] = [];
  call.on('data', (r: Any) => replies.push(r));
  call.on('error', (e: grpc.ServiceError) => errors.push(e));
  const settings = {
    client_type: 1,
    request_timeout: fromMillis(3000),
    publishing: { topics: [], validate_message_type: true },
    user_agent: { language: 1, version: '5.2.0' },
  };
  try {
    call.write({ settings });
    for (let i = 0; i < 100 && replies.length < 1 && errors.length === 0; i++) await sleep(20);
    await sleep(300);
    call.write({ settings });
    for (let i = 0; i < 100 && replies.length < 2 && errors.length === 0; i++) await sleep(20);
    assert.deepEqual(
      errors.map((e) => `${e.code} ${e.details}`),
      [],
      'the stream was not cancelled',
    );
    assert.equal(replies.length, 2, 'both Settings were answered');
    assert.equal(replies[1].status?.code, 20000);
    assert.equal(running.broker.sessions.get('deadline-test-client')?.clientType, 'PRODUCER');
  } finally {
    call.end();
  }
});

test('a long-polling ReceiveMessage with a far deadline polls to its end instead of being cancelled', async () => {
  const topic = `DeadlineT_${process.pid}`;
  const group = `DeadlineG_${process.pid}`;
  await running.broker.topics.upsert(topic, {});
  await running.broker.groups.upsert(group, {});
  const frames: Any[] = [];
  const t = Date.now();
  await new Promise<void>((resolve, reject) => {
    const call = client.ReceiveMessage(
      {
        group: { name: group },
        message_queue: { topic: { name: topic }, id: 0 },
        filter_expression: { type: 1, expression: '*' },
        batch_size: 1,
        invisible_duration: fromMillis(10_000),
        auto_renew: false,
        long_polling_timeout: fromMillis(500),
      },
      metadata,
      { deadline: Date.now() + JAVA_TELEMETRY_DEADLINE_MS },
    );
    call.on('data', (f: Any) => frames.push(f));
    call.on('error', reject);
    call.on('end', resolve);
  });
  assert.equal(frames.find((f) => f.status)?.status.code, 40401, 'MESSAGE_NOT_FOUND after the long poll');
  assert.ok(Date.now() - t >= 450, `polled ${Date.now() - t} ms`);
});
