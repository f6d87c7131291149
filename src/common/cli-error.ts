/**
 * How the `vela` command fails: a one-line message on stderr and an exit code (codes.ts `ExitCode`).
 * Usage errors (bad flags, bad configuration) exit 2; a refused operation exits 1; a busy,
 * unreachable or failing broker exits 3, so scripts know when trying again may help. A RocketMQ code
 * reported by the broker exits with that code's `exit` fact.
 */
import { ExitCode, codeFacts } from './codes.js';
import { escapeControl } from './escape.js';

export { ExitCode };

export class CliError extends Error {
  override readonly name = 'CliError';

  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.FAILURE,
  ) {
    super(message);
  }
}

/** A failure the broker reported with a RocketMQ status code. */
export function codeError(message: string, code: number): CliError {
  return new CliError(message, codeFacts(code).exit);
}

/** A usage error: the command line, an environment variable or the config file is wrong. */
export function usageError(message: string): CliError {
  return new CliError(message, ExitCode.USAGE);
}

/** Collapse a message onto one line (for stderr), control characters from the network escaped. */
export function oneLine(message: string): string {
  return escapeControl(message.trim().replace(/\s*\n\s*/g, ' '));
}
