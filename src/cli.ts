#!/usr/bin/env node
/**
 * The `vela` command: `vela broker` runs the broker, `vela admin <command>` administers one,
 * `vela bench producer|consumer|e2e` loads one.
 * Every failure ends as one line on stderr; exit 0 on success, 1 when the operation failed, 2 for a
 * usage error (unknown command, bad or missing flag, bad configuration).
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerBrokerCommand } from './cli/broker-command.js';
import { registerAdminCommands } from './admin/cli/commands.js';
import { registerBenchCommand } from './bench/command.js';
import { CliError, ExitCode, oneLine } from './common/cli-error.js';

// package.json is one level up from both src/cli.ts and dist/cli.js.
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const program = new Command('vela')
  .description('Vela: a RocketMQ 5 compatible message broker for Node.js')
  .version(version, '-V, --version')
  .exitOverride()
  .configureOutput({ outputError: (str, write) => write(`${oneLine(str)}\n`) });

registerBrokerCommand(program);
registerAdminCommands(program);
registerBenchCommand(program);

function exitCodeOf(err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander has already printed its one-line message (or the help).
    return err.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
  }
  if (err instanceof CliError) {
    process.stderr.write(`error: ${oneLine(err.message)}\n`);
    return err.exitCode;
  }
  // A bug rather than a user's mistake: keep the stack.
  process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return ExitCode.FAILURE;
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.exitCode = exitCodeOf(err);
}
