/**
 * Option-argument parsers for `vela admin`, in mqadmin's syntax: integers, `true|false`, the
 * attribute list `+key=value,…` and the group retry policy JSON. A bad value is a commander
 * `InvalidArgumentError`, i.e. a one-line usage error (exit 2) naming the option.
 */
import { InvalidArgumentError } from 'commander';

export function parseInteger(value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('Expected an integer.');
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('The integer is out of range.');
  return n;
}

export function parseBoolean(value: string): boolean {
  const v = value.trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new InvalidArgumentError('Expected true or false.');
}

/**
 * mqadmin's attribute syntax: a comma-separated list of `+key=value` (set). `-key` (remove) is
 * refused: Vela keeps `message.type` mandatory and has no other removable attribute yet.
 */
export function parseAttributes(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of value.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    if (item.startsWith('-')) {
      throw new InvalidArgumentError(
        `Removing an attribute ("${item}") is not supported; set a value instead, e.g. +message.type=NORMAL.`,
      );
    }
    const m = /^\+([^=\s]+)=(.*)$/.exec(item);
    if (!m) {
      throw new InvalidArgumentError(`"${item}" is not of the form +key=value (e.g. +message.type=FIFO).`);
    }
    out[m[1]!] = m[2]!.trim();
  }
  if (Object.keys(out).length === 0) {
    throw new InvalidArgumentError('Expected at least one +key=value (e.g. +message.type=FIFO).');
  }
  return out;
}

/**
 * mqadmin's `groupRetryPolicy` JSON, checked only for being a JSON object: the server validates
 * the policy itself and answers with a precise message.
 */
export function parseRetryPolicyJson(value: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (err) {
    throw new InvalidArgumentError(
      `Not valid JSON (${(err as Error).message}). Expected e.g. ` +
        '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000]}}.',
    );
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    throw new InvalidArgumentError('Expected a JSON object with a "type" (CUSTOMIZED or EXPONENTIAL).');
  }
  return json as Record<string, unknown>;
}

/**
 * mqadmin's `resetOffsetByTime -s` forms: `now`, milliseconds since the epoch, or
 * `yyyy-MM-dd#HH:mm:ss:SSS` in local time.
 */
export function parseResetTime(value: string): number {
  const v = value.trim();
  if (v.toLowerCase() === 'now') return Date.now();
  if (/^\d+$/.test(v)) return Number(v);
  const m = /^(\d{4})-(\d{2})-(\d{2})#(\d{2}):(\d{2}):(\d{2})(?::(\d{3}))?$/.exec(v);
  if (m) {
    const [, y, mo, d, h, mi, s, ms] = m.map(Number) as number[];
    const t = new Date(y!, mo! - 1, d!, h!, mi!, s!, ms ?? 0);
    if (!Number.isNaN(t.getTime()) && t.getMonth() === mo! - 1) return t.getTime();
  }
  throw new InvalidArgumentError(
    `invalid time "${value}": use now, epoch milliseconds or yyyy-MM-dd#HH:mm:ss:SSS`,
  );
}
