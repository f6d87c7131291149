/**
 * Every setting of the broker, once: its name (the `startBroker` option and config-file key), its
 * command-line flag and environment variable where it has them, its default and what it means. The
 * defaults object, the types, the resolver, the CLI's flags and the tables of docs/configuration.md
 * are all derived from the schema below, so they cannot drift apart.
 *
 * `resolveConfig` turns a partial input (from code, or from flags / env / file merged by the CLI)
 * into one frozen, validated config that the broker and its servers consume.
 *
 * Longer than most files on purpose: it is a table (one entry per setting, with its documentation),
 * and splitting it would put the settings of one broker in several places.
 */
import { VelaError } from './errors.js';

export type FlushPolicy = 'sync' | 'async';
export type TlsMode = 'permissive' | 'enforcing' | 'disabled';

/** How a setting's value is written and checked. */
export type SettingKind =
  | {
      type: 'number';
      unit?: 'ms' | 'bytes' | 'ratio' | 'count';
      min?: number;
      max?: number;
      integer?: boolean;
    }
  | { type: 'boolean' }
  | { type: 'string'; /** '' (none) allowed */ optional?: boolean }
  | { type: 'port' }
  | { type: 'ports' }
  | { type: 'choice'; choices: readonly string[]; label: string };

export interface Setting<T> {
  readonly default: T;
  readonly doc: string;
  readonly kind: SettingKind;
  /** Command-line flag, e.g. `--data-dir <dir>` (top-level settings only). */
  readonly flag?: string;
  /** Environment variable (top-level settings only). */
  readonly env?: string;
}

function num(
  def: number,
  doc: string,
  unit?: 'ms' | 'bytes' | 'ratio' | 'count',
  limits: { min?: number; max?: number } = {},
): Setting<number> {
  return {
    default: def,
    doc,
    kind: { type: 'number', ...(unit ? { unit } : {}), integer: unit !== 'ratio', ...limits },
  };
}
function bool(def: boolean, doc: string, cli: { flag?: string; env?: string } = {}): Setting<boolean> {
  return { default: def, doc, kind: { type: 'boolean' }, ...cli };
}

// ---------------------------------------------------------------------------------------------------
// The schema

