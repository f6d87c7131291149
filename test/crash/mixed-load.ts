/**
 * The broker crash harness: a broker runs in a child process (broker-child.ts) while this process
 * drives a mixed load through its gRPC and admin endpoints — sends, delay messages, acks, nacks,
 * changeInvisibleDuration, dead-lettering, pull + offset commits, topic and group creation, update
 * and deletion, offset resets — with a tiny journal compaction threshold so snapshots are taken all
 * the time. The child is then killed with -9, or (power-cut mode) the power goes under it
 * (power-cut-shim.ts) and only what was fsynced survives.
 *
 * Every answer the broker gave is a fact in the ledger. After each crash, a copy of the data directory
 * is opened in-process and every acknowledged fact is checked:
 *
 * - every acknowledged send is stored exactly once, byte for byte, in its topic;
 * - topic and group configs are the last acknowledged (or the one whose answer the crash cut off);
 *   deleted ones stay deleted; committed and reset offsets likewise;
 * - messages forwarded to the DLQ are in it; an acknowledged (acked) message is never delivered
 *   again; a nacked or invisible-extended message is not delivered before its time (retry schedules
 *   and invisible deadlines survive);
 * - no delay message is in its topic before its delivery time;
 * - with the clock moved two days on, draining the group delivers every message that was not acked
 *   or dead-lettered, each once, and every acknowledged delay message is in its topic, once: nothing
 *   is lost.
 *
 * Used by broker-crash.test.ts (bounded) and soak.ts (`npm run crash:soak`, `npm run crash:powerloss`).
 */
import assert from 'node:assert/strict';
import { cpSync, rmSync, renameSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Broker } from '../../src/broker/broker.js';
import { storeOf } from '../../src/internal.js';
import type { ConfigInput } from '../../src/common/config.js';
import { ManualClock } from '../../src/common/clock.js';
import { drainGroup } from './drain-group.js';
import { fromMillis } from '../../src/protocol/codec.js';
import { RawClient } from '../integration/raw-client.js';
import { bodyFor, sleep, waitExit } from '../helpers.js';

const CHILD = fileURLToPath(new URL('./broker-child.ts', import.meta.url));
const SHIM = fileURLToPath(new URL('./power-cut-shim.ts', import.meta.url));

export const TOPIC = 'CrashT';
export const GROUP = 'CrashG';
export const DELAY_TOPIC = 'CrashD';
const DELAY_QUEUES = 2;
/** gRPC `MessageType.DELAY`. */
const DELAY_TYPE = 3;
const PULL_GROUP = 'PullG';
const RESET_GROUP = 'ResetG';
const QUEUES = 4;
const RETRY_MS = 1500;
const RETRY_MAX = 2;
const OK = 20000;
const MAX_BACKLOG = 400;

/** Options of the broker under test (the child) and of the verifying broker. */
export const BROKER_OPTIONS = {
  store: {
    stateCompactBytes: 16 * 1024,
    segmentSize: 256 * 1024,
    checkpointIntervalMs: 100,
    indexFlushIntervalMs: 20,
    indexEntriesPerFile: 512,
  },
  consume: { minInvisibleMs: 50 },
} satisfies ConfigInput;

/** A message body names its message: the harness finds the original through any number of retries. */
export function bodyOf(id: string): Buffer {
  return Buffer.concat([Buffer.from(`${id}|`), bodyFor(id)]);
}
function originOf(body: Buffer | Uint8Array): string {
  const b = Buffer.from(body);
  return b.subarray(0, b.indexOf(0x7c)).toString();
}

interface Versioned<T> {
  acked: T;
  /** A change sent whose answer has not come (yet): the crash may or may not have kept it. */
  inflight?: T;
}

