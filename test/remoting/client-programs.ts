/**
 * The Java and Go client programs the Remoting tests run: built once per set of pinned versions and
 * sources, cached under `.cache/remoting-clients/` (gitignored), and run as child processes that
 * report on stdout with `@@ {json}` lines. A missing toolchain or an unreachable registry fails the
 * build with a message saying what is missing; concurrent test files share one build through a lock.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import { closeAll, startTestBroker, use, type TestBroker } from '../support/harness.js';
import { tempDir } from '../helpers.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '../..');
const cacheRoot = join(root, '.cache', 'remoting-clients');

function hashOf(dir: string, files: string[]): string {
  const h = createHash('sha256');
  for (const f of files.sort()) h.update(f).update(readFileSync(join(dir, f)));
  return h.digest('hex').slice(0, 16);
}

function need(tool: string, args: string[], hint: string): void {
  const r = spawnSync(tool, args, { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new Error(
      `the Remoting client tests need ${tool} (${hint}); running "${tool} ${args.join(' ')}" failed: ${r.error?.message ?? r.stderr}`,
    );
  }
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  what: string,
  hint = '',
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', (err) => rej(new Error(`${what}: ${err.message}`)));
    child.on('exit', (code) =>
      code === 0 ? res() : rej(new Error(`${what} failed (exit ${code})${hint}\n${output.slice(-4000)}`)),
    );
  });
}

/** Remove builds of older versions or sources (`<kind>-<hash>` other than `keep`). */
function pruneOthers(kind: string, keep: string): void {
  for (const name of readdirSync(cacheRoot)) {
    if (name.startsWith(`${kind}-`) && !name.endsWith('.lock') && join(cacheRoot, name) !== keep) {
      rmSync(join(cacheRoot, name), { recursive: true, force: true });
    }
  }
}

async function withLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(cacheRoot, { recursive: true });
  const lock = `${dir}.lock`;
  const until = Date.now() + 600_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() > until) throw new Error(`timed out waiting for the build lock ${lock}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

let javaBuild: Promise<string> | null = null;

/** The Java test program's classpath (built on first use). */
export function javaClasspath(): Promise<string> {
  return (javaBuild ??= (async () => {
    const src = join(here, 'java');
    const files = ['pom.xml', ...readdirSync(join(src, 'src')).map((f) => `src/${f}`)];
    const dir = join(cacheRoot, `java-${hashOf(src, files)}`);
    const classpath = `${join(dir, 'classes')}:${join(dir, 'lib')}/*`;
    if (existsSync(join(dir, 'ok'))) return classpath;
    return withLock(dir, async () => {
      if (existsSync(join(dir, 'ok'))) return classpath;
      need('java', ['-version'], 'a JDK 17+, e.g. apt-get install openjdk-17-jdk-headless');
      need('javac', ['-version'], 'a JDK 17+, e.g. apt-get install openjdk-17-jdk-headless');
      need('mvn', ['-v'], 'Maven, e.g. apt-get install maven');
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(join(dir, 'classes'), { recursive: true });
      await run(
        'mvn',
        ['-q', '-B', 'dependency:copy-dependencies', `-DoutputDirectory=${join(dir, 'lib')}`],
        src,
        'resolving the Java client from Maven Central',
        ' (is Maven Central reachable?)',
      );
      await run(
        'javac',
        [
          '-nowarn',
          '-cp',
          `${join(dir, 'lib')}/*`,
          '-d',
          join(dir, 'classes'),
          ...readdirSync(join(src, 'src')).map((f) => join(src, 'src', f)),
        ],
        src,
        'compiling the Java test program',
      );
      writeFileSync(join(dir, 'ok'), new Date().toISOString());
      pruneOthers('java', dir);
      return classpath;
    });
  })());
}

export interface ProgramEvent {
  event: string;
  [k: string]: unknown;
}

/**
 * Run a client program to completion (or kill it after `timeoutMs`): its `@@` events, in order. A
 * non-zero exit fails with the program's output.
 */
export function runProgram(
  cmd: string,
  args: string[],
  opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<ProgramEvent[]> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd ?? root,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const events: ProgramEvent[] = [];
    let stdout = '';
    let stderr = '';
    let buf = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(
        new Error(
          `${cmd} ${args[args.length - 5] ?? ''} timed out after ${opts.timeoutMs ?? 90_000} ms\n${stdout.slice(-3000)}\n${stderr.slice(-3000)}`,
        ),
      );
    }, opts.timeoutMs ?? 90_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.startsWith('@@ ')) events.push(JSON.parse(line.slice(3)) as ProgramEvent);
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => {
      clearTimeout(timer);
      rej(err);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) res(events);
      else rej(new Error(`${cmd} exited ${code}\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`));
    });
  });
}

/** Run a scenario of the Java program; `home` keeps the client's logs and local offsets out of $HOME. */
export function runJava(home: string, args: string[], timeoutMs = 90_000): Promise<ProgramEvent[]> {
  return runJavaMain(home, 'VelaRemotingClient', args, timeoutMs);
}

/** Run another main class of the Java programs (e.g. VelaDashboardCalls). */
export async function runJavaMain(
  home: string,
  mainClass: string,
  args: string[],
  timeoutMs = 90_000,
): Promise<ProgramEvent[]> {
  return runProgram('java', javaCommandLine(await javaClasspath(), home, mainClass, args), { timeoutMs });
}

