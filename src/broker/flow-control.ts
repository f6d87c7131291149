/**
 * Send-side flow control on backlog: when some consumer group has more than `maxReadyBacklog`
 * messages of a topic not yet handed out, sends to that topic fail fast with TOO_MANY_REQUESTS
 * (producers back off and retry). Measured every `checkIntervalMs`; clears by itself once the
 * backlog falls under the threshold. Off when the threshold is 0. (Disk pressure is the store's
 * refusal threshold, which answers the same code.)
 */
import { VelaError } from '../common/errors.js';
import type { FlowControlSettings } from '../common/config.js';
import type { Logger } from '../common/logger.js';
import type { ConsumeService } from './consume/consume-service.js';

export class FlowControl {
  private readonly overloaded = new Map<string, { group: string; backlog: number }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly consume: ConsumeService,
    private readonly o: FlowControlSettings,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.o.maxReadyBacklog <= 0) return;
    this.timer = setInterval(() => this.measure(), this.o.checkIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Throw TOO_MANY_REQUESTS if sends to `topic` are being refused. */
  admit(topic: string): void {
    const o = this.overloaded.get(topic);
    if (o) {
      throw new VelaError(
        'TOO_MANY_REQUESTS',
        `group ${o.group} has ${o.backlog} undelivered messages of ${topic} (limit ${this.o.maxReadyBacklog}); retry later`,
      );
    }
  }

  /** Topics whose sends are refused now, with the group whose backlog is over the limit. */
  refusing(): { topic: string; group: string; backlog: number }[] {
    return [...this.overloaded].map(([topic, o]) => ({ topic, ...o }));
  }

  /** Recompute which topics are over the limit (also called by the timer). */
  measure(): void {
    const worst = new Map<string, { group: string; backlog: number }>();
    for (const { group, topic } of this.consume.groupTopics()) {
      const backlog = this.consume.readyBacklog(group, topic);
      if (backlog > this.o.maxReadyBacklog && backlog > (worst.get(topic)?.backlog ?? 0))
        worst.set(topic, { group, backlog });
    }
    for (const [topic, o] of worst) {
      if (!this.overloaded.has(topic))
        this.logger.warn({ topic, ...o, limit: this.o.maxReadyBacklog }, 'flow control on: refusing sends');
    }
    for (const topic of this.overloaded.keys()) {
      if (!worst.has(topic)) this.logger.info({ topic }, 'flow control off: accepting sends');
    }
    this.overloaded.clear();
    for (const [t, o] of worst) this.overloaded.set(t, o);
  }
}