/** Everything the broker acknowledged. */
export class Ledger {
  readonly sent = new Set<string>();
  /** Acknowledged delay messages and when they are due. */
  readonly delayed = new Map<string, number>();
  readonly consumed = new Set<string>();
  readonly forwarded = new Set<string>();
  /** Acks and DLQ forwards sent whose answer the crash cut off: they may or may not have happened. */
  readonly unanswered = new Set<string>();
  /** Messages that must not be delivered again before this time (nacked, or invisible for longer). */
  readonly notBefore = new Map<string, number>();
  readonly topics = new Map<string, Versioned<unknown>>();
  readonly groups = new Map<string, Versioned<unknown>>();
  readonly commits = new Map<number, Versioned<number>>();
  /** Offset resets of one group, per queue: the target is only known from the answer. */
  readonly resets = new Map<number, { acked?: number; pending: boolean }>();
  /** Duplicated deliveries and dead letters seen after restarts (see `strictRedelivery`). */
  readonly duplicates: string[] = [];
  /** Messages seen with two live copies (a duplicated retry or dead letter), see `strictRedelivery`. */
  readonly duplicated = new Set<string>();
  /** Messages the last check found still to be delivered. */
  backlog = 0;
  counts = { sends: 0, delays: 0, acks: 0, nacks: 0, extends: 0, dlq: 0, commits: 0, admin: 0 };
}

/** Note a change as sent; the returned function notes it as acknowledged. */
function track<K, T>(m: Map<K, Versioned<T>>, key: K, value: T): () => void {
  const v = m.get(key);
  if (v) v.inflight = value;
  else m.set(key, { acked: undefined as T, inflight: value });
  return () => {
    const cur = m.get(key)!;
    cur.acked = value;
    delete cur.inflight;
  };
}

/** A running broker child. */
export class BrokerProcess {
  private constructor(
    readonly child: ChildProcess,
    readonly grpc: string,
    readonly http: string,
    private readonly cutDone: { wait: Promise<void> | null; resolve: (() => void) | null },
  ) {}

  static async start(dataDir: string, powerCut: boolean): Promise<BrokerProcess> {
    const args = [
      '--import',
      'tsx',
      ...(powerCut ? ['--import', SHIM] : []),
      CHILD,
      dataDir,
      JSON.stringify(BROKER_OPTIONS),
    ];
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: powerCut
        ? { ...process.env, VELA_POWER_CUT_DIR: dataDir, VELA_POWER_CUT_OUT: `${dataDir}.image` }
        : process.env,
    });
    const cut = { wait: null as Promise<void> | null, resolve: null as (() => void) | null };
    const ready = new Promise<[string, string]>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const [kind, a, b] = line.split(' ');
        if (kind === 'READY') resolve([a!, b!]);
        if (kind === 'POWER-CUT') cut.resolve?.();
      });
      child.once('exit', (code, signal) =>
        reject(new Error(`broker child exited (${code ?? signal}) before it was ready`)),
      );
    });
    const [grpc, http] = await ready;
    return new BrokerProcess(child, `127.0.0.1:${grpc}`, `http://127.0.0.1:${http}`, cut);
  }

  /** kill -9. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await waitExit(this.child);
  }

  /** Cut the power, kill the process, and put what survived in place of the data directory. */
  async powerCut(dataDir: string): Promise<void> {
    const image = `${dataDir}.image`;
    rmSync(image, { recursive: true, force: true });
    const done = new Promise<void>((r) => (this.cutDone.resolve = r));
    this.child.kill('SIGUSR2');
    await Promise.race([
      done,
      waitExit(this.child).then(() => assert.fail('broker exited before the power cut')),
    ]);
    await this.kill();
    rmSync(dataDir, { recursive: true, force: true });
    renameSync(image, dataDir);
  }
}

