/**
 * The settings of `vela broker`, resolved once into a frozen config. Each setting has a flag, an
 * environment variable and a config-file key (the `startBroker` option names); precedence is
 * flags > environment > config file > defaults. Every value is validated here, so a bad one is a
 * usage error before anything starts.
 */
import { readFileSync } from 'node:fs';
import { STORE_DEFAULTS, type FlushPolicy, type StoreOptions } from '../common/config.js';
import { DEFAULT_PRODUCE_LIMITS, type ProduceLimits } from '../broker/produce.js';
import { DEFAULT_CONSUME_OPTIONS, type ConsumeOptions } from '../broker/consume/consume-service.js';
import { DEFAULT_FLOW_CONTROL, type FlowControlOptions } from '../broker/flow-control.js';
import type { StartBrokerOptions } from '../server.js';
import { usageError } from './cli-error.js';

/** Flags as commander hands them over: raw strings, validated here like every other source. */
export interface BrokerFlags {
  dataDir?: string;
  /** Each `--grpc-port` occurrence (each may be a comma-separated list). */
  grpcPort?: string[];
  httpPort?: string;
  host?: string;
  flush?: string;
  config?: string;
  autoCreate?: boolean;
  logLevel?: string;
  brokerName?: string;
  enableMixedMessageType?: boolean;
}

type StoreSettings = Partial<Omit<StoreOptions, 'dataDir' | 'flush' | 'clock' | 'logger' | 'diskUsage'>>;
type ConsumeSettings = Partial<Omit<ConsumeOptions, 'autoCreateGroups'>>;

export interface BrokerConfig {
  /** Where messages and state are stored. @defaultValue './vela-data' */
  readonly dataDir: string;
  /** gRPC ports; 0 picks a free one. @defaultValue [8081] */
  readonly grpcPorts: readonly number[];
  /** Admin HTTP port; 0 picks a free one. @defaultValue 8082 */
  readonly httpPort: number;
  /** Address both servers listen on. @defaultValue '127.0.0.1' */
  readonly host: string;
  /** @defaultValue 'sync' */
  readonly flush: FlushPolicy;
  /** @defaultValue false */
  readonly autoCreateTopics: boolean;
  /** @defaultValue false */
  readonly autoCreateGroups: boolean;
  /** @defaultValue false */
  readonly enableMixedMessageType: boolean;
  /** @defaultValue 'broker-0' */
  readonly brokerName: string;
  /** pino level. @defaultValue 'info' */
  readonly logLevel: string;
  /** @defaultValue 5000 */
  readonly shutdownGraceMs: number;
  /** The config file read, if any. */
  readonly configFile: string | null;
  /** Storage tuning (config file only). */
  readonly store: Readonly<StoreSettings>;
  /** Message limits (config file only). */
  readonly produce: Readonly<Partial<ProduceLimits>>;
  /** Consumption tuning (config file only). */
  readonly consume: Readonly<ConsumeSettings>;
  /** Send-side flow control on backlog (config file only). */
  readonly flowControl: Readonly<Partial<FlowControlOptions>>;
}

export const BROKER_DEFAULTS = Object.freeze({
  dataDir: './vela-data',
  grpcPorts: Object.freeze([8081]) as readonly number[],
  httpPort: 8082,
  host: '127.0.0.1',
  flush: 'sync' as FlushPolicy,
  autoCreateTopics: false,
  autoCreateGroups: false,
  enableMixedMessageType: false,
  brokerName: 'broker-0',
  logLevel: 'info',
  shutdownGraceMs: 5000,
});

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const FLUSH_POLICIES: readonly FlushPolicy[] = ['sync', 'async'];

/** The config file's top-level keys. */
const FILE_KEYS = new Set([
  'dataDir',
  'grpcPort',
  'httpPort',
  'host',
  'flush',
  'autoCreateTopics',
  'autoCreateGroups',
  'enableMixedMessageType',
  'brokerName',
  'logLevel',
  'shutdownGraceMs',
  'store',
  'produce',
  'consume',
  'flowControl',
]);

/** Defaults of the nested sections: a key's default fixes the type its value must have. */
const SECTION_DEFAULTS: Record<'store' | 'produce' | 'consume' | 'flowControl', Record<string, unknown>> = {
  store: omit(STORE_DEFAULTS, 'flush'),
  produce: { ...DEFAULT_PRODUCE_LIMITS },
  consume: omit(DEFAULT_CONSUME_OPTIONS, 'autoCreateGroups'),
  flowControl: { ...DEFAULT_FLOW_CONTROL },
};

/** Where a value came from, for error messages. */
type Source = string;

// ---------------------------------------------------------------------------------------------------
// Value parsers (each throws a usage error naming the source)

