/**
 * Where `vela broker` gets its settings: flags > environment > config file > defaults. Each setting's
 * flag, variable, config-file key and default come from the schema in common/config.ts; this module
 * only reads the sources, turns strings into values, layers them and hands the result to the one
 * resolver. Every failure is a usage error naming its source, before anything starts.
 */
import { readFileSync } from 'node:fs';
import {
  TOP_SCHEMA,
  resolveConfig,
  type ConfigInput,
  type Setting,
  type SettingKind,
  type VelaConfig,
} from '../common/config.js';
import { isVelaError } from '../common/errors.js';
import { usageError } from '../common/cli-error.js';
import type { StartBrokerOptions } from '../server.js';

type TopKey = keyof typeof TOP_SCHEMA;

/** Flags as commander hands them over (camel-cased flag names): raw strings, checked here. */
export interface BrokerFlags {
  config?: string;
  /** `--auto-create`: both automatic creations. */
  autoCreate?: boolean;
  /** Each `--grpc-port` occurrence (each may be a comma-separated list). */
  grpcPort?: string[];
  [flag: string]: string | string[] | boolean | undefined;
}

export interface BrokerConfig extends VelaConfig {
  /** The config file read, if any. */
  readonly configFile: string | null;
}

export interface ResolveOptions {
  /** @defaultValue process.env */
  env?: NodeJS.ProcessEnv;
  /** @defaultValue fs.readFileSync(path, 'utf8') */
  readFile?: (path: string) => string;
}

/** The alias that sets both automatic creations. */
const AUTO_CREATE = { flag: '--auto-create', env: 'VELA_AUTO_CREATE' } as const;
const AUTO_CREATE_KEYS: readonly TopKey[] = ['autoCreateTopics', 'autoCreateGroups'];

/** The commander property a flag lands in: `--data-dir <dir>` → `dataDir`. */
export function flagProperty(flag: string): string {
  const name = flag.split(/\s/)[0]!.replace(/^--/, '');
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

const flagName = (flag: string) => flag.split(/\s/)[0]!;

/** Resolve the broker's settings: flags > environment > config file > defaults. */
export function resolveBrokerConfig(flags: BrokerFlags, options: ResolveOptions = {}): BrokerConfig {
  const env = options.env ?? process.env;
  const read = options.readFile ?? ((p: string) => readFileSync(p, 'utf8'));
  const configFile = flags.config ?? envOf(env, 'VELA_CONFIG') ?? null;
  const file = configFile ? readConfigFile(configFile, read) : {};

  const input: Record<string, unknown> = { ...file };
  const origin = new Map<string, string>();
  const fileOrigin = `config file ${configFile}`;
  for (const k of Object.keys(file)) origin.set(k, fileOrigin);

  const set = (key: TopKey, raw: unknown, source: string) => {
    input[key] = parseRaw(raw, TOP_SCHEMA[key] as Setting<unknown>, source);
    origin.set(key, source);
  };
  // Environment first, then flags over it; a setting's own name wins over the alias.
  const aliasEnv = envOf(env, AUTO_CREATE.env);
  if (aliasEnv !== undefined) for (const k of AUTO_CREATE_KEYS) set(k, aliasEnv, AUTO_CREATE.env);
  for (const [key, s] of Object.entries(TOP_SCHEMA) as [TopKey, Setting<unknown>][]) {
    const v = s.env ? envOf(env, s.env) : undefined;
    if (v !== undefined) set(key, v, s.env!);
  }
  if (flags.autoCreate === true) for (const k of AUTO_CREATE_KEYS) set(k, true, AUTO_CREATE.flag);
  for (const [key, s] of Object.entries(TOP_SCHEMA) as [TopKey, Setting<unknown>][]) {
    if (!s.flag) continue;
    const v = flags[flagProperty(s.flag)];
    if (v === undefined || (Array.isArray(v) && v.length === 0)) continue;
    set(key, v, flagName(s.flag));
  }

  try {
    const config = resolveConfig(input as ConfigInput, (path) => {
      const top = path.split('.')[0]!;
      return origin.get(top) ?? fileOrigin;
    });
    return Object.freeze({ ...config, configFile });
  } catch (err) {
    if (isVelaError(err, 'ILLEGAL_CONFIG'))
      throw usageError(err.message.replace(/^illegal configuration: /, ''));
    throw err;
  }
}

/** The `startBroker` options for a resolved config (the logger is the caller's). */
export function toStartOptions(c: BrokerConfig): StartBrokerOptions {
  // The heap growing factor is the process's (`vela broker` sets it; broker-heap.ts), not the broker's.
  const { configFile: _file, grpcPorts, heapGrowingPercent: _heap, ...rest } = c;
  return { ...rest, grpcPort: [...grpcPorts] };
}

// ---------------------------------------------------------------------------------------------------
// Strings from flags and the environment into values

function parseRaw(raw: unknown, s: Setting<unknown>, source: string): unknown {
  if (typeof raw !== 'string' && !Array.isArray(raw)) return raw; // booleans from flags
  return parseString(raw, s.kind, source);
}

function parseString(raw: string | string[], kind: SettingKind, source: string): unknown {
  const text = Array.isArray(raw) ? raw.join(',') : raw;
  switch (kind.type) {
    case 'port':
      return parsePort(text, source);
    case 'ports': {
      const items = text.split(',');
      return items.map((x) => parsePort(x, source));
    }
    case 'boolean': {
      const v = text.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) return true;
      if (['false', '0', 'no', 'off'].includes(v)) return false;
      throw usageError(`${source}: "${text}" is not a boolean (expected true or false)`);
    }
    case 'number': {
      const n = Number(text.trim());
      if (text.trim() === '' || !Number.isFinite(n)) throw usageError(`${source}: "${text}" is not a number`);
      return n;
    }
    case 'choice':
      if (!kind.choices.includes(text)) {
        throw usageError(`${source}: unknown ${kind.label} "${text}" (expected ${kind.choices.join(', ')})`);
      }
      return text;
    case 'string':
      if (text.trim() === '') throw usageError(`${source}: expected a non-empty string`);
      return text;
  }
}

function parsePort(raw: string, source: string): number {
  const s = raw.trim();
  if (!/^\d{1,5}$/.test(s) || Number(s) > 65535) {
    throw usageError(`${source}: "${raw}" is not a port number (0-65535)`);
  }
  return Number(s);
}

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
  return json as Record<string, unknown>;
}

/** An environment variable, treating an empty value as unset. */
function envOf(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}