export const STORE_SCHEMA = {
  flushIntervalMs: num(500, 'fsync interval under `async` flush', 'ms', { min: 1 }),
  segmentSize: num(
    256 * 1024 * 1024,
    'bytes per commit-log segment; a new segment file is sized to it at once (sparse)',
    'bytes',
    { min: 4096 },
  ),
  indexEntriesPerFile: num(262_144, 'entries per queue-index file (24 bytes each)', 'count', { min: 16 }),
  indexFlushIntervalMs: num(200, 'how often index entries are written out', 'ms', { min: 1 }),
  checkpointIntervalMs: num(1000, 'how often a recovery checkpoint is written', 'ms', { min: 1 }),
  retentionMs: num(72 * 3600_000, 'segments whose newest record is older than this are deleted', 'ms'),
  retentionCheckIntervalMs: num(10_000, 'how often retention runs', 'ms', { min: 1 }),
  diskCheckIntervalMs: num(1000, 'how often disk use is measured', 'ms', { min: 1 }),
  diskCleanupRatio: num(
    0.75,
    'above this disk use, the oldest segments are deleted (up to 10 a run) even if not expired',
    'ratio',
    { max: 1 },
  ),
  diskForceCleanupRatio: num(0.85, 'above this disk use, the oldest segments are deleted at once', 'ratio', {
    max: 1,
  }),
  diskRefuseRatio: num(
    0.9,
    'above this disk use, sends are refused (`TOO_MANY_REQUESTS`) until space is freed',
    'ratio',
    { max: 1 },
  ),
  logReadCacheBytes: num(
    16 * 1024 * 1024,
    'recently written commit-log bytes kept in memory once durable, so consumers near the head are served without a disk read (0: none)',
    'bytes',
  ),
  logChunkCacheBytes: num(
    16 * 1024 * 1024,
    'commit-log bytes read from disk kept in memory in 1 MiB chunks, so the interleaved queues of a topic (and several consumer groups) read each span of the log once (0: none)',
    'bytes',
  ),
  accessMessageInMemoryMaxRatio: num(
    40,
    "messages within this percentage of the machine's memory from the newest are taken to be in the page cache, as in RocketMQ: the store reads them (log and queue index) on the event loop, skipping the thread pool; older ones are read through the thread pool, so a disk read never stalls the broker (0: always the thread pool)",
    'count',
    { max: 100 },
  ),
  indexReadCacheEntries: num(
    256,
    'recently written queue-index entries kept in memory per queue (24 bytes each), so consumers near the head need no index read (0: none)',
    'count',
  ),
  verifyChecksumOnRead: bool(true, "verify each record's checksum when it is read"),
  inlineWriteBytes: num(
    32 * 1024,
    'a flush of the message log or the state journal up to this size is written on the event loop, without a thread-pool round trip, while the loop has time to spare and no other log of the process is writing; larger ones (and all of them while the loop is over 70 % busy, while the message log and the state journal both wrote in the last 100 ms, or for a second after a write on the loop, or a small one in the thread pool, took over 10 ms, doubling while writes on the loop stay slow, up to a minute) go through the thread pool (0: always the thread pool)',
    'bytes',
  ),
  stateCompactBytes: num(
    64 * 1024 * 1024,
    'the state journal (topics, groups, offsets, consumption state) is compacted into a snapshot once it has grown past this',
    'bytes',
    { min: 1024 },
  ),
} as const;

export const PRODUCE_SCHEMA = {
  maxBodySize: num(4 * 1024 * 1024, 'largest message body', 'bytes', { min: 1 }),
  maxUserProperties: num(128, 'most user properties per message', 'count'),
  maxPropertiesSize: num(16 * 1024, 'UTF-8 bytes of properties, tag and keys together', 'bytes'),
  maxMessageGroupLength: num(64, 'longest message group', 'count', { min: 1 }),
} as const;

export const CONSUME_SCHEMA = {
  minInvisibleMs: num(
    20,
    "smallest invisible duration a receive may ask for (RocketMQ's proxy: 10 s; the default admits the seeds' 20–50 ms examples)",
    'ms',
  ),
  maxInvisibleMs: num(12 * 3600_000, 'largest invisible duration', 'ms', { min: 1 }),
  autoRenewInvisibleMs: num(
    60_000,
    'invisible time the server picks for push consumers, renewed while they live',
    'ms',
    { min: 1 },
  ),
  renewAheadMs: num(20_000, 'auto-renewed deliveries closer than this to their deadline are extended', 'ms'),
  renewIntervalMs: num(5000, 'how often auto-renewal runs', 'ms', { min: 1 }),
  maxPollMs: num(20_000, 'longest long poll', 'ms'),
  maxBatch: num(32, 'most messages per receive', 'count', { min: 1 }),
  maxPushBatch: num(
    256,
    'most messages per receive of a push consumer (`auto_renew`), told to it in Settings as `receive_batch_size`; its client asks for at most its free cache. One receive loop per broker serves the official clients, so its batch bounds their rate',
    'count',
    { min: 1 },
  ),
  maxParkedReceives: num(
    20_000,
    'receives and pulls waiting (long polling) at once, broker-wide; when full, the client with the most waiting has its oldest answered empty to make room for a client with fewer, else the request answers `TOO_MANY_REQUESTS`',
    'count',
  ),
  maxParkedPerClient: num(
    4096,
    'receives and pulls one client may have waiting at once; beyond it its requests answer `TOO_MANY_REQUESTS` (a request with messages ready is always answered)',
    'count',
    { min: 1 },
  ),
  maxParkedPerGroup: num(
    10_000,
    'receives and pulls waiting at once for one consumer group; beyond it its requests answer `TOO_MANY_REQUESTS`',
    'count',
    { min: 1 },
  ),
  broadcastStateRetentionMs: num(
    7 * 24 * 3600_000,
    "a broadcast consumer's kept state (positions, in-flight messages, offsets) is forgotten once no live consumer has used it for this long",
    'ms',
    { min: 1 },
  ),
  maxInflightPerGroup: num(
    200_000,
    'deliveries in flight per (group, topic); beyond it a receive answers `TOO_MANY_REQUESTS`',
    'count',
  ),
} as const;