function parsePort(raw: unknown, source: Source): number {
  const s = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
  if (!/^\d{1,5}$/.test(s) || Number(s) > 65535) {
    throw usageError(`${source}: "${String(raw)}" is not a port number (0-65535)`);
  }
  return Number(s);
}

function parsePortList(raw: unknown, source: Source): number[] {
  const items: unknown[] = Array.isArray(raw)
    ? raw.flatMap((x) => (typeof x === 'string' ? x.split(',') : [x]))
    : typeof raw === 'string'
      ? raw.split(',')
      : [raw];
  if (items.length === 0) throw usageError(`${source}: at least one port is required`);
  const ports = items.map((x) => parsePort(x, source));
  const seen = new Set<number>();
  for (const p of ports) {
    if (p !== 0 && seen.has(p)) throw usageError(`${source}: port ${p} is listed twice`);
    seen.add(p);
  }
  return ports;
}

function parseFlush(raw: unknown, source: Source): FlushPolicy {
  if (typeof raw === 'string' && (FLUSH_POLICIES as string[]).includes(raw)) return raw as FlushPolicy;
  throw usageError(`${source}: unknown flush policy "${String(raw)}" (expected sync or async)`);
}

function parseLogLevel(raw: unknown, source: Source): string {
  if (typeof raw === 'string' && (LOG_LEVELS as readonly string[]).includes(raw)) return raw;
  throw usageError(`${source}: unknown log level "${String(raw)}" (expected ${LOG_LEVELS.join(', ')})`);
}

function parseBool(raw: unknown, source: Source): boolean {
  if (typeof raw === 'boolean') return raw;
  if (typeof raw === 'string') {
    const v = raw.trim().toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(v)) return true;
    if (['false', '0', 'no', 'off'].includes(v)) return false;
  }
  throw usageError(`${source}: "${String(raw)}" is not a boolean (expected true or false)`);
}

function parseText(raw: unknown, source: Source): string {
  if (typeof raw === 'string' && raw.trim() !== '') return raw;
  throw usageError(`${source}: expected a non-empty string`);
}

function parseNonNegative(raw: unknown, source: Source): number {
  if (typeof raw === 'number' && Number.isFinite(raw) && raw >= 0) return raw;
  throw usageError(`${source}: expected a number ≥ 0`);
}

function parseSection(
  name: 'store' | 'produce' | 'consume' | 'flowControl',
  raw: unknown,
  source: Source,
): Record<string, number | boolean> {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw usageError(`${source}: "${name}" must be an object`);
  }
  const defaults = SECTION_DEFAULTS[name];
  const out: Record<string, number | boolean> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!(k in defaults)) {
      throw usageError(`${source}: unknown key "${name}.${k}" (known: ${Object.keys(defaults).join(', ')})`);
    }
    const want = typeof defaults[k];
    if (want === 'number' ? typeof v !== 'number' || !Number.isFinite(v) || v < 0 : typeof v !== want) {
      throw usageError(`${source}: "${name}.${k}" must be a ${want === 'number' ? 'number ≥ 0' : want}`);
    }
    out[k] = v as number | boolean;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Sources

function readConfigFile(path: string, read: (p: string) => string): Record<string, unknown> {
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    throw usageError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw usageError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    throw usageError(`config file ${path} must hold a JSON object`);
  }
  for (const k of Object.keys(json)) {
    if (!FILE_KEYS.has(k)) {
      throw usageError(`config file ${path}: unknown key "${k}" (known: ${[...FILE_KEYS].join(', ')})`);
    }
  }
  return json as Record<string, unknown>;
}

