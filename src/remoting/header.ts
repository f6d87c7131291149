/**
 * Typed access to a request's custom header (`extFields`): RocketMQ writes numbers and booleans as
 * decimal text; a missing required field is a clear `BAD_REQUEST` naming it. Unknown keys (`ns`,
 * `bname`, `lo` …) are ignored.
 */
import { VelaError } from '../common/errors.js';

export class Header {
  constructor(private readonly ext: Readonly<Record<string, string>>) {}

  has(name: string): boolean {
    const v = this.ext[name];
    return v !== undefined && v !== '' && v !== 'null';
  }

  optStr(name: string): string | undefined {
    return this.has(name) ? this.ext[name] : undefined;
  }

  str(name: string): string {
    const v = this.optStr(name);
    if (v === undefined) throw new VelaError('BAD_REQUEST', `the header field "${name}" is required`);
    return v;
  }

  optInt(name: string): number | undefined {
    const v = this.optStr(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isSafeInteger(n))
      throw new VelaError('BAD_REQUEST', `the header field "${name}" is not an integer: "${v}"`);
    return n;
  }

  int(name: string): number {
    const n = this.optInt(name);
    if (n === undefined) throw new VelaError('BAD_REQUEST', `the header field "${name}" is required`);
    return n;
  }

  /** A Java long that may exceed 2^53 (e.g. Long.MAX_VALUE as "no end"): clamped to safe integers. */
  optLong(name: string): number | undefined {
    const v = this.optStr(name);
    if (v === undefined) return undefined;
    if (!/^-?\d+$/.test(v))
      throw new VelaError('BAD_REQUEST', `the header field "${name}" is not an integer: "${v}"`);
    const n = Number(v);
    return Math.max(Number.MIN_SAFE_INTEGER, Math.min(Number.MAX_SAFE_INTEGER, n));
  }

  optBool(name: string): boolean | undefined {
    const v = this.optStr(name);
    return v === undefined ? undefined : v === 'true';
  }
}
