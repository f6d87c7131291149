/**
 * Transactional messages: half messages, EndTransaction, and orphaned-transaction checks.
 *
 * A send with a transaction stores a half message (half-records.ts) that no consumer sees, and
 * answers with a transaction id. EndTransaction COMMIT appends the message to its real topic, once;
 * ROLLBACK discards it; both are idempotent, and an end that contradicts an earlier one is refused.
 * A half message still open `checkTimeoutMs` after it was stored (or after the delay its producer
 * asked for) is orphaned: the broker asks a live producer (the one that sent it, else one that
 * publishes to its topic) through a Telemetry `RecoverOrphanedTransactionCommand`, and asks again
 * every `checkIntervalMs`; after `checkMax` checks it rolls the transaction back and logs it.
 *
 * State lives in the state journal: the open transactions (with their check counts) and the
 * half-queue offset up to which they are known. A commit writes its intent before appending the
 * copy and its end after; a restart that finds an intent without an end asks the log whether the
 * copy is there. Opening re-reads the half messages stored after the last journalled offset.
 *
 * One file on purpose: EndTransaction, the check loop, recovery and the snapshot all read and change
 * the one table of open transactions under the same ordering rules.
 */
import type { TransactionSettings } from '../../common/config.js';
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/logger.js';
import { VelaError } from '../../common/errors.js';
import { Timers } from '../../common/timers.js';
import type { AppendResult, MessageInput, MessageStore, StoredMessage } from '../../store/index.js';
import type { ClientChannels } from '../client-channels.js';
import { ClientType, type SessionRegistry } from '../sessions.js';
import type { StateJournal, StateParticipant, StateRecord } from '../state-journal.js';
import type { TopicRegistry } from '../topic-registry.js';
import { REAL_TOPIC, realQueueOf } from '../timer/schedule-records.js';
import { TransactionFigures } from '../timer/timer-figures.js';
import {
  CHECK_IMMUNITY_TIME,
  HALF_OFFSET,
  PRODUCER_CLIENT,
  HALF_TOPIC,
  checkAfterMsOf,
  commitRecord,
  decodeTransactionId,
  encodeTransactionId,
  halfRecord,
  producerOf,
  producerView,
  realTopicOf,
} from './half-records.js';

export type TransactionResolution = 'COMMIT' | 'ROLLBACK';
export type TransactionSource = 'CLIENT' | 'SERVER_CHECK' | 'UNSPECIFIED';

export interface EndTransactionRequest {
  topic: string;
  messageId: string;
  transactionId: string;
  resolution: TransactionResolution;
  source?: TransactionSource;
}

interface OpenTransaction {
  offset: number;
  position: number;
  topic: string;
  messageId: string;
  /** The producer client that sent it. */
  clientId: string;
  storedAt: number;
  /** The check delay the producer asked for (0: the broker's). */
  checkAfterMs: number;
  checks: number;
  lastCheckAt: number;
  /** A commit has begun (its intent is journalled). */
  committing: boolean;
  /** Work on this transaction, serialized. */
  busy: Promise<unknown> | null;
}

/** Journal entries about half messages not yet read back at start-up. */
interface EarlyState {
  checks?: number;
  lastCheckAt?: number;
  committing?: boolean;
  ended?: boolean;
}

type Tuple = [number, number, string, string, string, number, number, number, number, boolean];

export interface OpenTransactionsOfTopic {
  topic: string;
  open: number;
  /** Store time of the oldest open half message. */
  oldestAt: number;
}

export class TransactionService implements StateParticipant {
  readonly stateKey = 'transactions';
  journal!: StateJournal;
  private readonly open = new Map<number, OpenTransaction>();
  /** Half-queue offset below which every half message is known (open, or ended). */
  private scanned = 0;
  private readonly early = new Map<number, EarlyState>();
  private readonly timers = new Timers(() => new VelaError('STORE_CLOSED', 'the broker is closing'));
  private ticking = false;
  private closed = false;
  private producerTurn = 0;

