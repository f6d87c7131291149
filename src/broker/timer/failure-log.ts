/**
 * A recurring failure, logged once per change of state rather than once per try. The timer retries
 * its work every second; when the schedule index has gone read-only (a failed fsync) or the disk is
 * full, every try fails the same way until a restart or until space is freed. So: the first failure
 * is logged; the same failure again is only counted; when the failure changes or clears, one line
 * says how many times it repeated and for how long; at close, one line for a failure still going on.
 */
import type { Logger } from '../../common/logger.js';

interface Ongoing {
  key: string;
  count: number;
  since: number;
  err: unknown;
}

/** What makes two failures "the same": the error's kind (Vela) or code (errno), else its message. */
function keyOf(err: unknown): string {
  if (err && typeof err === 'object') {
    const kind = (err as { kind?: unknown }).kind;
    if (typeof kind === 'string') return `kind:${kind}`;
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') return `code:${code}`;
    const message = (err as { message?: unknown }).message;
    if (typeof message === 'string') return `message:${message}`;
  }
  return `value:${String(err)}`;
}

export class FailureLog {
  private ongoing: Ongoing | null = null;

  constructor(
    private readonly logger: Logger,
    /** What failed, e.g. "delivering delay messages". */
    private readonly what: string,
    private readonly now: () => number,
  ) {}

  /** Times the current failure has happened in a row (0 when there is none). */
  get repeats(): number {
    return this.ongoing?.count ?? 0;
  }

  /** A try failed; `retryInMs`, when given, says when the next one comes. */
  failed(err: unknown, retryInMs?: number): void {
    const key = keyOf(err);
    if (this.ongoing?.key === key) {
      this.ongoing.count++;
      return;
    }
    this.summarize('changed');
    this.ongoing = { key, count: 1, since: this.now(), err };
    const retry = retryInMs === undefined ? '' : `; trying again every ${retryInMs} ms`;
    this.logger.error(
      { err },
      `${this.what} failed${retry} (repeats of this failure are counted, not logged)`,
    );
  }

  /** A try succeeded: the failure, if any, is over. */
  succeeded(): void {
    this.summarize('cleared');
  }

  /** Stopping: say how often a failure still going on repeated. */
  close(): void {
    this.summarize('closed');
  }

  private summarize(why: 'changed' | 'cleared' | 'closed'): void {
    const o = this.ongoing;
    if (!o) return;
    this.ongoing = null;
    const fields = { err: o.err, failures: o.count, forMs: this.now() - o.since };
    if (why === 'cleared') {
      this.logger.info(fields, `${this.what} works again after ${o.count} failed ${plural(o.count)}`);
    } else if (o.count > 1 || why === 'changed') {
      const until = why === 'closed' ? 'until the timer stopped' : 'before failing differently';
      this.logger.warn(fields, `${this.what} failed ${o.count} ${plural(o.count)} in a row ${until}`);
    }
  }
}

function plural(n: number): string {
  return n === 1 ? 'try' : 'tries';
}