export const FLOW_CONTROL_SCHEMA = {
  maxReadyBacklog: num(
    0,
    'when some consumer group has more than this many messages of a topic not yet delivered, sends to that topic answer `TOO_MANY_REQUESTS` (producers back off); `0` turns it off',
    'count',
  ),
  checkIntervalMs: num(
    1000,
    'how often the backlog is measured; the refusal clears at the first measurement under the limit',
    'ms',
    { min: 1 },
  ),
} as const;

const MiB = 1024 * 1024;

export const GRPC_SCHEMA = {
  maxRequestSize: num(
    5 * MiB,
    'largest request message, as sent and once inflated (gzip); a larger one is refused before it is read (`PAYLOAD_TOO_LARGE`). Must hold a message of `produce.maxBodySize` with its properties',
    'bytes',
    { min: 64 * 1024 },
  ),
  maxRequestEntries: num(
    1024,
    'most messages in one SendMessage and entries in one AckMessage (`PAYLOAD_TOO_LARGE` beyond); a request may decode to at most 512 values per entry',
    'count',
    { min: 1 },
  ),
  maxConcurrentStreams: num(
    1000,
    'calls open at once on one connection (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`; clients queue the rest)',
    'count',
    { min: 1 },
  ),
  maxConnectionInboundBytes: num(
    64 * MiB,
    'request bytes one connection may have received and not yet had answered; beyond it a call answers `TOO_MANY_REQUESTS`',
    'bytes',
    { min: 1 },
  ),
  maxInboundBytes: num(512 * MiB, 'the same, for all connections together', 'bytes', { min: 1 }),
  maxConnectionOutboundBytes: num(
    64 * MiB,
    'answer bytes waiting for one client to read them; while above it, new calls on that connection answer `TOO_MANY_REQUESTS`',
    'bytes',
    { min: 1 },
  ),
  maxTelemetryMessageSize: num(1 * MiB, 'largest Telemetry command (Settings)', 'bytes', { min: 1024 }),
  maxClientsPerConnection: num(
    1024,
    'client ids one connection may open sessions for (Telemetry, heartbeats); beyond it `TOO_MANY_REQUESTS`',
    'count',
    { min: 1 },
  ),
  keepaliveIntervalMs: num(60_000, 'how often each connection is pinged (HTTP/2 PING); `0` never', 'ms'),
  keepaliveTimeoutMs: num(20_000, 'a connection whose ping is unanswered this long is closed', 'ms', {
    min: 1,
  }),
} as const;

export const TIMER_SCHEMA = {
  maxDelayMs: num(
    3 * 24 * 3600_000,
    "longest delay a DELAY message may ask for (RocketMQ's `timerMaxDelaySec`); a later delivery time is refused with `ILLEGAL_DELIVERY_TIME`",
    'ms',
    { min: 1 },
  ),
} as const;