/** mqadmin runs at once: more JVMs than cores starve the broker the tests talk to. */
const MQADMIN_PARALLEL = 2;
let mqadminRunning = 0;
const mqadminQueue: (() => void)[] = [];

/**
 * Run the stock mqadmin (rocketmq-tools' MQAdminStartup) and return what it printed. At most two
 * run at a time; callers may start more and they queue.
 */
export async function runMqadmin(home: string, args: string[], timeoutMs = 60_000): Promise<string> {
  if (mqadminRunning >= MQADMIN_PARALLEL) await new Promise<void>((r) => mqadminQueue.push(r));
  mqadminRunning++;
  try {
    return await runMqadminNow(home, args, timeoutMs);
  } finally {
    mqadminRunning--;
    mqadminQueue.shift()?.();
  }
}

async function runMqadminNow(home: string, args: string[], timeoutMs: number): Promise<string> {
  const cp = await javaClasspath();
  return new Promise((res, rej) => {
    const child = spawn(
      'java',
      [
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        `-Duser.home=${home}`,
        '-cp',
        cp,
        'org.apache.rocketmq.tools.command.MQAdminStartup',
        ...args,
      ],
      { cwd: home, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(new Error(`mqadmin ${args[0]} timed out\n${out}`));
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      rej(err);
    });
    child.on('exit', () => {
      clearTimeout(timer);
      res(out);
    });
  });
}

let goBuild: Promise<string> | null = null;

/** The Go test program's binary (built on first use). */
export function goBinary(): Promise<string> {
  return (goBuild ??= (async () => {
    const src = join(here, 'go');
    const dir = join(cacheRoot, `go-${hashOf(src, ['go.mod', 'go.sum', 'main.go'])}`);
    const bin = join(dir, 'vela-go-client');
    if (existsSync(join(dir, 'ok'))) return bin;
    return withLock(dir, async () => {
      if (existsSync(join(dir, 'ok'))) return bin;
      need('go', ['version'], 'Go 1.21+, e.g. apt-get install golang-go');
      mkdirSync(dir, { recursive: true });
      await run(
        'go',
        ['build', '-o', bin, '.'],
        src,
        'building the Go test program',
        ' (is the Go module proxy reachable?)',
      );
      writeFileSync(join(dir, 'ok'), new Date().toISOString());
      pruneOthers('go', dir);
      return bin;
    });
  })());
}

/** Run a scenario of the Go program; `home` keeps the client's files out of $HOME. */
export async function runGo(home: string, args: string[], timeoutMs = 90_000): Promise<ProgramEvent[]> {
  return runProgram(await goBinary(), args, { timeoutMs, env: { HOME: home } });
}

/** A client program that runs until stopped: its events as they come. */
export interface RunningProgram {
  readonly events: ProgramEvent[];
  /** The first event matching `pred`, waiting for it (fails if the program exits first). */
  next(pred: (e: ProgramEvent) => boolean, timeoutMs?: number): Promise<ProgramEvent>;
  /** Close its stdin (the program's cue to shut down) and wait for it to exit. */
  stop(): Promise<void>;
}

/** Start a long-running scenario of the Java program (one that runs until its stdin closes). */
export async function startJava(home: string, args: string[]): Promise<RunningProgram> {
  const child = spawn('java', javaCommandLine(await javaClasspath(), home, 'VelaRemotingClient', args), {
    cwd: root,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const events: ProgramEvent[] = [];
  const waiters = new Set<() => void>();
  let output = '';
  let buf = '';
  let exited = false;
  const exit = new Promise<void>((r) =>
    child.on('exit', () => {
      exited = true;
      for (const w of waiters) w();
      r();
    }),
  );
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.startsWith('@@ ')) events.push(JSON.parse(line.slice(3)) as ProgramEvent);
    }
    for (const w of waiters) w();
  });
  return {
    events,
    next(pred, timeoutMs = 90_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const e = events.find(pred);
          if (e) done(() => resolve(e));
          else if (exited) done(() => reject(new Error(`the Java program exited\n${output.slice(-4000)}`)));
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`no such event within ${timeoutMs} ms\n${output.slice(-4000)}`))),
          timeoutMs,
        );
        const done = (fn: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          fn();
        };
        waiters.add(check);
        check();
      });
    },
    async stop() {
      if (!exited) child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/**
 * What every Java-client test file starts with: the Java programs built (before any test's clock
 * starts), one broker, and a scratch home for the Java clients; all closed after the file.
 */
export function javaBrokerSuite(
  homePrefix: string,
  options?: Parameters<typeof startTestBroker>[0],
): { readonly broker: TestBroker; readonly home: string; ns(): string } {
  let b: TestBroker | undefined;
  const home = tempDir(homePrefix);
  before(async () => {
    await javaClasspath();
    b = use(await startTestBroker(options));
  });
  after(async () => {
    await closeAll();
    home.cleanup();
  });
  const broker = (): TestBroker => {
    if (!b) throw new Error('the suite broker is not started yet (use it inside tests)');
    return b;
  };
  return {
    get broker() {
      return broker();
    },
    home: home.path,
    ns: () => `127.0.0.1:${broker().running.remotingPort}`,
  };
}

/** The JVM flags of every short-lived test program (small stacks, quick start-up), then the program. */
function javaCommandLine(classpath: string, home: string, mainClass: string, args: string[]): string[] {
  return [
    '-Xss512k',
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    `-Duser.home=${home}`,
    '-Drocketmq.client.logLevel=WARN',
    '-cp',
    classpath,
    mainClass,
    ...args,
  ];
}