async function admin(http: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${http}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Create the topic and groups the load uses (once, before the first round). */
export async function setUp(b: BrokerProcess, ledger: Ledger): Promise<void> {
  await admin(b.http, 'POST', '/api/topics', { topic: TOPIC, readQueueNums: QUEUES, writeQueueNums: QUEUES });
  await admin(b.http, 'POST', '/api/groups', {
    group: GROUP,
    retryMaxTimes: RETRY_MAX,
    groupRetryPolicy: { type: 'CUSTOMIZED', customizedRetryPolicy: { next: [RETRY_MS] } },
  });
  for (const g of [PULL_GROUP, RESET_GROUP]) await admin(b.http, 'POST', '/api/groups', { group: g });
  await admin(b.http, 'POST', '/api/topics', {
    topic: DELAY_TOPIC,
    readQueueNums: DELAY_QUEUES,
    writeQueueNums: DELAY_QUEUES,
    attributes: { 'message.type': 'DELAY' },
  });
  ledger.topics.set(TOPIC, { acked: { r: QUEUES, w: QUEUES } });
}

/** Drive the mixed load until `stop` says so. Errors (the broker going away) end a worker quietly. */
export async function runLoad(
  b: BrokerProcess,
  ledger: Ledger,
  round: number,
  stop: () => boolean,
): Promise<void> {
  const clients: RawClient[] = [];
  const client = () => {
    const c = new RawClient(b.grpc);
    clients.push(c);
    return c;
  };
  const loop = async (fn: () => Promise<void>) => {
    while (!stop()) {
      try {
        await fn();
      } catch {
        if (stop()) return;
        await sleep(10);
      }
    }
  };
  let seq = 0;
  const base = { sent: ledger.sent.size, consumed: ledger.consumed.size, forwarded: ledger.forwarded.size };
  const producer = (c: RawClient, p: number) => async () => {
    // Keep the backlog bounded, so every round's checks take about as long as the first's.
    const backlog =
      ledger.backlog +
      (ledger.sent.size - base.sent) -
      (ledger.consumed.size - base.consumed) -
      (ledger.forwarded.size - base.forwarded);
    if (backlog > MAX_BACKLOG) {
      await sleep(50);
      return;
    }
    const n = 1 + Math.floor(Math.random() * 4);
    const ids = Array.from({ length: n }, () => `r${round}-p${p}-${seq++}`);
    const res = await c.send(
      TOPIC,
      ids.map((id) => ({ messageId: id, body: bodyOf(id), keys: [`k-${id}`] })),
    );
    res.entries.forEach((e: { status: { code: number } }, i: number) => {
      if (e.status.code === OK) {
        ledger.sent.add(ids[i]!);
        ledger.counts.sends++;
      }
    });
  };
  // Delay messages due 0.1–2.5 s after their send: many are due while the broker is down.
  const delayer = (c: RawClient) => async () => {
    const n = 1 + Math.floor(Math.random() * 3);
    const batch = Array.from({ length: n }, () => {
      const id = `d${round}-${seq++}`;
      return { id, due: Date.now() + 100 + Math.floor(Math.random() * 2400) };
    });
    const res = await c.send(
      DELAY_TOPIC,
      batch.map(({ id, due }) => ({
        messageId: id,
        body: bodyOf(id),
        messageType: DELAY_TYPE,
        deliveryTimestamp: due,
      })),
    );
    res.entries.forEach((e: { status: { code: number } }, i: number) => {
      if (e.status.code === OK) {
        ledger.delayed.set(batch[i]!.id, batch[i]!.due);
        ledger.counts.delays++;
      }
    });
    await sleep(30);
  };
  const simple = (c: RawClient) => async () => {
    const r = await c.receiveMessages(GROUP, TOPIC, {
      batch: 8,
      invisibleMs: 200 + Math.floor(Math.random() * 1800),
      pollMs: 200,
    });
    for (const m of r.messages) {
      const origin = originOf(m.body);
      ledger.notBefore.delete(origin);
      const handle = m.system_properties.receipt_handle as string;
      const dice = Math.random();
      const t = Date.now();
      if (dice < 0.6) {
        ledger.unanswered.add(origin);
        const res = await c.ack(GROUP, TOPIC, [handle]);
        ledger.unanswered.delete(origin);
        if (res.entries?.[0]?.status?.code === OK) {
          ledger.consumed.add(origin);
          ledger.counts.acks++;
        }
      } else if (dice < 0.75) {
        const ms = 100 + Math.floor(Math.random() * 3000);
        const res = await c.changeInvisible(GROUP, TOPIC, handle, ms);
        if (res.status?.code === OK) {
          ledger.notBefore.set(origin, t + ms);
          ledger.counts.extends++;
        }
      } else if (dice < 0.85) {
        ledger.unanswered.add(origin);
        const res = await c.unary('ForwardMessageToDeadLetterQueue', {
          group: { name: GROUP },
          topic: { name: TOPIC },
          receipt_handle: handle,
          message_id: m.system_properties.message_id,
          delivery_attempt: 1,
          max_delivery_attempts: RETRY_MAX + 1,
        });
        ledger.unanswered.delete(origin);
        if (res.status?.code === OK) {
          ledger.forwarded.add(origin);
          ledger.counts.dlq++;
        }
      }
      // Otherwise left to expire: delivered again later.
    }
  };
  const nacker = (c: RawClient) => async () => {
    const frames = await c.receive(
      {
        group: { name: GROUP },
        message_queue: { topic: { name: TOPIC }, id: 0 },
        filter_expression: { type: 1, expression: '*' },
        batch_size: 4,
        auto_renew: true,
        long_polling_timeout: fromMillis(200),
      },
      5_000,
    );
    for (const f of frames.filter((x: { message?: unknown }) => x.message)) {
      const m = f.message;
      const origin = originOf(m.body);
      ledger.notBefore.delete(origin);
      const t = Date.now();
      // A push consumer's nack: the group's retry policy decides when it comes back (never sooner).
      const res = await c.changeInvisible(GROUP, TOPIC, m.system_properties.receipt_handle, 0);
      if (res.status?.code === OK) {
        ledger.notBefore.set(origin, t + RETRY_MS);
        ledger.counts.nacks++;
      }
    }
  };
  const next = new Map<number, number>();
  const puller = (c: RawClient) => async () => {
    for (let q = 0; q < QUEUES && !stop(); q++) {
      const from = next.get(q) ?? ledger.commits.get(q)?.acked ?? 0;
      const r = await c.pull(PULL_GROUP, TOPIC, q, from, { batch: 16 });
      const to = Number(r.nextOffset);
      if (!(to > from)) continue;
      next.set(q, to);
      const done = track(ledger.commits, q, to);
      const res = await c.unary('UpdateOffset', {
        group: { name: PULL_GROUP },
        message_queue: { topic: { name: TOPIC }, id: q },
        offset: to,
      });
      if (res.status?.code === OK) {
        done();
        ledger.counts.commits++;
      }
    }
  };
  let op = 0;
  const administrator = async () => {
    const n = op++;
    const k = n % 5;
    const kind = n % 9;
    if (kind < 3) {
      const name = `CrashX_${k}`;
      const cfg = { r: 1 + (n % 8), w: 1 + ((n + 3) % 8) };
      const done = track(ledger.topics, name, cfg);
      await admin(b.http, 'POST', '/api/topics', {
        topic: name,
        readQueueNums: cfg.r,
        writeQueueNums: cfg.w,
      });
      done();
    } else if (kind === 3) {
      const name = `CrashX_${k}`;
      if (!ledger.topics.get(name)?.acked) return;
      const done = track(ledger.topics, name, null);
      await admin(b.http, 'DELETE', `/api/topics/${name}`);
      done();
    } else if (kind < 7) {
      const name = `AuxG_${k}`;
      const done = track<string, unknown>(ledger.groups, name, n % 16);
      await admin(b.http, 'POST', '/api/groups', { group: name, retryMaxTimes: n % 16 });
      done();
    } else if (kind === 7) {
      const name = `AuxG_${k}`;
      if (ledger.groups.get(name)?.acked == null) return;
      const done = track<string, unknown>(ledger.groups, name, null);
      await admin(b.http, 'DELETE', `/api/groups/${name}`);
      done();
    } else {
      const q = n % QUEUES;
      const v = ledger.resets.get(q) ?? { pending: false };
      ledger.resets.set(q, v);
      v.pending = true;
      const res = (await admin(b.http, 'POST', `/api/groups/${RESET_GROUP}/reset-offset`, {
        topic: TOPIC,
        queueId: q,
        offset: n,
      })) as { queues: { newOffset: number }[] };
      // The broker clamps the offset to what is stored: the answer says where it went.
      v.acked = res.queues[0]!.newOffset;
      v.pending = false;
    }
    ledger.counts.admin++;
  };
  try {
    await Promise.all([
      ...[0, 1, 2].map((p) => loop(producer(client(), p))),
      loop(delayer(client())),
      ...[0, 1].map(() => loop(simple(client()))),
      loop(nacker(client())),
      loop(puller(client())),
      loop(administrator),
    ]);
  } finally {
    for (const c of clients) c.close();
  }
}

/**
 * Receive everything deliverable from the group, acking it; returns the origins delivered. With a
 * clock to move, time moves on a minute whenever nothing is ready (retries become due).
 */
function drain(broker: Broker, clock?: ManualClock): Promise<string[]> {
  return drainGroup(broker, GROUP, TOPIC, {
    clock,
    // Expiries found at start are turned into retries in the background.
    onEmpty: () => sleep(50),
    pick: (m) => originOf(m.body),
  });
}

async function readAll(broker: Broker, topic: string, queues: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (let q = 0; q < queues; q++) {
    let offset = storeOf(broker).queueState(topic, q).minOffset;
    for (;;) {
      const r = await storeOf(broker).read(topic, q, offset, { maxCount: 500, maxBytes: 8 << 20 });
      assert.deepEqual(r.corruptOffsets, [], `corrupt records in ${topic}/${q}`);
      for (const m of r.messages) {
        const origin = originOf(m.body);
        assert.deepEqual(Buffer.from(m.body), bodyOf(origin), `body of ${origin} damaged`);
        seen.set(origin, (seen.get(origin) ?? 0) + 1);
      }
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
  }
  return seen;
}

/**
 * The delay topic: every copy intact, none stored before its delivery time, none twice. With `all`,
 * wait for the timer to deliver everything due and check that every acknowledged delay message is
 * there.
 */
async function checkDelayed(broker: Broker, ledger: Ledger, all: boolean): Promise<void> {
  if (all) {
    for (let i = 0; i < 400 && broker.timer.size > 0; i++) await sleep(25);
    assert.equal(broker.timer.size, 0, 'the timer delivered everything due');
  }
  const seen = new Map<string, number>();
  for (let q = 0; q < DELAY_QUEUES; q++) {
    let offset = storeOf(broker).queueState(DELAY_TOPIC, q).minOffset;
    for (;;) {
      const r = await storeOf(broker).read(DELAY_TOPIC, q, offset, { maxCount: 500, maxBytes: 8 << 20 });
      assert.deepEqual(r.corruptOffsets, [], `corrupt records in ${DELAY_TOPIC}/${q}`);
      for (const m of r.messages) {
        const id = originOf(m.body);
        assert.deepEqual(Buffer.from(m.body), bodyOf(id), `body of delay message ${id} damaged`);
        const due = ledger.delayed.get(id) ?? m.deliveryTimestamp;
        assert.ok(
          m.storeTimestamp >= due,
          `delay message ${id} delivered ${due - m.storeTimestamp} ms before its time`,
        );
        seen.set(id, (seen.get(id) ?? 0) + 1);
      }
      if (r.messages.length === 0) break;
      offset = r.nextOffset;
    }
  }
  for (const [id, n] of seen) assert.equal(n, 1, `delay message ${id} delivered ${n} times`);
  if (all) for (const id of ledger.delayed.keys()) assert.ok(seen.has(id), `delay message ${id} lost`);
}

function checkVersioned<T>(
  what: string,
  v: Versioned<T>,
  stored: T,
  same = (a: T, b: T) => assert.deepEqual(a, b),
): void {
  const ok = (x: T) => {
    try {
      same(stored, x);
      return true;
    } catch {
      return false;
    }
  };
  if (v.acked === undefined && v.inflight !== undefined) return; // never acknowledged
  assert.ok(
    ok(v.acked) || ('inflight' in v && ok(v.inflight as T)),
    `${what}: stored ${JSON.stringify(stored)}, acknowledged ${JSON.stringify(v.acked)}${'inflight' in v ? ` (in flight: ${JSON.stringify(v.inflight)})` : ''}`,
  );
}

/**
 * Check every acknowledged fact against a copy of the crashed data directory. Returns how many
 * messages a restart two days later delivers, and the duplicated deliveries and dead letters found.
 */
export async function verify(
  dataDir: string,
  ledger: Ledger,
  scratch: string,
): Promise<{ drained: number; duplicates: string[] }> {
  const T = Date.now();
  const duplicates: string[] = [];
  const againA: string[] = [];
  // Phase A: the broker restarts now.
  const copyA = `${scratch}/a`;
  rmSync(copyA, { recursive: true, force: true });
  cpSync(dataDir, copyA, { recursive: true });
  let broker = await Broker.open({ dataDir: copyA, ...BROKER_OPTIONS }, { clock: new ManualClock(T) });
  try {
    for (const [name, v] of ledger.topics) {
      const t = broker.topics.get(name);
      checkVersioned(`topic ${name}`, v, t ? { r: t.readQueueNums, w: t.writeQueueNums } : null);
    }
    for (const [name, v] of ledger.groups)
      checkVersioned(`group ${name}`, v, broker.groups.get(name)?.retryMaxTimes ?? null);
    for (const [q, v] of ledger.commits) {
      const stored = broker.offsets.get(PULL_GROUP, TOPIC, q)?.offset ?? -1;
      assert.ok(
        stored >= (v.acked ?? -1) && stored <= Math.max(v.acked ?? -1, v.inflight ?? -1),
        `committed offset of queue ${q}: stored ${stored}, acknowledged ${v.acked} (in flight ${v.inflight})`,
      );
    }
    for (const [q, v] of ledger.resets) {
      if (v.acked === undefined || v.pending) continue; // a reset in flight may have set any offset
      const stored = broker.offsets.get(RESET_GROUP, TOPIC, q)?.offset;
      assert.equal(stored, v.acked, `reset offset of queue ${q}: stored ${stored}, acknowledged ${v.acked}`);
    }
    const stored = await readAll(broker, TOPIC, QUEUES);
    for (const [id, n] of stored) assert.equal(n, 1, `${id} stored ${n} times`);
    for (const id of ledger.sent) assert.ok(stored.has(id), `acknowledged send ${id} lost`);
    await checkDelayed(broker, ledger, false);
    const dlq = await readAll(broker, `%DLQ%${GROUP}`, 1);
    for (const id of ledger.forwarded)
      assert.ok(dlq.has(id), `message ${id} forwarded to the DLQ is not there`);
    for (const [id, n] of dlq) {
      if (n > 1) {
        duplicates.push(`${id} is ${n} times in the DLQ`);
        ledger.duplicated.add(id);
      }
    }
    for (const origin of await drain(broker)) {
      if (ledger.consumed.has(origin)) againA.push(origin);
      const due = ledger.notBefore.get(origin) ?? 0;
      assert.ok(due <= T + 20, `${origin} delivered ${due - T} ms before its time`);
    }
  } finally {
    await broker.close();
    rmSync(copyA, { recursive: true, force: true });
  }
  // Phase B: the broker restarts two days later: everything not consumed is delivered, once.
  const copyB = `${scratch}/b`;
  rmSync(copyB, { recursive: true, force: true });
  cpSync(dataDir, copyB, { recursive: true });
  const later = new ManualClock(T + 2 * 86400_000);
  broker = await Broker.open({ dataDir: copyB, ...BROKER_OPTIONS }, { clock: later });
  try {
    const delivered = await drain(broker, later);
    const once = new Map<string, number>();
    for (const origin of delivered) once.set(origin, (once.get(origin) ?? 0) + 1);
    for (const [origin, n] of once) {
      if (n > 1) {
        duplicates.push(`${origin} delivered ${n} times`);
        ledger.duplicated.add(origin);
      }
    }
    // An acked message is never delivered again, unless it had a second copy (then one copy was
    // acked, and the other is the duplicate already counted).
    for (const origin of [...againA, ...delivered]) {
      if (!ledger.consumed.has(origin)) continue;
      if (!ledger.duplicated.has(origin)) assert.fail(`acked message ${origin} delivered again`);
      duplicates.push(`acked ${origin} delivered again (a second copy)`);
    }
    await checkDelayed(broker, ledger, true);
    const dlq = await readAll(broker, `%DLQ%${GROUP}`, 1);
    for (const id of ledger.sent) {
      assert.ok(
        ledger.consumed.has(id) ||
          ledger.forwarded.has(id) ||
          once.has(id) ||
          dlq.has(id) ||
          ledger.unanswered.has(id),
        `message ${id} was neither consumed, dead-lettered nor delivered: lost`,
      );
    }
    return { drained: delivered.length, duplicates };
  } finally {
    await broker.close();
    rmSync(copyB, { recursive: true, force: true });
  }
}

/** Run `rounds` crash rounds on `dataDir`; returns the ledger. */
export async function crashRounds(opts: {
  dataDir: string;
  scratch: string;
  rounds: number;
  powerCut: boolean;
  loadMs: [number, number];
  /**
   * The load runs at least until this many sends of the round are acknowledged (at most 20 s
   * more), so that a slow machine still exercises every round. @defaultValue 10
   */
  minSendsPerRound?: number;
  /**
   * Fail on a message delivered twice after a restart, or dead-lettered twice (a retry or dead letter
   * stored twice, see src/broker/consume/failure-marks.ts). With `false` they are only counted.
   * Sends are always checked exactly once. @defaultValue true
   */
  strictRedelivery?: boolean;
  log?: (line: string) => void;
}): Promise<Ledger> {
  const ledger = new Ledger();
  for (let round = 0; round < opts.rounds; round++) {
    const b = await BrokerProcess.start(opts.dataDir, opts.powerCut);
    try {
      if (round === 0) await setUp(b, ledger);
      let stopped = false;
      const load = runLoad(b, ledger, round, () => stopped);
      const sentBefore = ledger.sent.size;
      await sleep(opts.loadMs[0] + Math.random() * (opts.loadMs[1] - opts.loadMs[0]));
      for (
        let waited = 0;
        ledger.sent.size - sentBefore < (opts.minSendsPerRound ?? 10) && waited < 20_000;
        waited += 50
      )
        await sleep(50);
      if (opts.powerCut) await b.powerCut(opts.dataDir);
      else await b.kill();
      stopped = true;
      await load;
    } finally {
      if (b.child.exitCode === null && b.child.signalCode === null) await b.kill();
    }
    const { drained, duplicates } = await verify(opts.dataDir, ledger, opts.scratch);
    ledger.backlog = drained;
    if (opts.strictRedelivery ?? true)
      assert.deepEqual(duplicates, [], `round ${round}: duplicated deliveries or dead letters`);
    ledger.duplicates.push(...duplicates);
    opts.log?.(
      `round ${round}: ${JSON.stringify(ledger.counts)}; sent ${ledger.sent.size}, consumed ${ledger.consumed.size}, ` +
        `dead-lettered ${ledger.forwarded.size}; a restart two days later would deliver ${drained}` +
        (duplicates.length ? `; duplicated: ${duplicates.join(', ')}` : ''),
    );
  }
  return ledger;
}