export const TRANSACTION_SCHEMA = {
  checkTimeoutMs: num(
    6000,
    "a half message neither committed nor rolled back this long after it was stored is orphaned, and its producer is asked to resolve it (RocketMQ's `transactionTimeOut`)",
    'ms',
    { min: 1 },
  ),
  checkIntervalMs: num(
    30_000,
    "how often an orphaned transaction is checked again while it stays unresolved (RocketMQ's `transactionCheckInterval`)",
    'ms',
    { min: 1 },
  ),
  checkMax: num(
    15,
    "checks before an orphaned transaction is rolled back (and logged) (RocketMQ's `transactionCheckMax`)",
    'count',
  ),
  maxRecoveryMs: num(
    3600_000,
    "longest check delay a producer may ask for with `orphaned_transaction_recovery_duration` (RocketMQ's `maxTransactionRecoverySecond`)",
    'ms',
    { min: 1 },
  ),
} as const;

export const ACL_SCHEMA = {
  clockSkewMs: num(
    15 * 60_000,
    "a signed request's `x-mq-date-time` may differ from the broker's clock by this much (`UNAUTHORIZED` beyond); `0` turns the check off, as in RocketMQ",
    'ms',
  ),
  timeZoneOffsets: bool(
    true,
    "also accept an `x-mq-date-time` off by a whole time-zone offset (−12 h … +14 h, within the skew): the Java, Go and Python clients stamp local time with a `Z`. Off: only the skew, for clients that all send UTC (Node, Vela's SDK) or run in UTC",
  ),
} as const;

export const SECTION_SCHEMAS = {
  store: STORE_SCHEMA,
  produce: PRODUCE_SCHEMA,
  consume: CONSUME_SCHEMA,
  flowControl: FLOW_CONTROL_SCHEMA,
  grpc: GRPC_SCHEMA,
  timer: TIMER_SCHEMA,
  transaction: TRANSACTION_SCHEMA,
  acl: ACL_SCHEMA,
} as const;
export type SectionName = keyof typeof SECTION_SCHEMAS;