/** An environment variable, treating an empty value as unset. */
function envOf(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

export interface ResolveOptions {
  /** @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
  /** @defaultValue fs.readFileSync(path, 'utf8') */
  readFile?: (path: string) => string;
}

/** Resolve the broker's settings: flags > environment > config file > defaults. */
export function resolveBrokerConfig(flags: BrokerFlags, options: ResolveOptions = {}): BrokerConfig {
  const env = options.env ?? process.env;
  const read = options.readFile ?? ((p: string) => readFileSync(p, 'utf8'));

  const configFile = flags.config ?? envOf(env, 'VELA_CONFIG') ?? null;
  const file = configFile ? readConfigFile(configFile, read) : {};
  const inFile = (k: string) => file[k] !== undefined;
  const fileSrc = (k: string) => `config file ${configFile}: "${k}"`;
  const fileSection = `config file ${configFile}`;

  /** One setting through the chain: flag, then env var, then file key, then default. */
  function pick<T>(
    flag: unknown,
    flagName: string,
    envName: string,
    fileKey: string,
    parse: (raw: unknown, source: Source) => T,
    fallback: T,
  ): T {
    if (flag !== undefined) return parse(flag, flagName);
    const e = envOf(env, envName);
    if (e !== undefined) return parse(e, envName);
    if (inFile(fileKey)) return parse(file[fileKey], fileSrc(fileKey));
    return fallback;
  }

  const autoCreateEnv = envOf(env, 'VELA_AUTO_CREATE');
  const autoCreate =
    flags.autoCreate === true
      ? true
      : autoCreateEnv !== undefined
        ? parseBool(autoCreateEnv, 'VELA_AUTO_CREATE')
        : undefined;
  const fileBool = (k: string, fallback: boolean) => (inFile(k) ? parseBool(file[k], fileSrc(k)) : fallback);

  const grpcPorts = pick(
    flags.grpcPort && flags.grpcPort.length > 0 ? flags.grpcPort : undefined,
    '--grpc-port',
    'VELA_GRPC_PORT',
    'grpcPort',
    parsePortList,
    [...BROKER_DEFAULTS.grpcPorts],
  );
  const httpPort = pick(
    flags.httpPort,
    '--http-port',
    'VELA_HTTP_PORT',
    'httpPort',
    parsePort,
    BROKER_DEFAULTS.httpPort,
  );
  if (httpPort !== 0 && grpcPorts.includes(httpPort)) {
    throw usageError(`port ${httpPort} is given both as a gRPC port and as the HTTP port`);
  }

  const config: BrokerConfig = {
    dataDir: pick(
      flags.dataDir,
      '--data-dir',
      'VELA_DATA_DIR',
      'dataDir',
      parseText,
      BROKER_DEFAULTS.dataDir,
    ),
    grpcPorts: Object.freeze(grpcPorts),
    httpPort,
    host: pick(flags.host, '--host', 'VELA_HOST', 'host', parseText, BROKER_DEFAULTS.host),
    flush: pick(flags.flush, '--flush', 'VELA_FLUSH', 'flush', parseFlush, BROKER_DEFAULTS.flush),
    autoCreateTopics: autoCreate ?? fileBool('autoCreateTopics', BROKER_DEFAULTS.autoCreateTopics),
    autoCreateGroups: autoCreate ?? fileBool('autoCreateGroups', BROKER_DEFAULTS.autoCreateGroups),
    enableMixedMessageType: pick(
      flags.enableMixedMessageType ? true : undefined,
      '--enable-mixed-message-type',
      'VELA_ENABLE_MIXED_MESSAGE_TYPE',
      'enableMixedMessageType',
      parseBool,
      BROKER_DEFAULTS.enableMixedMessageType,
    ),
    brokerName: pick(
      flags.brokerName,
      '--broker-name',
      'VELA_BROKER_NAME',
      'brokerName',
      parseText,
      BROKER_DEFAULTS.brokerName,
    ),
    logLevel: pick(
      flags.logLevel,
      '--log-level',
      'VELA_LOG_LEVEL',
      'logLevel',
      parseLogLevel,
      BROKER_DEFAULTS.logLevel,
    ),
    shutdownGraceMs: inFile('shutdownGraceMs')
      ? parseNonNegative(file.shutdownGraceMs, fileSrc('shutdownGraceMs'))
      : BROKER_DEFAULTS.shutdownGraceMs,
    configFile,
    store: Object.freeze(inFile('store') ? parseSection('store', file.store, fileSection) : {}),
    produce: Object.freeze(inFile('produce') ? parseSection('produce', file.produce, fileSection) : {}),
    consume: Object.freeze(inFile('consume') ? parseSection('consume', file.consume, fileSection) : {}),
    flowControl: Object.freeze(
      inFile('flowControl') ? parseSection('flowControl', file.flowControl, fileSection) : {},
    ),
  };
  return Object.freeze(config);
}

/** The `startBroker` options for a resolved config (the logger is the caller's). */
export function toStartOptions(c: BrokerConfig): StartBrokerOptions {
  return {
    dataDir: c.dataDir,
    grpcPort: [...c.grpcPorts],
    httpPort: c.httpPort,
    host: c.host,
    flush: c.flush,
    autoCreateTopics: c.autoCreateTopics,
    autoCreateGroups: c.autoCreateGroups,
    enableMixedMessageType: c.enableMixedMessageType,
    brokerName: c.brokerName,
    shutdownGraceMs: c.shutdownGraceMs,
    store: { ...c.store },
    produce: { ...c.produce },
    consume: { ...c.consume },
    flowControl: { ...c.flowControl },
  };
}

function omit<T extends object, K extends keyof T>(o: T, key: K): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(o as Record<string, unknown>) };
  delete out[key as string];
  return out;
}
