/**
 * Builds the interop programs of the official RocketMQ 5.x clients (test/interop/{java,go,python})
 * from their pinned versions, once: each build lives under `.interop-cache/<language>-<version>-<hash>`,
 * keyed by the pinned-version files, the program's sources and the toolchain's version, so a later
 * test run (or another test file) reuses it. A missing toolchain or a registry that cannot be reached
 * fails with a message saying so; nothing is skipped.
 *
 * Also a command: `node --import tsx test/interop/official/build.ts [java] [go] [python]` (what
 * `npm run interop:build` and `.ci/run` use).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Language = 'java' | 'go' | 'python';
export const LANGUAGES: readonly Language[] = ['java', 'go', 'python'];

/** How to start a built program: the command, its leading arguments, and the environment it needs. */
export interface ClientProgram {
  language: Language;
  /** The official client's pinned version. */
  clientVersion: string;
  /** The command line and environment of a run whose client logs go to `logDir`. */
  launch(logDir: string): { command: string; args: string[]; env: Record<string, string> };
}

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const INTEROP = join(ROOT, 'test', 'interop');
export const CACHE_DIR = join(ROOT, '.interop-cache');

/** A build step failed: its command, the reason and the tail of its output. */
export class InteropBuildError extends Error {}

interface Run {
  code: number;
  out: string;
}

function run(
  command: string,
  args: string[],
  opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: opts.cwd ?? ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const keep = (d: Buffer) => {
      out += d.toString();
      if (out.length > 200_000) out = out.slice(-100_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'ENOENT'
          ? new InteropBuildError(
              `\`${command}\` was not found on PATH. The interop tests need Java 17+ with Maven, Go and ` +
                'Python 3 with venv (bash .ci/run installs them; see docs/compatibility.md).',
            )
          : err,
      );
    });
    child.once('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

async function must(what: string, command: string, args: string[], opts: Parameters<typeof run>[2] = {}) {
  const r = await run(command, args, opts);
  if (r.code !== 0) {
    throw new InteropBuildError(
      `${what} failed (${command} ${args.join(' ')} exited ${r.code}). If the output below shows a ` +
        `download error, the package registry cannot be reached.\n${r.out.slice(-4000)}`,
    );
  }
  return r.out;
}

/** Every file under `dir` (sorted, relative), skipping build outputs. */
function files(dir: string, skip: Set<string>): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (skip.has(name)) continue;
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(dir);
  return out;
}