export const TOP_SCHEMA = {
  dataDir: {
    default: './vela-data',
    doc: 'data directory (messages, indexes, consumption state)',
    kind: { type: 'string' },
    flag: '--data-dir <dir>',
    env: 'VELA_DATA_DIR',
  } as Setting<string>,
  grpcPort: {
    default: [8081] as readonly number[],
    doc: 'gRPC port(s); `0` picks a free port',
    kind: { type: 'ports' },
    flag: '--grpc-port <port[,port…]>',
    env: 'VELA_GRPC_PORT',
  } as Setting<readonly number[]>,
  httpPort: {
    default: 8082,
    doc: 'admin HTTP port (the API `vela admin` uses); `0` picks a free port',
    kind: { type: 'port' },
    flag: '--http-port <port>',
    env: 'VELA_HTTP_PORT',
  } as Setting<number>,
  remotingPort: {
    default: 9876,
    doc: 'RocketMQ Remoting port (name server and broker in one, for 4.x clients, `mqadmin` and the Dashboard; also served on port − 2, the "VIP channel", when that is free); `0` picks a free port',
    kind: { type: 'port' },
    flag: '--remoting-port <port>',
    env: 'VELA_REMOTING_PORT',
  } as Setting<number>,
  host: {
    default: '127.0.0.1',
    doc: 'address the servers listen on',
    kind: { type: 'string' },
    flag: '--host <address>',
    env: 'VELA_HOST',
  } as Setting<string>,
  flush: {
    default: 'sync' as FlushPolicy,
    doc: 'flush policy: `sync` (fsync before a send is acknowledged) or `async`',
    kind: { type: 'choice', choices: ['sync', 'async'], label: 'flush policy' },
    flag: '--flush <sync|async>',
    env: 'VELA_FLUSH',
  } as Setting<FlushPolicy>,
  autoCreateTopics: bool(false, 'create unknown topics on first send or route query (development only)', {
    flag: '--auto-create-topics',
    env: 'VELA_AUTO_CREATE_TOPICS',
  }),
  autoCreateGroups: bool(
    true,
    "create unknown consumer groups on first use (RocketMQ's autoCreateSubscriptionGroup); `false` requires `updateSubGroup` first",
    {
      flag: '--auto-create-groups',
      env: 'VELA_AUTO_CREATE_GROUPS',
    },
  ),
  enableMixedMessageType: bool(false, 'allow `message.type=MIXED` topics', {
    flag: '--enable-mixed-message-type',
    env: 'VELA_ENABLE_MIXED_MESSAGE_TYPE',
  }),
  brokerName: {
    default: 'broker-0',
    doc: 'broker name clients see in routes',
    kind: { type: 'string' },
    flag: '--broker-name <name>',
    env: 'VELA_BROKER_NAME',
  } as Setting<string>,
  logLevel: {
    default: 'info',
    doc: 'log level',
    kind: {
      type: 'choice',
      choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      label: 'log level',
    },
    flag: '--log-level <level>',
    env: 'VELA_LOG_LEVEL',
  } as Setting<string>,
  shutdownGraceMs: num(5000, 'how long shutdown waits for calls in progress', 'ms'),
  heapGrowingPercent: {
    ...num(
      300,
      "how far V8 lets the broker process's heap grow past what its last full collection kept, in per cent (V8 otherwise picks 10–300 from its collection speed); set by `vela broker` for its own process, not by an application that embeds the broker; `0` leaves it to V8",
      'count',
      { min: 0, max: 1000 },
    ),
    flag: '--heap-growing-percent <percent>',
    env: 'VELA_HEAP_GROWING_PERCENT',
  },
  tlsMode: {
    default: 'permissive' as TlsMode,
    doc: 'TLS on the gRPC port: `permissive` (TLS and plaintext on the same port, as the RocketMQ proxy), `enforcing` (TLS only) or `disabled`',
    kind: { type: 'choice', choices: ['permissive', 'enforcing', 'disabled'], label: 'TLS mode' },
    flag: '--tls-mode <permissive|enforcing|disabled>',
    env: 'VELA_TLS_MODE',
  } as Setting<TlsMode>,
  tlsCert: {
    default: '',
    doc: 'PEM certificate (chain) file for TLS; with none, a self-signed certificate is generated into `<dataDir>/tls/` on first start',
    kind: { type: 'string', optional: true },
    flag: '--tls-cert <file>',
    env: 'VELA_TLS_CERT',
  } as Setting<string>,
  tlsKey: {
    default: '',
    doc: 'PEM private key file of `tlsCert`',
    kind: { type: 'string', optional: true },
    flag: '--tls-key <file>',
    env: 'VELA_TLS_KEY',
  } as Setting<string>,
  httpTls: bool(false, "serve the admin HTTP API over HTTPS, with the gRPC port's certificate", {
    flag: '--http-tls',
    env: 'VELA_HTTP_TLS',
  }),
  clusterName: {
    default: 'DefaultCluster',
    doc: "cluster name: the `cluster` label of every metric (RocketMQ's `brokerClusterName`)",
    kind: { type: 'string' },
    flag: '--cluster-name <name>',
    env: 'VELA_CLUSTER_NAME',
  } as Setting<string>,
  metrics: bool(true, 'serve Prometheus metrics at `GET /metrics` on the admin HTTP port', {
    flag: '--metrics <true|false>',
    env: 'VELA_METRICS',
  }),
  adminToken: {
    default: '',
    doc:
      'token the admin HTTP API (`/api/*`, `/metrics`) requires as `Authorization: Bearer <token>`; ' +
      'none by default, required when `host` is not a loopback address',
    kind: { type: 'string', optional: true },
    flag: '--admin-token <token>',
    env: 'VELA_ADMIN_TOKEN',
  } as Setting<string>,
  deliveryHistory: num(
    50_000,
    'deliveries (attempt, client, outcome) the broker remembers for the console, the newest kept; `0` turns it off',
    'count',
  ),
  aclEnabled: bool(
    false,
    'access control (RocketMQ ACL 2.0): every gRPC request must be signed by a user (`UNAUTHORIZED` otherwise) and be within its ACL (`FORBIDDEN`); the admin API needs a super user (docs/security.md)',
    { flag: '--acl-enabled', env: 'VELA_ACL_ENABLED' },
  ),
  aclInitUser: {
    default: '',
    doc: "a super user created at start-up unless one of that name exists, as `<accessKey>:<secretKey>` (RocketMQ's `initAuthenticationUser`); give it in the environment or the config file, not on a command line",
    kind: { type: 'string', optional: true },
    env: 'VELA_ACL_INIT_USER',
  } as Setting<string>,
} as const;

