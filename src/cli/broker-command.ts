/**
 * `vela broker`: resolve the settings, start the broker (gRPC endpoint + admin HTTP API) with a pino
 * logger, log one ready line, and shut down cleanly on SIGINT/SIGTERM (a second signal forces the
 * exit). Expected start-up failures (data directory locked, port in use) are one line on stderr.
 *
 * The broker's modules are imported only when the command runs, so `vela admin` starts fast.
 */
import type { Command } from 'commander';
import { TOP_SCHEMA, type Setting } from '../common/config.js';
import type { BrokerConfig, BrokerFlags } from './broker-config.js';
import type { RunningBroker } from '../server.js';
import type { Logger } from '../common/logger.js';
import { CliError, ExitCode, oneLine } from '../common/cli-error.js';

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** Flags come from the settings schema (common/config.ts): name, help, variable and default once. */
export function registerBrokerCommand(program: Command): void {
  const cmd = program
    .command('broker')
    .description('start the broker: gRPC endpoint, admin HTTP API and embedded storage');
  for (const s of Object.values(TOP_SCHEMA) as Setting<unknown>[]) {
    if (!s.flag) continue;
    const help = `${s.doc.replace(/`/g, '')} [env ${s.env}] (default: ${String(s.default)})`;
    if (s.kind.type === 'ports') cmd.option(s.flag, `${help}; may be repeated`, collect);
    else cmd.option(s.flag, help);
  }
  cmd
    .option('--config <file>', 'JSON config file [env VELA_CONFIG]')
    .option('--auto-create', 'both --auto-create-topics and --auto-create-groups [env VELA_AUTO_CREATE]')
    .action(async (flags: BrokerFlags) => {
      const code = await runBroker(flags);
      // A server process ends here: nothing it started may keep it alive after a clean close.
      process.exit(code);
    });
}

/** Run the broker until a signal stops it; resolves with the process exit code. */
export async function runBroker(flags: BrokerFlags): Promise<number> {
  let config: BrokerConfig;
  try {
    const { resolveBrokerConfig } = await import('./broker-config.js');
    config = resolveBrokerConfig(flags);
  } catch (err) {
    return report(err);
  }

  const { createLogger } = await import('../common/logger.js');
  const logger = createLogger({ level: config.logLevel });
  const { applyHeapGrowing } = await import('./broker-heap.js');
  const heapGrowingPercent = applyHeapGrowing(config.heapGrowingPercent) ? config.heapGrowingPercent : null;

  // Signals are handled from the start, so a Ctrl-C during recovery still closes the store cleanly.
  let signalled: NodeJS.Signals | null = null;
  let onStop: (sig: NodeJS.Signals) => void = () => {};
  const stopped = new Promise<NodeJS.Signals>((resolve) => (onStop = resolve));
  const onSignal = (sig: NodeJS.Signals) => {
    if (signalled) {
      process.stderr.write(`vela broker: ${sig} again, exiting without a clean shutdown\n`);
      process.exit(ExitCode.FAILURE);
    }
    signalled = sig;
    onStop(sig);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let running: RunningBroker;
  try {
    const { startBroker } = await import('../server.js');
    const { toStartOptions } = await import('./broker-config.js');
    running = await startBroker({ ...toStartOptions(config), logger });
  } catch (err) {
    return report(err, config, logger);
  }

  if (!signalled) {
    const grpc = running.grpcPorts.map((p) => `${running.host}:${p}`).join(', ');
    const http = `http://${running.host}:${running.httpPort}`;
    logger.info(
      {
        grpc: running.grpcPorts.map((p) => `${running.host}:${p}`),
        remoting: running.remotingAddress,
        http,
        dataDir: config.dataDir,
        flush: config.flush,
        configFile: config.configFile,
        heapGrowingPercent,
      },
      `Vela broker ready: gRPC ${grpc} · Remoting ${running.remotingAddress} · admin HTTP ${http} · data ${config.dataDir} (flush ${config.flush})`,
    );
  }

  const sig = await stopped;
  logger.info({ signal: sig }, `${sig} received, shutting down`);
  try {
    await running.close();
  } catch (err) {
    logger.error({ err }, 'shutdown failed');
    return ExitCode.FAILURE;
  }
  logger.info('Vela broker stopped');
  return ExitCode.OK;
}

/** One line on stderr for an expected failure; the stack only for the unexpected, and only at debug. */
async function report(err: unknown, config?: BrokerConfig, logger?: Logger): Promise<number> {
  if (err instanceof CliError) {
    process.stderr.write(`vela broker: ${oneLine(err.message)}\n`);
    return err.exitCode;
  }
  const { isVelaError } = await import('../common/errors.js');
  const message = err instanceof Error ? err.message : String(err);
  if (isVelaError(err, 'STORE_LOCKED')) {
    process.stderr.write(
      `vela broker: ${oneLine(message)} (is another broker running on ${config?.dataDir ?? 'it'}? ` +
        'stop it or choose another --data-dir)\n',
    );
  } else if (/already in use/.test(message)) {
    const flag = /^HTTP/.test(message)
      ? '--http-port'
      : /^gRPC/.test(message)
        ? '--grpc-port'
        : /^Remoting/.test(message)
          ? '--remoting-port'
          : 'another port';
    process.stderr.write(`vela broker: ${oneLine(message)} (choose another with ${flag})\n`);
  } else if (isVelaError(err)) {
    process.stderr.write(`vela broker: ${oneLine(message)}\n`);
  } else {
    process.stderr.write(`vela broker: cannot start: ${oneLine(message)}\n`);
    logger?.debug({ err }, 'start-up failure');
  }
  return ExitCode.FAILURE;
}
