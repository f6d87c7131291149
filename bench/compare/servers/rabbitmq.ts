/**
 * RabbitMQ from Debian's rabbitmq-server package, as a private node: its own epmd on a free port,
 * node name, AMQP and distribution ports, config, data and log directories under a temp dir, no
 * plugins. Quorum queues fsync their write-ahead log before publisher confirms.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import amqp from 'amqplib';
import { ManagedProcess, waitReady } from './managed-process.js';
import { freePort, privateDir, stopAndRemove, sumUsage, type RunningServer } from './server.js';

const SERVER_SCRIPT = '/usr/lib/rabbitmq/bin/rabbitmq-server';

export async function startRabbitMq(): Promise<RunningServer> {
  const dir = privateDir('rabbitmq');
  const [port, distPort, epmdPort] = [await freePort(), await freePort(), await freePort()];
  writeFileSync(join(dir, 'enabled_plugins'), '[].\n');
  writeFileSync(join(dir, 'rabbitmq-env.conf'), '');
  writeFileSync(
    join(dir, 'rabbitmq.conf'),
    [
      `listeners.tcp.default = 127.0.0.1:${port}`,
      'loopback_users = none',
      'log.console = false',
      'log.file.level = warning',
      '',
    ].join('\n'),
  );
  const log = join(dir, 'server.log');
  const env = {
    PATH: process.env.PATH,
    HOME: dir, // the Erlang cookie goes here
    LANG: 'C.UTF-8',
    ERL_EPMD_PORT: String(epmdPort),
    RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
    RABBITMQ_NODENAME: `velacompare${process.pid}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    // Our own epmd below: the VM must not start (and leave behind) a daemonized one.
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-start_epmd false',
  };
  const epmd = new ManagedProcess('epmd', 'epmd', ['-port', String(epmdPort)], {
    env,
    cwd: dir,
    logFile: log,
  });
  const procs = [epmd];
  try {
    const rabbit = new ManagedProcess('rabbitmq-server', SERVER_SCRIPT, [], { env, cwd: dir, logFile: log });
    // Stop the broker before its epmd.
    procs.unshift(rabbit);
    await waitReady(
      rabbit,
      async () => {
        const c = await amqp.connect(`amqp://guest:guest@127.0.0.1:${port}`);
        await c.close();
        return true;
      },
      90_000,
      log,
    );
  } catch (err) {
    await stopAndRemove(procs, dir).catch(() => {});
    throw err;
  }
  return { port, dir, usage: () => sumUsage(procs), stop: () => stopAndRemove(procs, dir) };
}
