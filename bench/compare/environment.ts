/**
 * The machine and the software being compared: installs missing servers from Debian's packages
 * (apt-get, as root), and reports the machine and every version for the table's header.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { remotingVersions } from './remoting-rows.js';
import type { MachineInfo, Target } from './types.js';

/** Debian packages each peer needs (all in Debian 12 "bookworm"). */
const PACKAGES: Partial<Record<Target, string[]>> = {
  rabbitmq: ['rabbitmq-server'],
  nats: ['nats-server'],
  redis: ['redis-server'],
};

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function dpkgVersion(pkg: string): string | undefined {
  try {
    const out = execFileSync('dpkg-query', ['-W', '-f=${Status}\t${Version}', pkg], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const [status, version] = out.split('\t');
    return status?.endsWith('install ok installed') ? version : undefined;
  } catch {
    return undefined;
  }
}

/** Install the Debian packages of the selected peers that are missing (nothing if all are there). */
export function ensurePackages(
  targets: readonly Target[],
  allowInstall: boolean,
  log: (s: string) => void,
): void {
  const wanted = [...new Set(targets.flatMap((t) => PACKAGES[t] ?? []))];
  const missing = wanted.filter((p) => dpkgVersion(p) === undefined);
  if (missing.length === 0) return;
  const command = `apt-get update && apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  if (!allowInstall)
    throw new Error(`missing Debian packages: ${missing.join(', ')} (install with: ${command})`);
  if (process.getuid?.() !== 0) {
    throw new Error(`missing Debian packages: ${missing.join(', ')}; as root run: ${command}`);
  }
  log(`installing ${missing.join(', ')} with apt-get …`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const stdio: ['ignore', 'ignore', 'inherit'] = ['ignore', 'ignore', 'inherit'];
  execFileSync('apt-get', ['update'], { env, stdio });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { env, stdio });
  const still = missing.filter((p) => dpkgVersion(p) === undefined);
  if (still.length) throw new Error(`apt-get did not install ${still.join(', ')}`);
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    cores: list.length,
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    node: process.version,
    loadAverageAtStart: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  };
}

function npmVersion(name: string): string {
  try {
    return (
      JSON.parse(readFileSync(`${ROOT}/node_modules/${name}/package.json`, 'utf8')) as { version: string }
    ).version;
  } catch {
    return '?';
  }
}

/** Versions of what the selected targets use. */
export function versions(targets: readonly Target[]): Record<string, string> {
  const v: Record<string, string> = {};
  const deb = (name: string, pkg: string) => (v[name] = dpkgVersion(pkg) ?? 'not installed');
  if (targets.some((t) => t.startsWith('vela-'))) {
    v['Vela'] = npmVersionOf(ROOT);
    v['@grpc/grpc-js'] = npmVersion('@grpc/grpc-js');
  }
  if (targets.includes('vela-official')) v['rocketmq-client-nodejs'] = npmVersion('rocketmq-client-nodejs');
  if (targets.includes('vela-remoting')) Object.assign(v, remotingVersions(ROOT));
  if (targets.includes('rabbitmq')) {
    deb('RabbitMQ', 'rabbitmq-server');
    deb('Erlang', 'erlang-base');
    v['amqplib'] = npmVersion('amqplib');
  }
  if (targets.includes('nats')) {
    deb('nats-server', 'nats-server');
    v['nats.js'] = npmVersion('nats');
  }
  if (targets.includes('redis')) {
    deb('Redis', 'redis-server');
    v['ioredis'] = npmVersion('ioredis');
  }
  return v;
}

/** A Vela checkout's package version and commit, e.g. `0.1.0 (0cda512)`; '?' if unknown. */
export function npmVersionOf(dir: string): string {
  try {
    const pkg = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8')) as { version: string };
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return `${pkg.version} (${commit})`;
  } catch {
    return '?';
  }
}
