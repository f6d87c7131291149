/**
 * Randomized FIFO stress (issue 10 §1): many message groups, consumers joining and leaving, random
 * processing times, random failures (nacks and consumers that never answer), a broker restart in the
 * middle. Checked afterwards, per message group:
 *
 *   - every delivery of message k came before every delivery of message k + 1, and when k was acked,
 *     its ack was sent before k + 1 was first delivered (so nothing overtook an unsettled message);
 *   - every message was acked exactly once or is in the group's DLQ, none both, none missing, and the
 *     broker agrees that nothing is left (no lag, nothing in flight or held).
 *
 * `npm test` runs a bounded version (test/integration/fifo-stress.test.ts); `npm run stress:fifo`
 * runs a longer one:
 *
 *   npm run stress:fifo -- [--groups 200] [--per-group 40] [--consumers 8] [--restarts 2]
 *                          [--nack-rate 0.05] [--drop-rate 0.03] [--retry-max-times 2] [--seed 7]
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startBroker, type RunningBroker } from '../../src/server.js';
import { tempDir } from '../helpers.js';
import { RawClient } from '../integration/raw-client.js';
import { rng as prng } from '../support/rng.js';

export interface FifoStressOptions {
  /** Message groups. */
  groups: number;
  perGroup: number;
  /** Consumers at once; each leaves after a while and another joins. */
  consumers: number;
  /** Broker restarts while consuming (sends pause around them). */
  restarts: number;
  /** Share of deliveries the consumer nacks, and share it never answers (it "crashes"). */
  nackRate: number;
  dropRate: number;
  /** The group's retryMaxTimes: a message gets this + 1 deliveries, then goes to the DLQ. */
  retryMaxTimes: number;
  /** Give up after this long. */
  timeoutMs: number;
  seed: number;
  log?: (line: string) => void;
}

export const BOUNDED: FifoStressOptions = {
  groups: 6,
  perGroup: 24,
  consumers: 5,
  restarts: 1,
  nackRate: 0.08,
  dropRate: 0.05,
  retryMaxTimes: 1,
  timeoutMs: 25_000,
  seed: 1,
};

