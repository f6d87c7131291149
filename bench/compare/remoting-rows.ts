/**
 * The Remoting rows of `npm run bench:compare`: Vela's broker (the same child, sync flush) driven over
 * its Remoting port by the Java rocketmq-client 5.5.0 — the Remoting tests' Java program
 * (test/remoting/java/src/VelaCompareClient.java, built once under .cache/). It runs W1a, W1b and
 * W2 (the workloads a Remoting producer and push consumer can run as the other clients do) and speaks
 * the harness's client protocol (BEGIN / END / RESULT), so its figures sit beside the gRPC ones.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { javaClasspath } from '../../test/remoting/client-programs.js';
import type { RunningServer } from './servers/server.js';
import { startVela, type BrokerDebug } from './servers/vela.js';
import type { Workload, WorkloadSpec } from './types.js';

export const REMOTING_TARGET = 'vela-remoting';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The workloads of the Remoting row. */
export function remotingWorkloads(selected: readonly Workload[]): Workload[] {
  return selected.filter((w) => w === 'w1a' || w === 'w1b' || w === 'w2');
}

let classpath: string | undefined;

/**
 * Vela with its Remoting port; `port` is the Remoting port. Builds (or finds) the Java program
 * first, so a missing JDK or Maven fails here, as the server not starting, with a clear message.
 */
export async function startVelaRemoting(debug: BrokerDebug = {}, root?: string): Promise<RunningServer> {
  classpath = await javaClasspath();
  return startVela({
    label: root ? 'remoting-baseline' : 'remoting',
    remoting: true,
    ...debug,
    ...(root ? { root } : {}),
  });
}

/** The client child of a Remoting workload: the Java program and its arguments. */
export function remotingClientCommand(spec: WorkloadSpec): [string, string[]] {
  if (!classpath) throw new Error('the Remoting server was not started');
  return [
    'java',
    [
      '-XX:+UseSerialGC',
      '-Drocketmq.client.logLevel=WARN',
      `-Duser.home=${join(ROOT, '.cache', 'remoting-clients', 'bench-home')}`,
      '-cp',
      classpath,
      'VelaCompareClient',
      `127.0.0.1:${spec.port}`,
      spec.workload,
      spec.queue,
      String(spec.count),
      String(spec.inflight),
      String(spec.warmup),
      String(spec.timeLimitMs),
      String(spec.bodySize),
    ],
  ];
}

/** The Java client's version (pinned in the program's pom.xml) and the JVM's. */
export function remotingVersions(root: string): Record<string, string> {
  const pom = readFileSync(join(root, 'test', 'remoting', 'java', 'pom.xml'), 'utf8');
  const client =
    /<artifactId>rocketmq-client<\/artifactId>\s*<version>([^<]+)<\/version>/.exec(pom)?.[1] ?? '?';
  const r = spawnSync('java', ['-version'], { encoding: 'utf8' });
  const jvm = r.error ? 'not installed' : (/version "([^"]+)"/.exec(r.stderr)?.[1] ?? '?');
  return { 'Java rocketmq-client': client, JVM: jvm };
}
