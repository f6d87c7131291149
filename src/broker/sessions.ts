/**
 * Client sessions, keyed by the client id every RocketMQ client sends (`x-mq-client-id`). A session
 * is alive while its Telemetry stream is open or it heartbeats; when one ends (NotifyClientTermination,
 * stream closed, or silence) listeners are told so its in-flight messages can be released at once.
 */
export const ClientType = {
  PRODUCER: 'PRODUCER',
  PUSH_CONSUMER: 'PUSH_CONSUMER',
  SIMPLE_CONSUMER: 'SIMPLE_CONSUMER',
  PULL_CONSUMER: 'PULL_CONSUMER',
  LITE_PUSH_CONSUMER: 'LITE_PUSH_CONSUMER',
  LITE_SIMPLE_CONSUMER: 'LITE_SIMPLE_CONSUMER',
  UNSPECIFIED: 'UNSPECIFIED',
} as const;
export type ClientType = (typeof ClientType)[keyof typeof ClientType];

export interface ClientSession {
  clientId: string;
  clientType: ClientType;
  group?: string;
  topics: string[];
  /** Properties the client declared in its Settings (e.g. `vela.consume.mode=BROADCASTING`). */
  properties?: Record<string, string>;
  language?: string;
  version?: string;
  hostname?: string;
  remoteAddress?: string;
  /**
   * The transport connection the session belongs to (where its Telemetry stream was opened): calls
   * from other connections cannot end it.
   */
  connectionId?: string;
  telemetryOpen: boolean;
  connectedAt: number;
  lastSeen: number;
}

export type SessionGoneListener = (clientId: string, session: ClientSession) => void;

export class SessionRegistry {
  private readonly sessions = new Map<string, ClientSession>();
  private readonly goneListeners = new Set<SessionGoneListener>();

  constructor(
    private readonly now: () => number,
    /** A client silent for this long (no Telemetry stream, no heartbeat) is gone. @defaultValue 30 s */
    private readonly livenessMs = 30_000,
  ) {}

  /** Record what a client told us about itself (Settings, heartbeat, or any call). */
  upsert(
    clientId: string,
    info: Partial<Omit<ClientSession, 'clientId' | 'connectedAt' | 'lastSeen'>>,
  ): ClientSession {
    const now = this.now();
    let s = this.sessions.get(clientId);
    if (!s) {
      s = {
        clientId,
        clientType: 'UNSPECIFIED',
        topics: [],
        telemetryOpen: false,
        connectedAt: now,
        lastSeen: now,
      };
      this.sessions.set(clientId, s);
    }
    for (const [k, v] of Object.entries(info))
      if (v !== undefined) (s as unknown as Record<string, unknown>)[k] = v;
    s.lastSeen = now;
    return s;
  }

  touch(clientId: string): void {
    const s = this.sessions.get(clientId);
    if (s) s.lastSeen = this.now();
  }

  get(clientId: string): ClientSession | undefined {
    return this.sessions.get(clientId);
  }

  isAlive(clientId: string): boolean {
    const s = this.sessions.get(clientId);
    return !!s && (s.telemetryOpen || this.now() - s.lastSeen < this.livenessMs);
  }

  /** The client's Telemetry stream on `connectionId` closed (ignored if the session is another's). */
  telemetryClosed(clientId: string, connectionId?: string): void {
    const s = this.sessions.get(clientId);
    if (!s || !ownedBy(s, connectionId)) return;
    s.telemetryOpen = false;
    // A consumer whose only stream went away is gone: release its work now rather than at timeout.
    this.end(clientId);
  }

  /**
   * The client said goodbye (NotifyClientTermination) or its stream ended. With a `connectionId`, only
   * a session of that connection ends; returns whether one did.
   */
  end(clientId: string, connectionId?: string): boolean {
    const s = this.sessions.get(clientId);
    if (!s || !ownedBy(s, connectionId)) return false;
    this.sessions.delete(clientId);
    for (const l of this.goneListeners) l(clientId, s);
    return true;
  }

  /** Forget sessions that went silent; returns how many. */
  sweep(): number {
    let n = 0;
    for (const id of [...this.sessions.keys()]) {
      if (!this.isAlive(id)) {
        this.end(id);
        n++;
      }
    }
    return n;
  }

  onGone(listener: SessionGoneListener): void {
    this.goneListeners.add(listener);
  }

  list(filter?: { group?: string }): ClientSession[] {
    const all = [...this.sessions.values()];
    return filter?.group ? all.filter((s) => s.group === filter.group) : all;
  }
}

function ownedBy(s: ClientSession, connectionId: string | undefined): boolean {
  return connectionId === undefined || s.connectionId === undefined || s.connectionId === connectionId;
}