function hashOf(dir: string, toolchain: string): string {
  const h = createHash('sha256').update(toolchain);
  for (const f of files(dir, new Set(['target', '__pycache__', '.venv']))) {
    h.update(relative(dir, f)).update('\0').update(readFileSync(f)).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

/**
 * Build into a fresh directory and move it into place, so an interrupted build never looks finished;
 * when another process finished the same build first, its copy is used.
 */
async function cached(
  language: Language,
  key: string,
  build: (dir: string) => Promise<void>,
): Promise<string> {
  const final = join(CACHE_DIR, key);
  if (existsSync(join(final, '.built'))) return final;
  // Builds of other versions or sources of this language are stale now.
  if (existsSync(CACHE_DIR)) {
    for (const name of readdirSync(CACHE_DIR)) {
      if (name.startsWith(`${language}-`) && !name.includes('.tmp-')) {
        rmSync(join(CACHE_DIR, name), { recursive: true, force: true });
      }
    }
  }
  mkdirSync(CACHE_DIR, { recursive: true });
  const tmp = join(CACHE_DIR, `${key}.tmp-${process.pid}-${Date.now()}`);
  mkdirSync(tmp);
  try {
    await build(tmp);
    mkdirSync(join(tmp, '.built'));
    try {
      renameSync(tmp, final);
    } catch (err) {
      if (!existsSync(join(final, '.built'))) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return final;
}

function pinned(file: string, pattern: RegExp, what: string): string {
  const m = pattern.exec(readFileSync(file, 'utf8'));
  if (!m?.[1]) throw new InteropBuildError(`cannot find the pinned ${what} version in ${file}`);
  return m[1];
}

async function buildJava(): Promise<ClientProgram> {
  const src = join(INTEROP, 'java');
  const version = pinned(join(src, 'pom.xml'), /<rocketmq\.client\.version>([^<]+)</, 'rocketmq-client-java');
  // Only the version numbers: anything else in the output (Maven's colour codes, a JVM warning on
  // stderr) can differ between the build step and a test process, and a different key makes a test
  // process rebuild — deleting the build another suite is running from.
  const javaVersion = /version "([^"]+)"/.exec(await must('java -version', 'java', ['-version']))?.[1] ?? '';
  const mavenVersion = /Apache Maven (\S+)/.exec(await must('mvn -v', 'mvn', ['-B', '-v']))?.[1] ?? '';
  const dir = await cached(
    'java',
    `java-${version}-${hashOf(src, `java ${javaVersion} maven ${mavenVersion}`)}`,
    async (out) => {
      cpSync(join(src, 'pom.xml'), join(out, 'pom.xml'));
      cpSync(join(src, 'src'), join(out, 'src'), { recursive: true });
      await must(
        'Building the Java interop program with Maven',
        'mvn',
        [
          '-B',
          '-q',
          `-Dmaven.repo.local=${join(CACHE_DIR, 'm2')}`,
          'package',
          'dependency:copy-dependencies',
          '-DincludeScope=runtime',
        ],
        { cwd: out },
      );
    },
  );
  return {
    language: 'java',
    clientVersion: version,
    launch: (logDir) => ({
      command: 'java',
      args: [
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        `-Drocketmq.log.root=${logDir}`,
        '-cp',
        `${join(dir, 'target', 'classes')}:${join(dir, 'target', 'dependency', '*')}`,
        'vela.interop.Main',
      ],
      env: {},
    }),
  };
}

async function buildGo(): Promise<ClientProgram> {
  const src = join(INTEROP, 'go');
  const version = pinned(join(src, 'go.mod'), /apache\/rocketmq-clients\/golang\/v5 (v[^\s]+)/, 'golang/v5');
  const goVersion = (await must('go version', 'go', ['version'])).trim();
  const dir = await cached('go', `go-${version}-${hashOf(src, goVersion)}`, async (out) => {
    await must(
      'Building the Go interop program',
      'go',
      ['build', '-mod=readonly', '-buildvcs=false', '-o', join(out, 'interop-go'), '.'],
      {
        cwd: src,
      },
    );
  });
  return {
    language: 'go',
    clientVersion: version,
    launch: (logDir) => ({
      command: join(dir, 'interop-go'),
      args: [],
      env: { 'rocketmq.client.logRoot': logDir },
    }),
  };
}

async function buildPython(): Promise<ClientProgram> {
  const src = join(INTEROP, 'python');
  const version = pinned(
    join(src, 'requirements.txt'),
    /^rocketmq-python-client==(\S+)/m,
    'rocketmq-python-client',
  );
  const pyVersion = (await must('python3 --version', 'python3', ['--version'])).trim();
  const dir = await cached('python', `python-${version}-${hashOf(src, pyVersion)}`, async (out) => {
    await must('Creating the Python venv (Debian: apt-get install python3-venv)', 'python3', [
      '-m',
      'venv',
      join(out, 'venv'),
    ]);
    await must('Installing the pinned Python client with pip', join(out, 'venv', 'bin', 'pip'), [
      'install',
      '--no-input',
      '--disable-pip-version-check',
      '--only-binary=:all:',
      '-r',
      join(src, 'requirements.txt'),
    ]);
  });
  return {
    language: 'python',
    clientVersion: version,
    launch: (logDir) => ({
      command: join(dir, 'venv', 'bin', 'python'),
      args: ['-u', join(src, 'interop_client.py')],
      // The Python client logs to ~/logs/rocketmq_python: give it a home of its own.
      env: { HOME: logDir, PYTHONDONTWRITEBYTECODE: '1' },
    }),
  };
}

const builders: Record<Language, () => Promise<ClientProgram>> = {
  java: buildJava,
  go: buildGo,
  python: buildPython,
};
const builds = new Map<Language, Promise<ClientProgram>>();

/** The built program for a language (built on first use in this process, then from the cache). */
export function clientProgram(language: Language): Promise<ClientProgram> {
  let p = builds.get(language);
  if (!p) {
    p = builders[language]();
    builds.set(language, p);
  }
  return p;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const wanted = (process.argv.length > 2 ? process.argv.slice(2) : LANGUAGES) as Language[];
  for (const lang of wanted) {
    if (!LANGUAGES.includes(lang)) {
      console.error(`unknown language ${lang} (expected ${LANGUAGES.join(', ')})`);
      process.exit(2);
    }
    const t = Date.now();
    try {
      const p = await clientProgram(lang);
      console.log(`interop: ${lang} client ${p.clientVersion} ready (${Date.now() - t} ms)`);
    } catch (err) {
      console.error(`interop: ${lang}: ${(err as Error).message}`);
      process.exit(1);
    }
  }
}