// ---------------------------------------------------------------------------------------------------
// Types and defaults derived from the schema

type ValuesOf<S> = { readonly [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

export type StoreSettings = ValuesOf<typeof STORE_SCHEMA>;
export type ProduceLimits = ValuesOf<typeof PRODUCE_SCHEMA>;
export type ConsumeSettings = ValuesOf<typeof CONSUME_SCHEMA>;
export type FlowControlSettings = ValuesOf<typeof FLOW_CONTROL_SCHEMA>;
export type GrpcSettings = ValuesOf<typeof GRPC_SCHEMA>;
export type TimerSettings = ValuesOf<typeof TIMER_SCHEMA>;
export type TransactionSettings = ValuesOf<typeof TRANSACTION_SCHEMA>;
export type AclSettings = ValuesOf<typeof ACL_SCHEMA>;
type TopSettings = ValuesOf<typeof TOP_SCHEMA>;

/** The resolved configuration of a broker. */
export interface VelaConfig extends Omit<TopSettings, 'grpcPort'> {
  /** Every gRPC port served (0: a free one). */
  readonly grpcPorts: readonly number[];
  readonly store: StoreSettings;
  readonly produce: ProduceLimits;
  readonly consume: ConsumeSettings;
  readonly flowControl: FlowControlSettings;
  readonly grpc: GrpcSettings;
  readonly timer: TimerSettings;
  readonly transaction: TransactionSettings;
  readonly acl: AclSettings;
}

/** What a caller may give: any subset; `grpcPort` may be one port or a list. */
export type ConfigInput = Partial<Omit<TopSettings, 'grpcPort'>> & {
  grpcPort?: number | readonly number[];
  store?: Partial<StoreSettings>;
  produce?: Partial<ProduceLimits>;
  consume?: Partial<ConsumeSettings>;
  flowControl?: Partial<FlowControlSettings>;
  grpc?: Partial<GrpcSettings>;
  timer?: Partial<TimerSettings>;
  transaction?: Partial<TransactionSettings>;
  acl?: Partial<AclSettings>;
};

function defaultsOf<S extends Record<string, Setting<unknown>>>(schema: S): ValuesOf<S> {
  return Object.freeze(
    Object.fromEntries(Object.entries(schema).map(([k, s]) => [k, s.default])),
  ) as ValuesOf<S>;
}

export const STORE_DEFAULTS: StoreSettings = defaultsOf(STORE_SCHEMA);

/** The one defaults object. */
export const DEFAULTS: VelaConfig = deepFreeze({
  ...(() => {
    const { grpcPort, ...top } = defaultsOf(TOP_SCHEMA);
    return { ...top, grpcPorts: grpcPort };
  })(),
  store: STORE_DEFAULTS,
  produce: defaultsOf(PRODUCE_SCHEMA),
  consume: defaultsOf(CONSUME_SCHEMA),
  flowControl: defaultsOf(FLOW_CONTROL_SCHEMA),
  grpc: defaultsOf(GRPC_SCHEMA),
  timer: defaultsOf(TIMER_SCHEMA),
  transaction: defaultsOf(TRANSACTION_SCHEMA),
  acl: defaultsOf(ACL_SCHEMA),
});

// ---------------------------------------------------------------------------------------------------
// Resolution

/** Names where a key's value came from, for error messages (the CLI knows flags, env and files). */
export type SourceOf = (path: string) => string;

const fromCode: SourceOf = () => 'config';

const KNOWN_TOP = new Set<string>([...Object.keys(TOP_SCHEMA), ...Object.keys(SECTION_SCHEMAS)]);

/**
 * Defaults under the input, every value checked against its setting's kind; unknown keys are refused
 * (a misspelt key is an error, not a silently ignored setting). Throws `ILLEGAL_CONFIG`.
 */
export function resolveConfig(input: ConfigInput = {}, sourceOf: SourceOf = fromCode): VelaConfig {
  const raw = input as Record<string, unknown>;
  for (const k of Object.keys(raw)) {
    if (raw[k] !== undefined && !KNOWN_TOP.has(k)) {
      throw unknown(sourceOf(k), k, [...KNOWN_TOP]);
    }
  }
  const top: Record<string, unknown> = {};
  for (const [k, s] of Object.entries(TOP_SCHEMA) as [string, Setting<unknown>][]) {
    top[k] = raw[k] === undefined ? s.default : check(raw[k], s.kind, sourceOf(k), k);
  }
  const { grpcPort, ...rest } = top;
  const sections: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(SECTION_SCHEMAS)) {
    sections[name] = resolveSection(name, schema, raw[name], sourceOf);
  }
  const config = { ...rest, grpcPorts: grpcPort, ...sections } as unknown as VelaConfig;
  crossCheck(config, sourceOf);
  return deepFreeze(config);
}

function resolveSection(
  name: string,
  schema: Record<string, Setting<unknown>>,
  value: unknown,
  sourceOf: SourceOf,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    throw illegal(sourceOf(name), name, 'must be an object');
  }
  const given = (value ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(given)) {
    if (given[k] !== undefined && !(k in schema)) {
      throw unknown(sourceOf(`${name}.${k}`), `${name}.${k}`, Object.keys(schema));
    }
  }
  for (const [k, s] of Object.entries(schema)) {
    const path = `${name}.${k}`;
    out[k] = given[k] === undefined ? s.default : check(given[k], s.kind, sourceOf(path), path);
  }
  return out;
}

