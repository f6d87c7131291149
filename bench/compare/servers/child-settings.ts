/**
 * What the comparison's Vela broker child (vela-broker-child.ts) starts with. `VELA_COMPARE_CONFIG`
 * (a JSON object of broker settings, for every Vela broker of a run) and `VELA_COMPARE_BROKER_CONFIG`
 * (`--broker-config`, this checkout's broker only, over the former) are an A/B of settings, so they
 * override the child's own choices — sync flush, a short shutdown grace — but never where the broker
 * listens or keeps its data, which are the harness's.
 */

/** The child's broker settings for `dataDir`, with `extra` (parsed `VELA_COMPARE_CONFIG`) merged in. */
export function childBrokerSettings(
  dataDir: string,
  extra: Record<string, unknown>,
): Record<string, unknown> & { dataDir: string } {
  return {
    flush: 'sync',
    shutdownGraceMs: 2000,
    ...extra,
    dataDir,
    host: '127.0.0.1',
    grpcPort: 0,
    httpPort: 0,
    remotingPort: 0,
  };
}

/**
 * This checkout's broker's own settings (`bench:compare --broker-config`), passed to its child only and
 * merged over `VELA_COMPARE_CONFIG`'s: top-level keys replace theirs.
 */
export const BROKER_CONFIG_ENV = 'VELA_COMPARE_BROKER_CONFIG';

/** The A/B settings of one broker child: `VELA_COMPARE_CONFIG`'s, then its own over them. */
export function compareSettings(env: NodeJS.ProcessEnv): Record<string, unknown> {
  return {
    ...parseCompareConfig(env.VELA_COMPARE_CONFIG),
    ...parseCompareConfig(env[BROKER_CONFIG_ENV], BROKER_CONFIG_ENV),
  };
}

/** Settings given as a JSON object (`name`: where they came from, for the error), or none. */
export function parseCompareConfig(
  raw: string | undefined,
  name = 'VELA_COMPARE_CONFIG',
): Record<string, unknown> {
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new Error(`${name} is not JSON (${(err as Error).message}): ${raw}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`${name} must be a JSON object of broker settings, not ${raw}`);
  }
  return parsed as Record<string, unknown>;
}
