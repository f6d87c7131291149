/**
 * Runs a built interop program (build.ts) against a broker: the connection options and the scenario
 * runs on its command line, one JSON result line per scenario back on stdout.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { ClientProgram } from './build.js';

/** How the program connects: the matrix's modes are command-line options of every program. */
export interface Connection {
  endpoint: string;
  tls?: boolean;
  accessKey?: string;
  secretKey?: string;
  namespace?: string;
}

export interface ScenarioRun {
  scenario: string;
  topic: string;
  group: string;
}

export interface ScenarioResult {
  scenario: string;
  ok: boolean;
  error?: string;
  [field: string]: unknown;
}

export interface ProgramRun {
  results: Map<string, ScenarioResult>;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** The program's stderr and any stray stdout line, for failure messages. */
  output: string;
}

export function connectionArgs(c: Connection): string[] {
  return [
    '--endpoint',
    c.endpoint,
    ...(c.tls ? ['--tls'] : []),
    ...(c.accessKey !== undefined ? ['--access-key', c.accessKey, '--secret-key', c.secretKey ?? ''] : []),
    ...(c.namespace ? ['--namespace', c.namespace] : []),
  ];
}

/**
 * Run the scenarios in one process (they run concurrently inside it). The program stops them itself
 * after `timeoutMs`; it is killed if it does not exit 15 s after that.
 */
export function runProgram(
  program: ClientProgram,
  connection: Connection,
  runs: ScenarioRun[],
  opts: { logDir: string; timeoutMs: number; env?: Record<string, string> },
): Promise<ProgramRun> {
  const launch = program.launch(opts.logDir);
  const args = [
    ...launch.args,
    ...connectionArgs(connection),
    '--timeout-ms',
    String(opts.timeoutMs),
    ...runs.flatMap((r) => [r.scenario, r.topic, r.group]),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(launch.command, args, {
      env: { ...process.env, ...launch.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const results = new Map<string, ScenarioResult>();
    let output = '';
    const keep = (s: string) => {
      output += s;
      if (output.length > 400_000) output = output.slice(-200_000);
    };
    child.stderr.on('data', (d: Buffer) => keep(d.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const r = JSON.parse(line) as ScenarioResult;
        if (typeof r.scenario === 'string') {
          results.set(r.scenario, r);
          return;
        }
      } catch {
        // not a result line
      }
      keep(`(stdout) ${line}\n`);
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs + 15_000);
    child.once('error', (err) => {
      clearTimeout(killer);
      reject(err);
    });
    child.once('close', (exitCode, signal) => {
      clearTimeout(killer);
      resolve({ results, exitCode, signal, output });
    });
  });
}