export interface FifoStressReport {
  messages: number;
  deliveries: number;
  acked: number;
  /** Acks whose answer the restart cut off. */
  uncertainAcks: number;
  deadLettered: number;
  restarts: number;
  consumersStarted: number;
  ms: number;
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Delivery {
  seq: number;
  at: number;
}

export async function runFifoStress(o: FifoStressOptions): Promise<FifoStressReport> {
  const rnd = prng(o.seed);
  const log = o.log ?? (() => {});
  const dir = tempDir('vela-fifo-stress-');
  const topic = 'FifoStress';
  const group = 'FifoStressG';
  const settings = {
    dataDir: dir.path,
    httpPort: 0,
    remotingPort: 0,
    consume: { minInvisibleMs: 50, maxPollMs: 300 },
    shutdownGraceMs: 200,
  };
  let running: RunningBroker = await startBroker({ ...settings, grpcPort: 0 });
  const port = running.grpcPort;
  const address = `127.0.0.1:${port}`;
  const t0 = now();
  let restarting: Promise<void> | null = null;
  let stop = false;
  let consumersStarted = 0;
  const deliveries = new Map<string, Delivery[]>();
  const acks = new Map<string, { seq: number; sentAt: number }[]>();
  /** Acks cut off by the restart: they may or may not have been applied. */
  const uncertain = new Set<string>();
  try {
    await running.broker.topics.upsert(topic, {
      readQueueNums: 4,
      writeQueueNums: 4,
      attributes: { 'message.type': 'FIFO' },
    });
    await running.broker.groups.upsert(group, {
      consumeMessageOrderly: true,
      retryMaxTimes: o.retryMaxTimes,
      fifoRetryIntervalMs: 30,
    });
    const groups = Array.from({ length: o.groups }, (_, i) => `g${i}`);
    for (const g of groups) {
      deliveries.set(g, []);
      acks.set(g, []);
    }
    const total = o.groups * o.perGroup;

    /** Sends never overlap a restart (a send cut off by it might or might not be stored). */
    let producer = new RawClient(address);
    /** Sends are never in flight across a restart; a channel still connecting after one is retried. */
    const sendOne = async (g: string, seq: number) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await producer.send(topic, [
            { messageType: 2, messageGroup: g, messageId: `${g}-${seq}`, body: Buffer.from(`${g}#${seq}`) },
          ]);
        } catch (err) {
          if ((err as { code?: number }).code !== 14 || attempt >= 50) throw err;
          await sleep(100);
        }
      }
    };
    /**
     * Send seqs [from, to) of every group: bursts of a few consecutive messages of one group at a
     * time, a millisecond or so apart, while consumers consume, so that a group's new messages meet
     * its held ones and its acks.
     */
    const sendRange = async (from: number, to: number) => {
      const next = new Map(groups.map((g) => [g, from]));
      while (next.size > 0) {
        const g = [...next.keys()][Math.floor(rnd() * next.size)]!;
        const burst = 1 + Math.floor(rnd() * 4);
        for (let i = 0; i < burst && next.has(g); i++) {
          const seq = next.get(g)!;
          const r = await sendOne(g, seq);
          assert.equal(r.status.code, 20000, `send ${g}#${seq}: ${JSON.stringify(r.status)}`);
          if (seq + 1 >= to) next.delete(g);
          else next.set(g, seq + 1);
          if (rnd() < 0.5) await sleep(1);
        }
      }
    };

    const settled = () => [...acks.values()].reduce((a, x) => a + x.length, 0);
    const accounted = (dead: readonly string[]) => {
      const all = new Set([...uncertain, ...dead]);
      for (const [g, xs] of acks) for (const a of xs) all.add(`${g}#${a.seq}`);
      return all.size;
    };
    const consumer = async (id: number) => {
      consumersStarted++;
      let client = new RawClient(address, `stress-${id}-${consumersStarted}`);
      const life = 5 + Math.floor(rnd() * 30); // receives before it leaves
      const walkOut = rnd() < 0.3; // leaves in the middle of its last batch, leaving it to expire
      try {
        for (let n = 0; n < life && !stop; n++) {
          if (restarting) await restarting;
          let messages;
          try {
            ({ messages } = await client.receiveMessages(group, topic, {
              batch: 1 + Math.floor(rnd() * 6),
              invisibleMs: 150 + Math.floor(rnd() * 250),
              pollMs: 200,
            }));
          } catch {
            // The broker is restarting: a new channel reconnects faster than a backed-off one.
            client.close();
            client = new RawClient(address, `stress-${id}-${consumersStarted}`);
            await sleep(50);
            continue;
          }
          for (const [i, m] of messages.entries()) {
            if (walkOut && n === life - 1 && i > 0) break;
            const [g, s] = (m.body.toString() as string).split('#') as [string, string];
            const seq = Number(s);
            deliveries.get(g)!.push({ seq, at: now() });
            const handle = m.system_properties.receipt_handle as string;
            const roll = rnd();
            if (roll < o.dropRate) continue; // never answered: it expires
            await sleep(Math.floor(rnd() * 12));
            try {
              if (roll < o.dropRate + o.nackRate) {
                await client.changeInvisible(group, topic, handle, 0);
              } else {
                const sentAt = now();
                const r = await client.ack(group, topic, [handle]);
                if (r.entries?.[0]?.status?.code === 20000) acks.get(g)!.push({ seq, sentAt });
              }
            } catch {
              // Cut off by the restart: applied or not, the broker decides (checked at the end).
              if (roll >= o.dropRate + o.nackRate) uncertain.add(`${g}#${seq}`);
            }
          }
        }
      } finally {
        client.close();
      }
    };

    /** Keep `o.consumers` running, replacing those that leave, until told to stop. */
    const pool = (async () => {
      let next = 0;
      const live = new Set<Promise<void>>();
      while (!stop) {
        while (live.size < o.consumers) {
          const p: Promise<void> = consumer(next++).finally(() => live.delete(p));
          live.add(p);
        }
        await Promise.race(live);
      }
      await Promise.all(live);
    })();

    /** The DLQ's bodies, every page. */
    const deadLetters = async (): Promise<string[]> => {
      const out: string[] = [];
      for (let offset = 0; ;) {
        const page = await running.broker.deadLetters(group, offset, 1000);
        out.push(...page.messages.map((m) => m.body.toString()));
        if (page.messages.length === 0 || page.nextOffset >= page.maxOffset) return out;
        offset = page.nextOffset;
      }
    };
    const lag = () => running.broker.consume.progress(group, topic).reduce((a, q) => a + q.lag, 0);

    const restart = async () => {
      log(`restart at ${Math.round(now() - t0)} ms, ${settled()} acked`);
      await running.close();
      running = await startBroker({ ...settings, grpcPort: port });
    };

    const chunk = Math.ceil(o.perGroup / (o.restarts + 1));
    for (let r = 0, seq = 0; r <= o.restarts; r++) {
      const to = Math.min(o.perGroup, seq + chunk);
      await sendRange(seq, to);
      seq = to;
      if (r < o.restarts) {
        // Restart while consumers are at work: once most of what was sent is acked, some of the rest
        // is still in flight, held or waiting for retry.
        const target = Math.floor(o.groups * to * 0.8);
        const until = now() + o.timeoutMs / 4;
        while (settled() < target && now() < until) await sleep(20);
        restarting = restart();
        await restarting;
        restarting = null;
        producer.close();
        producer = new RawClient(address);
      }
    }
    producer.close();

    // Until the broker has nothing left for the group and every message is accounted for.
    const deadline = t0 + o.timeoutMs;
    while (now() < deadline && !(lag() === 0 && accounted(await deadLetters()) >= total)) await sleep(100);
    stop = true;
    await pool;

    // --- checks ---------------------------------------------------------------------------------
    assert.equal(lag(), 0, `the broker still has ${lag()} messages of the group (lag, in flight or held)`);
    const dlq = await deadLetters();
    const inDlq = new Set(dlq);
    assert.equal(inDlq.size, dlq.length, 'no message dead-lettered twice');
    let deliveryCount = 0;
    for (const g of groups) {
      const ds = deliveries.get(g)!;
      deliveryCount += ds.length;
      const first = new Map<number, number>();
      const last = new Map<number, number>();
      for (const d of ds) {
        if (!first.has(d.seq)) first.set(d.seq, d.at);
        last.set(d.seq, d.at);
      }
      for (let k = 0; k + 1 < o.perGroup; k++) {
        const f = first.get(k + 1);
        if (f === undefined) continue;
        assert.ok(last.has(k), `${g}#${k + 1} was delivered but ${g}#${k} never was`);
        assert.ok(last.get(k)! <= f, `${g}#${k} was delivered again after ${g}#${k + 1} went out`);
      }
      const acked = acks.get(g)!;
      const ackedSeqs = acked.map((a) => a.seq);
      assert.equal(new Set(ackedSeqs).size, ackedSeqs.length, `${g}: a message acked twice`);
      for (const a of acked) {
        const f = first.get(a.seq + 1);
        if (f !== undefined)
          assert.ok(a.sentAt <= f, `${g}#${a.seq + 1} went out before ${g}#${a.seq} was acked`);
      }
      for (let k = 0; k < o.perGroup; k++) {
        const isAcked = ackedSeqs.includes(k) || uncertain.has(`${g}#${k}`);
        const isDead = inDlq.has(`${g}#${k}`);
        assert.ok(isAcked || isDead, `${g}#${k} was neither consumed nor dead-lettered`);
        assert.ok(!(ackedSeqs.includes(k) && isDead), `${g}#${k} was both consumed and dead-lettered`);
      }
    }
    return {
      messages: total,
      deliveries: deliveryCount,
      acked: settled(),
      uncertainAcks: uncertain.size,
      deadLettered: dlq.length,
      restarts: o.restarts,
      consumersStarted,
      ms: Math.round(now() - t0),
    };
  } finally {
    stop = true;
    await running.close().catch(() => {});
    dir.cleanup();
  }
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const options: FifoStressOptions = {
    groups: arg('groups', 200),
    perGroup: arg('per-group', 40),
    consumers: arg('consumers', 8),
    restarts: arg('restarts', 2),
    nackRate: arg('nack-rate', 0.05),
    dropRate: arg('drop-rate', 0.03),
    retryMaxTimes: arg('retry-max-times', 2),
    timeoutMs: arg('timeout-ms', 600_000),
    seed: arg('seed', Date.now() % 100_000),
    log: (l) => console.log(l),
  };
  console.log(`fifo stress: ${JSON.stringify({ ...options, log: undefined })}`);
  try {
    const report = await runFifoStress(options);
    console.log(`fifo stress passed: ${JSON.stringify(report)}`);
    process.exit(0);
  } catch (err) {
    console.error(`fifo stress FAILED (seed ${options.seed}):`, err);
    process.exit(1);
  }
}
