/**
 * A producer transaction (RocketMQ's transactional messages, the outbox pattern): messages sent
 * through it are stored by the broker as half messages that no consumer sees until `commit()`;
 * `rollback()` discards them. Do the local work between `send` and `commit`; if the producer dies
 * before ending the transaction, the broker later asks a producer's `checker` what became of it.
 *
 * Each message is its own half message with its own transaction id: `commit()` ends them one after
 * the other. Ending is idempotent on the broker, so a `commit()` that failed half-way (a broker
 * restart, a time-out) can simply be called again.
 */
import { Code } from '../common/codes.js';
import { clientError } from './errors.js';
import type { Message, SendReceipt } from './message.js';

export type TransactionResolution = 'COMMIT' | 'ROLLBACK';

/** What a Transaction needs from its producer. */
export interface TransactionalSender {
  sendHalf(message: Message, signal?: AbortSignal): Promise<SendReceipt>;
  endTransaction(topic: string, receipt: SendReceipt, resolution: TransactionResolution): Promise<void>;
}

export class Transaction {
  private readonly sent: { topic: string; receipt: SendReceipt }[] = [];
  private sending = 0;
  private ending: TransactionResolution | undefined;
  private ended: TransactionResolution | undefined;

  /** @internal Use `producer.beginTransaction()`. */
  constructor(private readonly producer: TransactionalSender) {}

  /** Send a message as part of this transaction: stored, invisible until `commit()`. */
  async send(message: Message, options: { signal?: AbortSignal } = {}): Promise<SendReceipt> {
    if (this.ending) {
      throw clientError(Code.PRECONDITION_FAILED, `the transaction is already ${this.describe()}`);
    }
    this.sending++;
    try {
      const receipt = await this.producer.sendHalf(message, options.signal);
      this.sent.push({ topic: message.topic, receipt });
      return receipt;
    } finally {
      this.sending--;
    }
  }

  /** Make every message of the transaction visible to consumers. Safe to call again after a failure. */
  commit(): Promise<void> {
    return this.end('COMMIT');
  }

  /** Discard every message of the transaction. Safe to call again after a failure. */
  rollback(): Promise<void> {
    return this.end('ROLLBACK');
  }

  /** The receipts of the messages sent so far. */
  get receipts(): readonly SendReceipt[] {
    return this.sent.map((s) => s.receipt);
  }

  private async end(resolution: TransactionResolution): Promise<void> {
    if (this.ending && this.ending !== resolution) {
      throw clientError(Code.PRECONDITION_FAILED, `the transaction is already ${this.describe()}`);
    }
    if (this.ended === resolution) return;
    if (this.sending > 0) {
      throw clientError(Code.PRECONDITION_FAILED, 'a send of this transaction is still in progress');
    }
    if (this.sent.length === 0) {
      throw clientError(Code.PRECONDITION_FAILED, 'the transaction has no message to end');
    }
    this.ending = resolution;
    for (const { topic, receipt } of this.sent)
      await this.producer.endTransaction(topic, receipt, resolution);
    this.ended = resolution;
  }

  private describe(): string {
    const what = this.ending === 'COMMIT' ? 'committed' : 'rolled back';
    return this.ended ? what : `being ${what}`;
  }
}
