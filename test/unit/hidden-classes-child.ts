/**
 * Run by hidden-classes.test.ts with `--allow-natives-syntax`: builds the objects that hot paths
 * make once per message or per read, the way those paths make them, and prints whether the last
 * ones built share one V8 map (hidden class). Objects that each get a map of their own make every
 * property read of them miss its inline cache (docs/benchmarks.md, "one hidden class per hot object").
 */
import { MessageStore } from '../../src/store/index.js';
import { sendMessage } from '../../src/protocol/handlers/send.js';
import { decodeRequest, encode, type } from '../../src/protocol/codec.js';
import { prepareMessage, wireOnQueue } from '../../src/client/message.js';
import { retryRecord } from '../../src/broker/consume/retry-records.js';
import type { ProduceMessage } from '../../src/broker/produce.js';
import type { Broker } from '../../src/broker/broker.js';
import type { Logger } from '../../src/common/logger.js';
import { tempDir } from '../helpers.js';

// esbuild cannot parse V8's `%` natives syntax; a Function body can.
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

/** Whether the last `n` objects share the map of the last one. */
function shareMap(objects: readonly object[], n: number): boolean {
  const last = objects.at(-1)!;
  return objects.slice(-n).every((o) => sameMap(o, last));
}

/**
 * Messages of one shape, as a benchmark or a steady application sends them. (Many shapes make V8's
 * clone cache generic, whose slow path happens to share maps: the per-object maps come from its
 * monomorphic fast path, so that is the case to check.)
 */
function wireMessages(): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < 300; i++) {
    out.push({
      topic: { resource_namespace: '', name: 'hidden-classes' },
      user_properties: {},
      system_properties: {
        keys: [],
        message_id: `0123456789ABCDEF${i}`,
        body_encoding: 1,
        message_type: 1,
        born_timestamp: { seconds: 1_764_190_000 + i, nanos: 1000 },
        born_host: 'host-1',
        queue_id: i % 4,
      },
      body: Buffer.from(`body ${i}`),
    });
  }
  return out;
}

async function sendPath(): Promise<boolean> {
  const T = type('SendMessageRequest');
  const seen: ProduceMessage[] = [];
  const broker = {
    sessions: { touch: () => {} },
    produce: {
      send: async (ms: ProduceMessage[]) => {
        seen.push(...ms);
        return ms.map((m, i) => ({ messageId: m.messageId, queueId: 0, queueOffset: i }));
      },
    },
  } as unknown as Broker;
  const logger = { warn() {}, error() {}, info() {}, debug() {} } as unknown as Logger;
  const ctx = { clientId: 'c1', namespace: '', peer: '127.0.0.1:1', connectionId: 'x', deadline: Infinity };
  const all = wireMessages();
  for (let i = 0; i < all.length; i += 10) {
    const req = decodeRequest(T, encode(T, { messages: all.slice(i, i + 10) })) as never;
    await sendMessage(broker, ctx, req, logger);
  }
  return seen.length === all.length && shareMap(seen, 100);
}

function sdkPath(): boolean {
  const out: object[] = [];
  for (let i = 0; i < 300; i++) {
    const prepared = prepareMessage({ topic: 'hidden-classes', body: `body ${i}` }, '', `ID${i}`);
    const wire = wireOnQueue(prepared.wire, i % 4);
    out.push(wire, wire.system_properties!);
  }
  const requests = out.filter((_, i) => i % 2 === 0);
  const props = out.filter((_, i) => i % 2 === 1);
  return shareMap(requests, 100) && shareMap(props, 100);
}

/** Store reads, whatever their status; and the retry records made from the messages read. */
async function storePaths(): Promise<{ storePath: boolean; retryPath: boolean }> {
  const dir = tempDir();
  const store = await MessageStore.open({ dataDir: dir.path });
  try {
    const results: object[] = [];
    const retries: object[] = [];
    for (let i = 0; i < 50; i++) {
      await store.append([
        { topic: 'hidden-classes', queueId: 0, messageId: `M${i}`, body: Buffer.from('x') },
      ]);
      const found = await store.read('hidden-classes', 0, i);
      results.push(found);
      results.push(await store.read('hidden-classes', 0, i + 1)); // NO_NEW_MESSAGE
      results.push(await store.read('hidden-classes', 0, i + 5)); // OFFSET_OVERFLOW
      for (const m of found.messages)
        retries.push(retryRecord(m, 'g', 'hidden-classes', 1, 10_000, 10_000, 'x'));
    }
    return { storePath: shareMap(results, 90), retryPath: retries.length === 50 && shareMap(retries, 30) };
  } finally {
    await store.close();
    dir.cleanup();
  }
}

const result = { sendPath: await sendPath(), sdkPath: sdkPath(), ...(await storePaths()) };
process.stdout.write(JSON.stringify(result));
