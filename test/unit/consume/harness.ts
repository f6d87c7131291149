/**
 * The consumption core's pieces over a real store and journal in a temp directory, with a manual
 * clock: time moves only when a test says so, and deadlines fire when it calls `fireDue()`.
 */
import { ManualClock } from '../../../src/common/clock.js';
import { DEFAULTS, type ConsumeSettings } from '../../../src/common/config.js';
import { silentLogger } from '../../../src/common/logger.js';
import { MessageStore, type MessageInput, type StoreOptions } from '../../../src/store/index.js';
import { GroupRegistry } from '../../../src/broker/group-registry.js';
import { TopicRegistry } from '../../../src/broker/topic-registry.js';
import { SessionRegistry } from '../../../src/broker/sessions.js';
import { ReceiptHandles } from '../../../src/broker/receipt-handle.js';
import { StateJournal, type StateParticipant } from '../../../src/broker/state-journal.js';
import { parseFilter } from '../../../src/broker/filter.js';
import { ConsumeContext } from '../../../src/broker/consume/context.js';
import { ConsumeJournal } from '../../../src/broker/consume/consume-journal.js';
import { Revive } from '../../../src/broker/consume/revive.js';
import { Pop, type Delivered, type PopRequest } from '../../../src/broker/consume/pop.js';
import { Acks } from '../../../src/broker/consume/ack.js';
import { AutoRenew } from '../../../src/broker/consume/auto-renew.js';
import { Progress } from '../../../src/broker/consume/progress.js';
import { receiptHandlesOf } from '../../../src/broker/consume/receipt.js';
import { decodeConsumeSnapshot, encodeConsumeSnapshot } from '../../../src/broker/state-snapshots.js';
import type { StateRecord } from '../../../src/broker/state-records.js';
import { tempDir } from '../../helpers.js';

export const T0 = 1_700_000_000_000;

export interface Core {
  clock: ManualClock;
  ctx: ConsumeContext;
  store: MessageStore;
  topics: TopicRegistry;
  groups: GroupRegistry;
  sessions: SessionRegistry;
  revive: Revive;
  pop: Pop;
  acks: Acks;
  autoRenew: AutoRenew;
  progress: Progress;
  records: ConsumeJournal;
  /** Pop once for (group, topic), serialized, and wait for the journal. */
  receive(group: string, topic: string, req?: Partial<PopRequest>): Promise<Delivered[]>;
  /** Append messages to the store. */
  send(messages: (Partial<MessageInput> & { topic: string })[]): Promise<void>;
  /** Move the clock and fire what is due; let batched expiries run. */
  advance(ms: number): Promise<void>;
  close(): Promise<void>;
}

let seq = 0;

export async function openCore(
  opts: {
    consume?: Partial<ConsumeSettings>;
    autoCreateGroups?: boolean;
    /** Store options (small segments, a disk-usage probe for retention tests). */
    store?: Partial<Omit<StoreOptions, 'dataDir' | 'clock' | 'logger'>>;
  } = {},
): Promise<Core> {
  const tmp = tempDir('vela-consume-');
  const dir = tmp.path;
  const clock = new ManualClock(T0);
  const logger = silentLogger();
  const store = await MessageStore.open({ ...opts.store, dataDir: `${dir}/store`, clock, logger });
  const topics = new TopicRegistry(false);
  const groups = new GroupRegistry();
  const sessions = new SessionRegistry(() => clock.now());
  const handles = await ReceiptHandles.load(dir);
  const options = {
    ...DEFAULTS.consume,
    minInvisibleMs: 0,
    ...opts.consume,
    autoCreateGroups: opts.autoCreateGroups ?? false,
  };
  // eslint-disable-next-line prefer-const
  let revive: Revive;
  const ctx = new ConsumeContext(
    { store, topics, groups, sessions, handles, options, clock, logger },
    (item, at) => revive.onDeadline(item, at),
  );
  revive = new Revive(ctx);
  const records = new ConsumeJournal(ctx);
  const participant: StateParticipant = {
    stateKey: 'consume',
    apply: (r: StateRecord) => records.apply(r),
    snapshot: () => encodeConsumeSnapshot(records.snapshot()),
    restore: (d) => records.restore(decodeConsumeSnapshot(d)),
  };
  const journal = await StateJournal.open({ dir: `${dir}/state`, flush: 'sync', logger }, [
    topics,
    groups,
    participant,
  ]);
  topics.journal = groups.journal = ctx.journal = journal;
  const pop = new Pop(ctx, (s, ds) => receiptHandlesOf(ctx, s, ds));
  const acks = new Acks(ctx, revive);
  const autoRenew = new AutoRenew(ctx, revive);
  const progress = new Progress(ctx);
  let closed = false;
  const core: Core = {
    clock,
    ctx,
    store,
    topics,
    groups,
    sessions,
    revive,
    pop,
    acks,
    autoRenew,
    progress,
    records,
    receive: async (group: string, topic: string, req: Partial<PopRequest> = {}) => {
      const t = topics.require(topic);
      const g = groups.require(group);
      const s = ctx.states.getOrCreate(group, topic);
      const r = await ctx.serialized(s, () =>
        pop.pop(s, t, g, {
          filter: parseFilter('TAG', '*'),
          batch: 32,
          invisibleMs: 10_000,
          autoRenew: false,
          clientId: 'c1',
          ...req,
        }),
      );
      await r.durable;
      return r.delivered;
    },
    send: async (messages) => {
      await store.append(
        messages.map((m) => ({
          queueId: 0,
          messageId: `M${++seq}`,
          body: Buffer.from(`body-${seq}`),
          ...m,
        })),
      );
    },
    advance: async (ms) => {
      clock.advance(ms);
      ctx.heap.fireDue();
      // Expiries are failed in a batch after the current turn, serialized: let them finish.
      await new Promise((r) => setImmediate(r));
      await ctx.drain();
    },
    close: async () => {
      if (closed) return;
      closed = true;
      ctx.timers.clear();
      ctx.heap.close();
      ctx.waiters.wakeAll();
      await ctx.drain();
      await journal.close();
      await store.close();
      tmp.cleanup();
    },
  };
  return core;
}

/** The body of a delivered message, as text. */
export const bodyOf = (d: { message: { body: Buffer } }) => d.message.body.toString();
