#!/usr/bin/env node
/** The `vela` command. */
import { Command } from 'commander';

const program = new Command();
program.name('vela').description('Vela: a RocketMQ 5 compatible message broker for Node.js');

program
  .command('broker')
  .description('start the broker with embedded storage')
  .action(() => {
    console.error(
      'vela broker: the gRPC broker is not built yet (storage engine only in this version). ' +
        'See README.md for what is available.',
    );
    process.exitCode = 1;
  });

program.parseAsync().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
});