  constructor(
    private readonly store: MessageStore,
    private readonly topics: TopicRegistry,
    private readonly sessions: SessionRegistry,
    private readonly channels: ClientChannels,
    private readonly settings: TransactionSettings,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  // ---- the send path ---------------------------------------------------------------------------------

  /** The half message to store for a transactional message (`recoveryMs`: the producer's check delay). */
  halfRecord(input: MessageInput, clientId: string, recoveryMs = 0): MessageInput {
    return halfRecord(input, clientId, Math.min(Math.max(0, recoveryMs), this.settings.maxRecoveryMs));
  }

  /** Register half messages just stored (synchronously, as their append resolves); their transaction ids. */
  prepared(records: readonly { input: MessageInput; result: AppendResult }[]): string[] {
    const now = this.clock.now();
    return records.map(({ input, result }) => {
      const p = input.properties ?? {};
      const ckSeconds = Number(p[CHECK_IMMUNITY_TIME] ?? 0);
      this.open.set(result.queueOffset, {
        offset: result.queueOffset,
        position: result.logPosition,
        topic: p[REAL_TOPIC] ?? '',
        messageId: input.messageId,
        clientId: p[PRODUCER_CLIENT] ?? '',
        storedAt: result.storeTimestamp || now,
        checkAfterMs: ckSeconds > 0 ? ckSeconds * 1000 : 0,
        checks: 0,
        lastCheckAt: 0,
        committing: false,
        busy: null,
      });
      if (result.queueOffset + 1 > this.scanned) this.scanned = result.queueOffset + 1;
      return encodeTransactionId(result.queueOffset, result.logPosition);
    });
  }

  // ---- EndTransaction -----------------------------------------------------------------------------------

  /** Commit or roll back. Idempotent; refused when it contradicts how the transaction ended. */
  async end(req: EndTransactionRequest): Promise<void> {
    const id = decodeTransactionId(req.transactionId);
    if (!id)
      throw new VelaError('INVALID_TRANSACTION_ID', `"${String(req.transactionId)}" is not a transaction id`);
    const tx = this.open.get(id.offset);
    if (tx && tx.position === id.position) {
      if (tx.messageId !== req.messageId || tx.topic !== req.topic) {
        throw new VelaError(
          'INVALID_TRANSACTION_ID',
          `transaction ${req.transactionId} is for message ${tx.messageId} of ${tx.topic}`,
        );
      }
      return this.serialized(tx, () => this.resolve(tx, req));
    }
    return this.endedAlready(id, req);
  }

  private serialized<T>(tx: OpenTransaction, fn: () => Promise<T>): Promise<T> {
    const run = (tx.busy ?? Promise.resolve()).then(fn, fn);
    const settled = run.then(
      () => {},
      () => {},
    );
    tx.busy = settled;
    void settled.then(() => {
      if (tx.busy === settled) tx.busy = null;
    });
    return run;
  }

  private async resolve(tx: OpenTransaction, req: EndTransactionRequest): Promise<void> {
    if (this.open.get(tx.offset) !== tx) return this.endedAlready(tx, req); // ended while we waited
    const source = req.source ?? 'CLIENT';
    if (req.resolution === 'ROLLBACK') {
      await this.finish(tx, 'r');
      this.logger.debug({ topic: tx.topic, messageId: tx.messageId, source }, 'transaction rolled back');
      return;
    }
    const m = await this.store.getMessage(tx.position);
    if (!m || m.topic !== HALF_TOPIC) {
      await this.finish(tx, 'r');
      throw new VelaError('INVALID_TRANSACTION_ID', `the half message of ${req.transactionId} has aged out`);
    }
    const topic = this.topics.get(tx.topic);
    if (!topic) {
      await this.finish(tx, 'r');
      throw new VelaError('TOPIC_NOT_FOUND', `${tx.topic} was deleted; the transaction is rolled back`);
    }
    tx.committing = true;
    try {
      await this.journal.append({ kind: 'txCommitting', offset: tx.offset });
      await this.store.append([commitRecord(m, realQueueOf(m, topic.writeQueueNums))]);
    } catch (err) {
      tx.committing = false;
      throw err;
    }
    await this.finish(tx, 'c');
    this.logger.debug({ topic: tx.topic, messageId: tx.messageId, source }, 'transaction committed');
  }

  private async finish(tx: OpenTransaction, how: 'c' | 'r'): Promise<void> {
    const end = how === 'c' ? 'commit' : 'rollback';
    const wasOpen = this.open.get(tx.offset) === tx;
    // Applied by the journal once durable (`apply` closes it), so that a snapshot taken meanwhile
    // never stands past the end with the transaction still open.
    await this.journal.commit({ kind: 'txEnded', offset: tx.offset, how: end });
    if (wasOpen && !this.open.has(tx.offset))
      this.figures.ended(tx.topic, end, this.clock.now() - tx.storedAt);
  }

  /** An end for a transaction that is not open: the same answer again, or a refusal. */
  private async endedAlready(
    id: { offset: number; position: number },
    req: EndTransactionRequest,
  ): Promise<void> {
    const m = id.offset < this.scanned ? await this.store.getMessage(id.position).catch(() => null) : null;
    if (
      !m ||
      m.topic !== HALF_TOPIC ||
      m.queueOffset !== id.offset ||
      m.messageId !== req.messageId ||
      realTopicOf(m) !== req.topic
    ) {
      throw new VelaError(
        'INVALID_TRANSACTION_ID',
        `no transaction ${req.transactionId} for message ${req.messageId}`,
      );
    }
    const committed = await this.wasCommitted(m);
    if (committed === (req.resolution === 'COMMIT')) return;
    throw new VelaError(
      'TRANSACTION_RESOLVED',
      `transaction ${req.transactionId} was already ${committed ? 'committed' : 'rolled back'}`,
    );
  }

  private async wasCommitted(m: StoredMessage): Promise<boolean> {
    const copies = await this.store.findById(m.messageId, { topic: realTopicOf(m), limit: 64 });
    const offset = String(m.queueOffset);
    return copies.some((c) => c.properties[HALF_OFFSET] === offset);
  }

  // ---- orphaned transactions ----------------------------------------------------------------------------

  /** Start checking orphaned transactions. */
  start(): void {
    const s = this.settings;
    const every = Math.min(1000, Math.max(10, Math.floor(Math.min(s.checkTimeoutMs, s.checkIntervalMs) / 4)));
    this.timers.interval(() => void this.tick(), every, { unref: true });
  }

  /** Check every orphaned transaction that is due (also called by tests after moving the clock). */
  async tick(): Promise<void> {
    if (this.ticking || this.closed) return;
    this.ticking = true;
    try {
      const now = this.clock.now();
      const s = this.settings;
      for (const tx of [...this.open.values()]) {
        if (tx.busy || tx.committing || this.closed) continue;
        const due =
          tx.checks === 0
            ? tx.storedAt + Math.max(s.checkTimeoutMs, tx.checkAfterMs)
            : tx.lastCheckAt + s.checkIntervalMs;
        if (due > now) continue;
        await this.serialized(tx, () => this.check(tx, now)).catch((err: unknown) =>
          this.logger.error(
            { err, topic: tx.topic, messageId: tx.messageId },
            'checking a transaction failed',
          ),
        );
      }
    } finally {
      this.ticking = false;
    }
  }

  private async check(tx: OpenTransaction, now: number): Promise<void> {
    if (this.open.get(tx.offset) !== tx || tx.committing) return;
    const transactionId = encodeTransactionId(tx.offset, tx.position);
    if (tx.checks >= this.settings.checkMax) {
      await this.finish(tx, 'r');
      this.logger.warn(
        { topic: tx.topic, messageId: tx.messageId, transactionId, checks: tx.checks },
        `orphaned transaction rolled back after ${tx.checks} unanswered checks`,
      );
      return;
    }
    const m = await this.store.getMessage(tx.position).catch(() => null);
    if (!m || m.topic !== HALF_TOPIC) {
      await this.finish(tx, 'r');
      this.logger.warn(
        { topic: tx.topic, messageId: tx.messageId, transactionId },
        'half message aged out: transaction rolled back',
      );
      return;
    }
    tx.checks++;
    tx.lastCheckAt = now;
    await this.journal.append({ kind: 'txChecked', offset: tx.offset, checks: tx.checks, at: now });
    const producer = this.producerFor(tx);
    const sent =
      producer !== undefined &&
      this.channels.send(producer, {
        kind: 'RECOVER_ORPHANED_TRANSACTION',
        message: producerView(m),
        transactionId,
      });
    this.logger.info(
      {
        topic: tx.topic,
        messageId: tx.messageId,
        transactionId,
        check: tx.checks,
        producer: sent ? producer : null,
      },
      sent
        ? 'asked a producer to resolve an orphaned transaction'
        : 'orphaned transaction: no live producer to ask',
    );
  }

  /** The live producer to ask: the one that sent the message, else one publishing to its topic. */
  private producerFor(tx: OpenTransaction): string | undefined {
    if (tx.clientId && this.channels.has(tx.clientId)) return tx.clientId;
    const candidates = this.sessions
      .list()
      .filter(
        (s) =>
          s.clientType === ClientType.PRODUCER &&
          s.topics.includes(tx.topic) &&
          this.channels.has(s.clientId),
      );
    if (candidates.length === 0) return undefined;
    return candidates[this.producerTurn++ % candidates.length]!.clientId;
  }

  // ---- status --------------------------------------------------------------------------------------------

  /** Open transactions per topic. */
  status(topic?: string): OpenTransactionsOfTopic[] {
    const by = new Map<string, OpenTransactionsOfTopic>();
    for (const tx of this.open.values()) {
      if (topic !== undefined && tx.topic !== topic) continue;
      const row = by.get(tx.topic);
      if (row) {
        row.open++;
        row.oldestAt = Math.min(row.oldestAt, tx.storedAt);
      } else by.set(tx.topic, { topic: tx.topic, open: 1, oldestAt: tx.storedAt });
    }
    return [...by.values()].sort((a, b) => a.topic.localeCompare(b.topic));
  }

  /** An open transaction, by id: its message, when it was stored, how often it was checked. */
  find(
    transactionId: string,
  ): { topic: string; messageId: string; storedAt: number; checks: number } | undefined {
    const id = decodeTransactionId(transactionId);
    const tx = id ? this.open.get(id.offset) : undefined;
    if (!tx || tx.position !== id!.position) return undefined;
    return { topic: tx.topic, messageId: tx.messageId, storedAt: tx.storedAt, checks: tx.checks };
  }

  /** Commits, rollbacks and their latency since start, per topic (metrics). */
  readonly figures = new TransactionFigures();

  get openCount(): number {
    return this.open.size;
  }

  // ---- durability ----------------------------------------------------------------------------------------

  apply(rec: StateRecord): boolean {
    switch (rec.kind) {
      case 'txCommitting': {
        const o = rec.offset;
        const tx = this.open.get(o);
        if (tx) tx.committing = true;
        else if (o >= this.scanned) this.earlyOf(o).committing = true;
        return true;
      }
      case 'txEnded': {
        const o = rec.offset;
        if (!this.open.delete(o) && o >= this.scanned) this.earlyOf(o).ended = true;
        return true;
      }
      case 'txChecked': {
        const o = rec.offset;
        const tx = this.open.get(o) ?? (o >= this.scanned ? this.earlyOf(o) : undefined);
        if (tx) {
          tx.checks = rec.checks;
          tx.lastCheckAt = rec.at;
        }
        return true;
      }
      default:
        return false;
    }
  }

  private earlyOf(o: number): EarlyState {
    let e = this.early.get(o);
    if (!e) this.early.set(o, (e = {}));
    return e;
  }

  snapshot(): unknown {
    const open: Tuple[] = [];
    for (const t of this.open.values()) {
      open.push([
        t.offset,
        t.position,
        t.topic,
        t.messageId,
        t.clientId,
        t.storedAt,
        t.checkAfterMs,
        t.checks,
        t.lastCheckAt,
        t.committing,
      ]);
    }
    return { scanned: this.scanned, open };
  }

  restore(data: unknown): void {
    const d = data as { scanned: number; open: Tuple[] };
    this.open.clear();
    this.scanned = d.scanned;
    for (const [
      offset,
      position,
      topic,
      messageId,
      clientId,
      storedAt,
      checkAfterMs,
      checks,
      lastCheckAt,
      committing,
    ] of d.open) {
      this.open.set(offset, {
        offset,
        position,
        topic,
        messageId,
        clientId,
        storedAt,
        checkAfterMs,
        checks,
        lastCheckAt,
        committing,
        busy: null,
      });
    }
  }

  /**
   * After the journal is replayed: read the half messages stored after the journalled offset, and
   * settle commits a crash interrupted.
   */
  async recover(): Promise<void> {
    let offset = this.scanned;
    let found = 0;
    for (;;) {
      const r = await this.store.read(HALF_TOPIC, 0, offset, { maxCount: 1024, maxBytes: 64 << 20 });
      if (r.status === 'OFFSET_TOO_SMALL') {
        offset = r.nextOffset;
        continue;
      }
      if (r.messages.length === 0) break;
      for (const m of r.messages) {
        const e = this.early.get(m.queueOffset);
        if (e?.ended) continue;
        this.open.set(m.queueOffset, {
          offset: m.queueOffset,
          position: m.logPosition,
          topic: realTopicOf(m),
          messageId: m.messageId,
          clientId: producerOf(m),
          storedAt: m.storeTimestamp,
          checkAfterMs: checkAfterMsOf(m),
          checks: e?.checks ?? 0,
          lastCheckAt: e?.lastCheckAt ?? 0,
          committing: e?.committing ?? false,
          busy: null,
        });
        found++;
      }
      offset = r.nextOffset;
    }
    this.scanned = Math.max(this.scanned, offset);
    this.early.clear();
    let settled = 0;
    for (const tx of [...this.open.values()]) {
      if (!tx.committing) continue;
      const m = await this.store.getMessage(tx.position).catch(() => null);
      if (m && (await this.wasCommitted(m))) {
        await this.finish(tx, 'c');
        settled++;
      } else tx.committing = false;
    }
    this.logger.info({ open: this.open.size, found, settled }, 'transactions recovered');
  }

  close(): void {
    this.closed = true;
    this.timers.clear();
  }
}
