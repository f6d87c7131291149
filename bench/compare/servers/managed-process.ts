/**
 * A server process the harness started, and the registry that makes sure every one of them is gone
 * afterwards, also after a failure or Ctrl-C. Stopping sends SIGTERM to the process, waits, then
 * SIGKILLs whatever is left of its whole process tree: RabbitMQ's Erlang helpers put themselves in
 * their own process groups, so a group kill alone would miss them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { CLOCK_TICKS, PAGE_SIZE, descendants, readAll, treeUsage, type ProcStat } from '../proc-stat.js';

const live = new Set<ManagedProcess>();

export class ManagedProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  private exited = false;
  private readonly exitPromise: Promise<void>;
  /** Every process seen in the tree so far (pid + start time, so a reused pid is never killed). */
  private readonly seen = new Map<number, number>();

  constructor(
    readonly name: string,
    command: string,
    args: readonly string[],
    options: { env?: NodeJS.ProcessEnv; cwd?: string; logFile: string; stdoutPipe?: boolean },
  ) {
    const log = openSync(options.logFile, 'a');
    try {
      this.child = spawn(command, args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        // Its own process group: Ctrl-C in the terminal reaches the harness, which stops it in order.
        detached: true,
        stdio: ['ignore', options.stdoutPipe ? 'pipe' : log, log],
      });
    } finally {
      closeSync(log);
    }
    if (this.child.pid === undefined) throw new Error(`could not start ${command}`);
    this.pid = this.child.pid;
    this.exitPromise = new Promise((resolve) => {
      this.child.once('exit', () => {
        this.exited = true;
        resolve();
      });
      this.child.once('error', () => {
        this.exited = true;
        resolve();
      });
    });
    this.remember();
    live.add(this);
  }

  get running(): boolean {
    return !this.exited;
  }

  /** Resolves when the process has exited. */
  get exit(): Promise<void> {
    return this.exitPromise;
  }

  /**
   * The live process tree now; every member is remembered, so one that re-parents to init later
   * (a daemonizing helper) is still found and stopped.
   */
  tree(): ProcStat[] {
    const all = readAll();
    const root = all.find((p) => p.pid === this.pid);
    const own = root && (!this.seen.has(this.pid) || this.seen.get(this.pid) === root.starttime);
    const tree = own ? descendants(all, [this.pid]) : [];
    const ids = new Set(tree.map((p) => p.pid));
    for (const p of all) if (!ids.has(p.pid) && this.seen.get(p.pid) === p.starttime) tree.push(p);
    for (const p of tree) this.seen.set(p.pid, p.starttime);
    return tree.filter((p) => p.state !== 'Z');
  }

  /** CPU time (µs) and RSS (bytes) of the tree now. */
  usage(): { cpuUs: number; rssBytes: number } {
    return treeUsage(this.tree(), CLOCK_TICKS, PAGE_SIZE);
  }

  private remember(): void {
    this.tree();
  }

  /** Processes of this tree still alive (zombies excluded: they are gone but for their parent's reaping). */
  leftovers(): number[] {
    return this.tree().map((p) => p.pid);
  }

  /** SIGTERM, wait up to `graceMs`, then SIGKILL everything left of the tree. */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.running) this.remember();
    if (this.running) signal(this.pid, 'SIGTERM');
    await Promise.race([this.exitPromise, delay(graceMs)]);
    this.killRest();
    const until = Date.now() + 5000;
    while (this.leftovers().length > 0 && Date.now() < until) await delay(50);
    live.delete(this);
    const left = this.leftovers();
    if (left.length) throw new Error(`${this.name}: processes ${left.join(', ')} survived SIGKILL`);
  }

  /** Synchronous SIGKILL of the whole tree (for exit handlers). */
  killRest(): void {
    for (const pid of this.leftovers()) signal(pid, 'SIGKILL');
    if (this.running) signal(this.pid, 'SIGKILL');
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Stop every server still running (in parallel). */
export async function stopAll(): Promise<void> {
  await Promise.allSettled([...live].map((p) => p.stop(5000)));
}

/** Last resort from an exit handler: SIGKILL every tree at once. */
export function killAllNow(): void {
  for (const p of live) p.killRest();
}

/** Poll `probe` until it resolves true, the process dies, or the time is up. */
export async function waitReady(
  proc: ManagedProcess,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  logFile: string,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (!proc.running) throw new Error(`${proc.name} exited during start-up:\n${tail(logFile)}`);
    if (await probe().catch(() => false)) return;
    await delay(200);
  }
  throw new Error(`${proc.name} was not ready after ${timeoutMs} ms:\n${tail(logFile)}`);
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
}
