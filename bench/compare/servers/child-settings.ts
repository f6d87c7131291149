/**
 * What the comparison's Vela broker child (vela-broker-child.ts) starts with. `VELA_COMPARE_CONFIG`
 * (a JSON object of broker settings) is an A/B of settings, so it overrides the child's own choices
 * — sync flush, a short shutdown grace — but never where the broker listens or keeps its data, which
 * are the harness's.
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
  return { ...parseCompareConfig(env.VELA_COMPARE_CONFIG), ...parseCompareConfig(env[BROKER_CONFIG_ENV]) };
}

/** `VELA_COMPARE_CONFIG`'s settings (or another such variable's): a JSON object, or none. */
export function parseCompareConfig(raw: string | undefined): Record<string, unknown> {
  if (!raw) return {};
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`VELA_COMPARE_CONFIG must be a JSON object of broker settings, not ${raw}`);
  }
  return parsed as Record<string, unknown>;
}
