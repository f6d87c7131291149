/**
 * Retry topics of earlier versions were named `%RETRY%<group>_<topic>`, which is ambiguous (group
 * `a_b` with topic `c` and group `a` with topic `b_c` shared one, so one group's retries reached the
 * other). They are now `%RETRY%<group>+<topic>`. At the first start of this version, every retry
 * still waiting in an old retry topic is carried over to the new one of its own (group, topic) — the
 * `RETRY_TOPIC` property of each retry message says which topic it is for — and the old topics are
 * deleted. Retries that were in flight are queued again, due at once (their old receipt handles stop
 * working, so a consumer still holding one gets the message again: at least once).
 *
 * Safe to interrupt: the copies are appended first, then one journal record says where each
 * (group, topic) continues in its new retry topic (past any copies an interrupted earlier attempt
 * made), then the old topics are deleted. Runs serialized before anything is served.
 */
import type { MessageInput, StoredMessage } from '../../store/index.js';
import { RETRY_PREFIX } from '../names.js';
import type { DeliveryRef } from '../state-records.js';
import type { ConsumeContext } from './context.js';
import { Source, deliveryKey } from './delivery.js';
import {
  RETRY_QUEUES,
  RETRY_TOPIC_PROPERTY,
  isLegacyRetryTopic,
  movedRetryRecord,
  retryTopicOf,
} from './retry-records.js';

const CHUNK = 256;

interface Moved {
  group: string;
  topic: string;
  retryNext: Map<number, number>;
  dropped: DeliveryRef[];
}

export async function migrateRetryTopics(ctx: ConsumeContext): Promise<void> {
  const { store, logger } = ctx;
  const legacy = [...new Set(store.listQueues().map((q) => q.topic))].filter(isLegacyRetryTopic);
  if (ctx.retryTopicsRenamed) {
    // Renamed already; an interruption may have left old topics behind. `%RETRY%<group>` of an
    // existing group is not one of them: it is that group's Remoting retry topic (src/remoting),
    // which is created after the rename and must survive every restart.
    for (const name of legacy) {
      if (!ctx.groups.get(name.slice(RETRY_PREFIX.length))) await store.deleteTopic(name);
    }
    return;
  }
  const moved = new Map<string, Moved>();
  const entry = (group: string, topic: string): Moved => {
    const k = `${group}\u0000${topic}`;
    let m = moved.get(k);
    if (!m) moved.set(k, (m = { group, topic, retryNext: new Map(), dropped: [] }));
    return m;
  };
  /** Where each new retry queue stood before this run appended to it. */
  const base = new Map<string, number>();
  const startOf = (topic: string, queueId: number): number => {
    const k = `${topic}\u0000${queueId}`;
    let b = base.get(k);
    if (b === undefined) base.set(k, (b = store.queueState(topic, queueId).maxOffset));
    return b;
  };
  let carried = 0;
  for (const name of legacy) {
    for (let q = 0; q < RETRY_QUEUES; q++) {
      const { minOffset, maxOffset } = store.queueState(name, q);
      for (let at = minOffset; at < maxOffset;) {
        const r = await store.read(name, q, at, { maxCount: CHUNK, maxBytes: 16 * 1024 * 1024 });
        if (r.messages.length === 0) {
          at = r.nextOffset > at ? r.nextOffset : maxOffset;
          continue;
        }
        const copies: MessageInput[] = [];
        for (const m of r.messages) {
          const copy = carry(ctx, name, q, m, entry, startOf);
          if (copy) copies.push(copy);
        }
        if (copies.length > 0) await store.append(copies);
        carried += copies.length;
        at = r.nextOffset;
      }
    }
  }
  // Every (group, topic) continues in its new retry topic where this run started appending (its
  // in-flight deliveries of the old topic are dropped: they were queued again above).
  for (const s of ctx.states.values()) {
    const m = entry(s.group, s.topic);
    for (const [key, d] of s.deliveries) {
      if (d.source !== Source.RETRY) continue;
      if (!m.dropped.some((x) => deliveryKey(x.source, x.queueId, x.offset) === key))
        m.dropped.push({ source: d.source, queueId: d.queueId, offset: d.offset });
    }
  }
  for (const m of moved.values()) {
    const topic = retryTopicOf(m.group, m.topic);
    for (let q = 0; q < RETRY_QUEUES; q++) m.retryNext.set(q, startOf(topic, q));
  }
  const rec = {
    kind: 'retryTopicsRenamed' as const,
    moved: [...moved.values()].map((m) => ({
      group: m.group,
      topic: m.topic,
      retryNext: [...m.retryNext].map(([queueId, next]) => ({ queueId, next })),
      dropped: m.dropped,
    })),
  };
  // Applied by the journal once durable (consume-journal.ts), so that a snapshot taken meanwhile
  // never stands past the record without its effect.
  await ctx.journal.commit(rec);
  for (const name of legacy) await store.deleteTopic(name);
  if (legacy.length > 0) {
    logger.info(
      { oldTopics: legacy.length, retriesCarriedOver: carried },
      'retry topics renamed from %RETRY%<group>_<topic> to %RETRY%<group>+<topic>',
    );
  }
}

/**
 * The copy of one message of old retry topic `name` (queue `q`) in the new retry topic of its own
 * (group, topic), if it is still waiting or in flight; null if it was consumed already or is not
 * a retry of any (group, topic) this name stands for.
 */
function carry(
  ctx: ConsumeContext,
  name: string,
  q: number,
  m: StoredMessage,
  entry: (group: string, topic: string) => Moved,
  startOf: (topic: string, queueId: number) => number,
): MessageInput | null {
  const topic = m.properties[RETRY_TOPIC_PROPERTY];
  if (!topic || !name.endsWith(`_${topic}`)) {
    ctx.logger.warn(
      { retryTopic: name, messageId: m.messageId },
      'old retry message without its topic: dropped',
    );
    return null;
  }
  const group = name.slice(RETRY_PREFIX.length, name.length - topic.length - 1);
  const s = ctx.states.get(group, topic);
  const inFlight = s?.deliveries.get(deliveryKey(Source.RETRY, q, m.queueOffset));
  const m2 = entry(group, topic);
  const target = retryTopicOf(group, topic);
  if (inFlight) {
    m2.dropped.push({ source: Source.RETRY, queueId: q, offset: m.queueOffset });
    startOf(target, 0);
    return movedRetryRecord(m, target, 0, 0, inFlight.attempt);
  }
  if (m.queueOffset < (s?.retryNext.get(q) ?? 0)) return null; // consumed already
  startOf(target, q);
  return movedRetryRecord(m, target, q, m.deliveryTimestamp, m.reconsumeTimes);
}