function check(value: unknown, kind: SettingKind, source: string, path: string): unknown {
  const bad = (why: string) => illegal(source, path, why);
  switch (kind.type) {
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw bad('must be a number');
      const min = kind.min ?? 0;
      if (value < min) throw bad(`must be ≥ ${min}`);
      if (kind.max !== undefined && value > kind.max) throw bad(`must be ≤ ${kind.max}`);
      if (kind.integer && !Number.isInteger(value)) throw bad('must be a whole number');
      return value;
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw bad('must be true or false');
      return value;
    case 'string':
      if (typeof value !== 'string' || (value.trim() === '' && !(kind.optional && value === ''))) {
        throw bad('must be a non-empty string');
      }
      return value;
    case 'choice':
      if (typeof value !== 'string' || !kind.choices.includes(value))
        throw bad(`unknown ${kind.label} "${String(value)}" (expected ${kind.choices.join(', ')})`);
      return value;
    case 'port':
      return checkPort(value, bad);
    case 'ports': {
      const list = Array.isArray(value) ? value : [value];
      if (list.length === 0) throw bad('at least one port is required');
      const ports = list.map((p) => checkPort(p, bad));
      const seen = new Set<number>();
      for (const p of ports) {
        if (p !== 0 && seen.has(p)) throw bad(`port ${p} is listed twice`);
        seen.add(p);
      }
      return Object.freeze(ports);
    }
  }
}

function checkPort(value: unknown, bad: (why: string) => VelaError): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 65535) {
    throw bad(`"${String(value)}" is not a port number (0-65535)`);
  }
  return value;
}

/** Whether an address is the local machine only (what a page on another machine cannot reach). */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  return (
    h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h)
  );
}

