/**
 * The HTTP client of `vela admin`: calls the broker's admin JSON API (src/admin/http-server.ts) with
 * Node's global fetch and turns every failure into a one-line `CliError`: the server's message and
 * RocketMQ code for an API error, the address and cause when the server cannot be reached.
 */
import { CliError, ExitCode, codeError, usageError } from '../../common/cli-error.js';
import { adminRequestHeaders } from '../../common/signature.js';

/** A user's keys, to sign requests to a broker running with access control. */
export interface AdminCredentials {
  accessKey: string;
  secretKey: string;
}

/** Where `vela admin` looks for the broker when neither `-n` nor `VELA_ADMIN_ADDR` is given. */
export const DEFAULT_ADMIN_ADDR = '127.0.0.1:8082';

/** How long one call may take. */
const TIMEOUT_MS = 30_000;

/** `host:port` or an http(s) URL → the API's base URL. */
export function adminBaseUrl(addr: string): string {
  const a = addr.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(a) ? a : `http://${a}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw usageError(`-n: "${addr}" is not an address (expected host:port, e.g. ${DEFAULT_ADMIN_ADDR})`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) {
    throw usageError(`-n: "${addr}" is not an address (expected host:port, e.g. ${DEFAULT_ADMIN_ADDR})`);
  }
  return url.origin + url.pathname.replace(/\/+$/, '');
}

/** The error body of the admin API. */
interface ApiErrorBody {
  code?: number;
  error?: string;
  message?: string;
}

export class AdminClient {
  readonly baseUrl: string;

  constructor(
    addr: string,
    /** The broker's admin token, sent as `Authorization: Bearer …` when given. */
    private readonly token?: string,
    private readonly credentials?: AdminCredentials,
  ) {
    this.baseUrl = adminBaseUrl(addr);
  }

  get<T>(path: string, query?: Record<string, string | number | undefined>): Promise<T> {
    return this.call<T>('GET', path, undefined, query);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  put<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PUT', path, body);
  }

  delete<T>(path: string, query?: Record<string, string | number | undefined>): Promise<T> {
    return this.call<T>('DELETE', path, undefined, query);
  }

  private headers(json: boolean): Record<string, string> {
    return adminRequestHeaders({ json, token: this.token, credentials: this.credentials });
  }

  private async call<T>(
    method: string,
    path: string,
    body?: unknown,
    query?: Record<string, string | number | undefined>,
  ): Promise<T> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: this.headers(body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      throw new CliError(
        `cannot reach the Vela admin API at ${this.baseUrl}: ${causeOf(err)}`,
        ExitCode.RETRY_LATER,
      );
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new CliError(
        `unexpected answer from ${this.baseUrl} (HTTP ${res.status}, not JSON): is it a Vela admin API?`,
      );
    }
    if (!res.ok) {
      const e = (json ?? {}) as ApiErrorBody;
      const detail = [e.error, e.code !== undefined ? `code ${e.code}` : `HTTP ${res.status}`]
        .filter(Boolean)
        .join(', ');
      const message = `${e.message ?? `HTTP ${res.status} ${res.statusText}`} (${detail})`;
      if (e.code !== undefined) throw codeError(message, e.code);
      throw new CliError(message, res.status >= 500 ? ExitCode.RETRY_LATER : ExitCode.FAILURE);
    }
    return json as T;
  }
}

/** The useful part of a fetch failure: `fetch failed` hides the real cause one level down. */
function causeOf(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `no answer within ${TIMEOUT_MS / 1000} s`;
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (!cause.message) return code ?? cause.name;
    return code && !cause.message.includes(code) ? `${code} ${cause.message}` : cause.message;
  }
  return err instanceof Error ? err.message : String(err);
}
