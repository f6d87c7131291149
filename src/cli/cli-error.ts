/**
 * How the `vela` command fails: a one-line message on stderr and an exit code. Usage errors (bad
 * flags, bad configuration) exit 2; failures of the operation itself (server errors, a locked data
 * directory, a port in use, an unreachable server) exit 1.
 *
 * These are not broker errors: they never cross the wire, so they carry an exit code rather than an
 * entry of the RocketMQ error catalogue (a `VelaError` from the server is reported through them).
 */

export const ExitCode = {
  OK: 0,
  FAILURE: 1,
  USAGE: 2,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export class CliError extends Error {
  override readonly name = 'CliError';

  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.FAILURE,
  ) {
    super(message);
  }
}

/** A usage error: the command line, an environment variable or the config file is wrong. */
export function usageError(message: string): CliError {
  return new CliError(message, ExitCode.USAGE);
}

/** Collapse a message onto one line (for stderr). */
export function oneLine(message: string): string {
  return message.trim().replace(/\s*\n\s*/g, ' ');
}