/** Shortest admin token accepted: guessing must not be a practical attack. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

function crossCheck(c: VelaConfig, sourceOf: SourceOf): void {
  if (c.adminToken !== '' && !/^[\x21-\x7e]+$/.test(c.adminToken)) {
    throw illegal(sourceOf('adminToken'), 'adminToken', 'must be printable ASCII without spaces');
  }
  if (c.adminToken !== '' && c.adminToken.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw illegal(
      sourceOf('adminToken'),
      'adminToken',
      `must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters (for example: openssl rand -hex 16)`,
    );
  }
  if (c.adminToken === '' && !isLoopbackHost(c.host)) {
    throw illegal(
      sourceOf('host'),
      'host',
      `is ${c.host}, beyond loopback: the admin API then needs a token (adminToken, --admin-token or VELA_ADMIN_TOKEN)`,
    );
  }
  if (c.remotingPort !== 0 && (c.grpcPorts.includes(c.remotingPort) || c.httpPort === c.remotingPort)) {
    throw illegal(
      sourceOf('remotingPort'),
      'remotingPort',
      `port ${c.remotingPort} is also given as a gRPC or HTTP port`,
    );
  }
  if (c.httpPort !== 0 && c.grpcPorts.includes(c.httpPort)) {
    throw illegal(
      sourceOf('httpPort'),
      'httpPort',
      `port ${c.httpPort} is given both as a gRPC port and as the HTTP port`,
    );
  }
  const s = c.store;
  if (!(s.diskCleanupRatio <= s.diskForceCleanupRatio && s.diskForceCleanupRatio <= s.diskRefuseRatio)) {
    throw illegal(sourceOf('store'), 'store', 'disk ratios must satisfy cleanup ≤ force cleanup ≤ refuse');
  }
  const g = c.grpc;
  const largestMessage = c.produce.maxBodySize + c.produce.maxPropertiesSize + 4096;
  if (g.maxRequestSize < largestMessage) {
    throw illegal(
      sourceOf('grpc.maxRequestSize'),
      'grpc.maxRequestSize',
      `must be at least produce.maxBodySize + produce.maxPropertiesSize + 4096 (${largestMessage})`,
    );
  }
  if (g.maxConnectionInboundBytes < g.maxRequestSize || g.maxInboundBytes < g.maxConnectionInboundBytes) {
    throw illegal(
      sourceOf('grpc'),
      'grpc',
      'request budgets must satisfy maxRequestSize ≤ maxConnectionInboundBytes ≤ maxInboundBytes',
    );
  }
  if ((c.tlsCert === '') !== (c.tlsKey === '')) {
    throw illegal(
      sourceOf(c.tlsCert ? 'tlsKey' : 'tlsCert'),
      c.tlsCert ? 'tlsKey' : 'tlsCert',
      'tlsCert and tlsKey are given together',
    );
  }
  if (c.httpTls && c.tlsMode === 'disabled') {
    throw illegal(sourceOf('httpTls'), 'httpTls', 'needs TLS (tlsMode is disabled)');
  }
  if (c.aclInitUser !== '' && !/^[^:]+:.+$/.test(c.aclInitUser)) {
    throw illegal(sourceOf('aclInitUser'), 'aclInitUser', 'must be <accessKey>:<secretKey>');
  }
  if (c.consume.minInvisibleMs > c.consume.maxInvisibleMs) {
    throw illegal(
      sourceOf('consume.minInvisibleMs'),
      'consume.minInvisibleMs',
      'must not exceed consume.maxInvisibleMs',
    );
  }
}

function illegal(source: string, path: string, why: string): VelaError {
  return new VelaError('ILLEGAL_CONFIG', `${source}: "${path}" ${why}`);
}

function unknown(source: string, path: string, known: readonly string[]): VelaError {
  return new VelaError('ILLEGAL_CONFIG', `${source}: unknown key "${path}" (known: ${known.join(', ')})`);
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}
